"""Browser fixtures: a headless Chromium per module and one running demo for the whole session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.acceptance.demo_process import ROOT, RunningDemo, palaestra_demo

#: Screenshots land here (git-ignored); CI keeps the folder as an artifact.
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Browser]:
    """Debian's Chromium driven by Playwright (whose own browser downloads are never used).

    One per module (a second to start): Playwright's event loop runs in the process while it
    is open, where ``asyncio.run`` fails, and the worker that plays the demo's group goes on
    to other modules after it."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def demo(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[RunningDemo]:
    """The demo, up, with the flaky agent already failing some pings (fast health cadence)."""
    one_demo_per_tier(request.session)
    folder = tmp_path_factory.mktemp("web") / "demo-data"
    with palaestra_demo(folder, health_scale=0.005) as running:
        running.wait_ready()
        yield running


def one_demo_per_tier(session: pytest.Session) -> None:
    """Fails when pytest-xdist did not group the demo's tests under ``--dist loadgroup``
    (it marks each one's node id with its group): each worker would start a demo of its
    own, as with pytest 9.2 (pytest-dev/pytest-xdist#1386)."""
    if not getattr(session.config.option, "loadgroup", False):  # set in xdist's workers
        return
    ungrouped = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid
    ]
    if ungrouped:
        pytest.fail(
            "pytest-xdist did not group the demo's tests under --dist loadgroup (a pytest "
            f"newer than pyproject.toml allows?): {ungrouped[:3]}"
        )


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` every test of the session's demo runs on one worker: one
    demo (and its agents) for the whole tier, not one per worker."""
    for item in items:
        if "demo" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("demo"))
