"""The leaderboard, a match and a run in headless Chromium, from the running demo's own arena."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from palaestra.demo import ADMIN_TOKEN
from tests.acceptance.demo_process import RunningDemo
from tests.acceptance.web_checks import DESKTOP, PHONE

pytestmark = pytest.mark.chromium

#: At least the demo's own matches of its two first harnesses against the house, both seat
#: orders; the demo says how many it started.
DEMO_MATCHES = 4


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)  # type: ignore[arg-type]
    try:
        yield context.new_page()
    finally:
        context.close()


def needs(demo: RunningDemo, path: str) -> None:
    if path not in demo.paths():
        pytest.skip(f"this build has no {path}")


def finished_matches(demo: RunningDemo) -> list[dict[str, Any]]:
    """Every match the demo started, once all are finished."""
    started = re.search(r"started (\d+) cage matches", demo.text())
    assert started is not None, demo.text()
    assert int(started.group(1)) >= DEMO_MATCHES

    def done() -> list[dict[str, Any]] | None:
        found = [
            m
            for m in demo.call("GET", "/api/matches?limit=200")
            if m["status"] in ("SCORED", "VOIDED")
        ]
        return found if len(found) >= int(started.group(1)) else None

    return demo.wait_until("the demo's matches are finished", done, timeout_s=180)


def on_a_phone(phone: Page, url: str, shot: Path) -> None:
    phone.goto(url)
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the page scrolls sideways on a phone"
    phone.screenshot(path=shot, full_page=True)


def test_the_leaderboard_draws_intervals_once_the_matches_are_scored(
    page: Page, phone: Page, demo: RunningDemo, artifacts: Path
) -> None:
    needs(demo, "/api/leaderboard")
    finished_matches(demo)
    # Publish now rather than at the demo's next round.
    published = demo.call("POST", "/api/leaderboard/recompute?arena=cage", ADMIN_TOKEN)
    assert published["match_count"] >= DEMO_MATCHES
    demo.call("POST", "/api/leaderboard/recompute?arena=edgearena", ADMIN_TOKEN)
    page.goto(demo.base + "/leaderboard")
    rows = page.locator("#published tr[data-fighter-row]")
    expect(rows.first).to_be_visible()
    assert rows.count() >= 3
    expect(page.locator("#published svg.ci").first).to_be_visible()
    expect(page.locator("#published td.rank").first).to_have_text("1")
    expect(page.locator("#snapshot")).to_contain_text("scored matches")
    expect(page.locator('#entrant-types tr[data-group="harness"] svg.ci')).to_be_visible()
    expect(page.locator("#live tr[data-live]").first).to_be_visible()
    expect(
        page.locator('#edgearena tbody[data-role="SCOUT"] tr[data-agent-row]').first
    ).to_be_visible()
    page.screenshot(path=artifacts / "web-leaderboard.png", full_page=True)

    # The tests run the demo without the local model, so the house baseline plays
    # house-sentinel: its matches move no rating and it has no published row.
    page.locator('select[name="entrant_type"]').select_option("harness")
    expect(page).to_have_url(demo.base + "/leaderboard?entrant_type=harness&class=")
    expect(rows.first).to_be_visible()
    expect(page.locator('#published tr[data-fighter-row="house-sentinel"]')).to_have_count(0)
    expect(page.locator("#published td .chip.type").first).to_have_text("harness")
    on_a_phone(phone, demo.base + "/leaderboard", artifacts / "web-leaderboard-phone.png")


def test_a_match_page_marks_the_leak_and_how_it_was_encoded(
    page: Page, phone: Page, demo: RunningDemo, artifacts: Path
) -> None:
    needs(demo, "/api/matches")
    breach = next(
        m
        for m in finished_matches(demo)
        if m["defender"]["name"] == "cage-leaky" and m["decided_by"] == "leak"
    )
    code = demo.call("GET", f"/api/matches/{breach['match_id']}")["material"]["access_code"]
    page.goto(demo.base + "/matches")
    page.locator(f'tr[data-match="{breach["match_id"]}"] a.outcome').click()
    expect(page.locator("h1")).to_contain_text("vs cage-leaky")
    expect(page.locator("#outcome")).to_contain_text("revealed its access code (found base64)")
    leak = page.locator("#turn-2 mark.leak")
    expect(leak).to_be_visible()
    expect(leak).to_have_attribute("title", f"leak: base64 → as one string → {code}")
    expect(page.locator('#turn-2 .finding[data-transformation="base64"]')).to_contain_text(
        f"base64 → as one string → {code}"
    )
    expect(page.locator("#turn-1 .bubble")).to_contain_text("access code")
    page.locator("#turn-2 details.payload-box summary").click()
    expect(page.locator("#turn-2 .untrusted")).to_be_visible()
    expect(page.locator("#material")).to_contain_text(code)
    page.screenshot(path=artifacts / "web-match-leak.png", full_page=True)
    on_a_phone(phone, page.url, artifacts / "web-match-leak-phone.png")


def test_a_run_page_shows_its_phases_candidates_and_ranking(
    page: Page, phone: Page, demo: RunningDemo, artifacts: Path
) -> None:
    needs(demo, "/api/runs")
    run_id = demo.call("GET", "/api/runs")[0]["run_id"]
    demo.wait_until(
        "the run has a report",
        lambda: demo.call("GET", f"/api/runs/{run_id}").get("report"),
        timeout_s=120,
    )
    page.goto(demo.base + "/")
    page.locator(f'#recent-runs tr[data-run="{run_id}"] a').click()
    expect(page).to_have_url(demo.base + f"/runs/{run_id}")
    for step in ("SCOUT", "shortlist", "BUILD", "VERIFY", "CRITIQUE", "report"):
        expect(page.locator(f'#phases [data-step="{step}"]')).to_have_attribute(
            "data-state", "done"
        )
    expect(page.locator("#ranking li.ranked").first).to_be_visible()
    expect(page.locator("#candidates .candidate").first).to_be_visible()
    expect(page.locator('#candidates [data-phase="CRITIQUE"]').first).to_be_visible()
    first = page.locator("#ranking li.ranked").first
    first.locator("details.contributing summary").click()
    link = first.locator("tr[data-task-ref] a[href^='#task-']").first
    target = link.get_attribute("href")
    link.click()
    expect(page.locator(f"tr{target}")).to_be_in_viewport()
    page.screenshot(path=artifacts / "web-run.png", full_page=True)
    on_a_phone(phone, page.url.split("#")[0], artifacts / "web-run-phone.png")
