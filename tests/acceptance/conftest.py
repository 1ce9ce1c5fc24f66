"""Browser fixtures: one headless Chromium and one running demo for the whole session."""

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


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Browser]:
    """Debian's Chromium driven by Playwright (whose own browser downloads are never used)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[RunningDemo]:
    """The demo, up, with the flaky agent already failing some pings (fast health cadence)."""
    folder = tmp_path_factory.mktemp("web") / "demo-data"
    with palaestra_demo(folder, health_scale=0.005) as running:
        running.wait_ready()
        yield running


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
