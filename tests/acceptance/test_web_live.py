"""Live pages in headless Chromium, against the running demo: a list shows a run started
meanwhile without a reload, keeps what it shows while it is answered 304, and stops asking
while its tab is hidden."""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Response, expect

from tests.acceptance.demo_process import RunningDemo
from tests.acceptance.web_checks import DESKTOP

pytestmark = pytest.mark.chromium

#: The smallest run the launchpad takes: it finishes soon and leaves the demo's own alone.
SIZES = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A tab of its own, in a desktop window."""
    with contextlib.closing(browser.new_context(viewport=DESKTOP)) as context:  # type: ignore[arg-type]
        yield context.new_page()


def polls(page: Page, path: str) -> list[int]:
    """The statuses of the live part's polls of ``path``, as they come."""
    seen: list[int] = []

    def answered(response: Response) -> None:
        request = response.request
        if request.url.endswith(path) and request.headers.get("palaestra-live") == "1":
            seen.append(response.status)

    page.on("response", answered)
    return seen


def test_a_list_shows_a_run_started_meanwhile_without_a_reload(
    page: Page, demo: RunningDemo, artifacts: Path
) -> None:
    if "/api/runs" not in demo.paths():
        pytest.skip("this build has no runs")
    seen = polls(page, "/runs")
    page.goto(demo.base + "/runs")
    live = page.locator("#runs-live")
    expect(live).to_have_attribute("hx-trigger", re.compile(r"^every \d+s"))
    page.evaluate("window.loadedOnce = true")  # gone if the page were loaded again
    rows = live.locator("tr[data-run]").count()
    deadline = time.monotonic() + 20
    while 304 not in seen and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    assert 304 in seen, seen  # nothing changed: answered 304 ...
    expect(live.locator("tr[data-run]")).to_have_count(rows)  # ... and the rows stay

    goal = f"A live list, take {uuid.uuid4().hex[:6]}"
    run_id = demo.call("POST", "/api/runs", body={"goal": goal, "sizes": SIZES})["run_id"]
    row = page.locator(f'#runs-live tr[data-run="{run_id}"]')
    expect(row).to_contain_text(goal, timeout=15_000)
    # how long it took, or has been going (the demo's agents answer at once)
    expect(row.locator("td").last).to_have_text(re.compile(r"^\d+ (s|min)( so far)?$"))
    assert page.evaluate("window.loadedOnce") is True
    assert 200 in seen
    page.screenshot(path=artifacts / "web-runs-live.png", full_page=True)

    page.goto(demo.base + "/")
    page.evaluate("window.loadedOnce = true")
    expect(page.locator(f'#recent-runs tr[data-run="{run_id}"]')).to_be_visible()
    assert page.evaluate("window.loadedOnce") is True


def test_a_hidden_tab_stops_asking_and_asks_at_once_when_shown(
    page: Page, demo: RunningDemo
) -> None:
    seen = polls(page, "/matches")
    page.goto(demo.base + "/matches")
    expect(page.locator("#matches-live")).to_have_attribute("hx-trigger", re.compile("every"))
    page.wait_for_timeout(2500)
    assert seen, "the live part never asked"
    page.evaluate(
        """() => {
            Object.defineProperty(document, "hidden", {value: true, configurable: true});
            document.dispatchEvent(new Event("visibilitychange"));
        }"""
    )
    page.wait_for_timeout(300)
    asked = len(seen)
    page.wait_for_timeout(5000)
    assert len(seen) == asked, "a hidden tab kept asking"
    page.evaluate(
        """() => {
            Object.defineProperty(document, "hidden", {value: false, configurable: true});
            document.dispatchEvent(new Event("visibilitychange"));
        }"""
    )
    page.wait_for_timeout(800)  # well within the polling period: the wake-up asked
    assert len(seen) > asked
    expect(page.locator("#matches-live")).to_be_visible()


def test_a_running_tasks_seconds_are_counted_between_polls(page: Page, demo: RunningDemo) -> None:
    """The server draws "12 s of 90 s" once; live.js counts on from there each second, by
    the page's own clock (the server's need not agree), and stops at the deadline."""
    page.goto(demo.base + "/matches")
    page.evaluate(
        """() => {
            const at = 1000000;
            for (const [id, ran] of [["counted", 12], ["late", 89]]) {
                const span = document.createElement("span");
                span.id = id;
                span.className = "elapsed";
                span.dataset.sent = String(at - ran);
                span.dataset.deadline = String(at - ran + 90);
                span.dataset.now = String(at);
                span.textContent = ran + " s of 90 s";
                document.querySelector("h1").after(span);
            }
        }"""
    )
    expect(page.locator("#counted")).to_have_text(re.compile(r"^1[3-5] s of 90 s$"), timeout=4000)
    page.wait_for_timeout(2500)
    expect(page.locator("#late")).to_have_text("90 s of 90 s")  # not past its deadline
