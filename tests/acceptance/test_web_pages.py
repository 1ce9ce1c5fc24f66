"""The public pages in headless Chromium, against the running demo."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from palaestra.demo import LINEUP
from tests.acceptance.demo_process import RunningDemo
from tests.acceptance.web_checks import DESKTOP, PHONE, assert_fits_phone, serious_violations

pytestmark = pytest.mark.chromium


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


def agent_id(demo: RunningDemo, name: str) -> str:
    found: str = demo.agents()[name]["agent_id"]
    return found


def test_the_overview_and_the_agents_list(page: Page, demo: RunningDemo, artifacts: Path) -> None:
    page.goto(demo.base + "/")
    expect(page.locator("h1")).to_have_text("The arena")
    expect(page.locator(".stats")).to_contain_text("edgearena agents")
    expect(page.locator(".by-status")).to_contain_text("ACTIVE")
    expect(page.locator("#activity li").first).to_be_visible()
    if "/api/runs" in demo.paths():
        expect(page.locator("#recent-runs tr[data-run]").first).to_be_visible()
    page.screenshot(path=artifacts / "web-overview.png", full_page=True)

    page.get_by_role("navigation").get_by_role("link", name="Agents").click()
    expect(page).to_have_url(demo.base + "/agents")
    for entry in LINEUP:
        row = "data-agent" if entry.role is not None else "data-fighter"
        for name in [seat.name for seat in entry.seats] or [entry.name]:
            expect(page.locator(f'tr[{row}="{name}"]')).to_have_count(1)
    expect(page.locator('tr[data-agent="scout-sloppy"]')).to_contain_text("PENDING")
    expect(page.locator('tr[data-agent="scout-atlas"]')).to_contain_text("ACTIVE")
    expect(page.locator('tr[data-fighter="house-sentinel"]')).to_contain_text("house")
    page.screenshot(path=artifacts / "web-agents.png", full_page=True)


def test_the_flaky_agent_shows_why_it_failed(
    page: Page, phone: Page, demo: RunningDemo, artifacts: Path
) -> None:
    flaky = agent_id(demo, "scout-beacon")
    demo.wait_until(
        "the flaky agent has failed a ping",
        lambda: any(
            row["kind"] == "ping" and row["outcome"] == "failure"
            for row in demo.call("GET", f"/api/agents/{flaky}/history")
        ),
        timeout_s=60,
    )
    page.goto(demo.base + "/agents")
    page.get_by_role("link", name="scout-beacon").click()
    expect(page.locator("h1")).to_have_text("scout-beacon")
    # The public page names the failure's kind and status, never what the agent sent.
    expect(page.locator("#failures")).to_contain_text("External agent responded with 503")
    expect(page.locator("#failures")).not_to_contain_text("flaky on purpose")
    expect(page.locator("#latency svg.chart.wide .pt-fail").first).to_be_attached()
    expect(page.locator("#latency svg.chart.wide .pt-ok").first).to_be_attached()
    expect(page.locator("#status svg.strip rect").first).to_be_attached()
    expect(page.locator("#wizard")).to_have_attribute("data-state", "passed")
    page.screenshot(path=artifacts / "web-agent-flaky.png", full_page=True)

    phone.goto(page.url)
    expect(phone.locator("#latency svg.chart.narrow")).to_be_visible()
    expect(phone.locator("#latency svg.chart.wide")).to_be_hidden()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the page scrolls sideways on a phone"
    phone.screenshot(path=artifacts / "web-agent-flaky-phone.png", full_page=True)


def test_the_sloppy_agent_shows_its_failed_wizard(
    page: Page, demo: RunningDemo, artifacts: Path
) -> None:
    page.goto(demo.base + f"/agents/{agent_id(demo, 'scout-sloppy')}")
    wizard = page.locator("#wizard")
    expect(wizard).to_have_attribute("data-state", "failed")
    expect(wizard.locator('[data-check="simulation:required-fields"]')).to_have_class("check fail")
    required = wizard.locator('[data-check="simulation:required-fields"]')
    expect(required).to_contain_text("Validation failed")  # the public form of the reason
    forged = wizard.locator('[data-check="tampered-signature"]')
    expect(forged).to_have_class("check warn")  # advisory: a warning, not a failure
    expect(forged).to_contain_text("accepts forged signatures")
    expect(wizard.locator('[data-check="handshake"]')).to_have_class("check pass")
    # The two required-fields checks; the forged signature is a warning, not a failure.
    expect(page.locator("#failures tr.failure")).to_have_count(2)
    page.screenshot(path=artifacts / "web-agent-sloppy.png", full_page=True)


def test_the_plain_scout_is_admitted_with_its_warning_shown(
    page: Page, demo: RunningDemo, artifacts: Path
) -> None:
    page.goto(demo.base + "/agents")
    row = page.locator('tr[data-agent="scout-plain"]')
    expect(row).to_contain_text("ACTIVE")
    expect(row.locator(".warn-chip")).to_have_text("1 warning")
    row.get_by_role("link", name="scout-plain").click()
    expect(page.locator("[data-warning]").first).to_contain_text("accepts forged signatures")
    wizard = page.locator("#wizard")
    expect(wizard).to_have_attribute("data-state", "passed")
    expect(wizard).to_contain_text("Admitted with 1 warning")
    expect(wizard.locator('[data-check="tampered-signature"]')).to_have_class("check warn")
    page.screenshot(path=artifacts / "web-agent-plain.png", full_page=True)


def test_a_fighter_profile(page: Page, demo: RunningDemo, artifacts: Path) -> None:
    page.goto(demo.base + "/agents#fighters")
    page.get_by_role("link", name="cage-baseline").click()
    expect(page.locator("h1")).to_have_text("cage-baseline")
    expect(page.locator(".facts")).to_contain_text("harness")
    expect(page.locator(".facts")).to_contain_text("baseline-cage-fighter")
    if "/api/matches" in demo.paths():
        # The demo's two matches, and any the matchmaker has started since.
        expect(page.locator("#matches tr[data-match]").nth(1)).to_be_visible()
    page.screenshot(path=artifacts / "web-fighter.png", full_page=True)


def test_every_navigation_entry_opens_a_page(page: Page, demo: RunningDemo) -> None:
    page.goto(demo.base + "/")
    labels = ["Overview", "Agents", "Runs", "Matches", "Leaderboard", "Register"]
    for label in labels:
        page.get_by_role("navigation").get_by_role("link", name=label).click()
        expect(page.locator("h1")).to_be_visible()
        link = page.get_by_role("navigation").get_by_role("link", name=label)
        expect(link).to_have_attribute("aria-current", "page")
    page.get_by_role("navigation").get_by_role("link", name="API").click()
    expect(page).to_have_title("Palaestra - Swagger UI")


def test_every_page_fits_a_phone_with_its_navigation_in_reach(
    phone: Page, demo: RunningDemo, artifacts: Path
) -> None:
    """At 390 px nothing is wider than the screen (wide tables scroll inside their card) and
    every navigation link can be seen and tapped without scrolling sideways."""
    phone.goto(demo.base + "/agents")
    fighter = phone.get_by_role("link", name="cage-baseline").get_attribute("href")
    paths = ["/", "/agents", "/runs", "/matches", "/leaderboard", "/register", "/owner/token"]
    paths.append("/signin")
    paths.append(str(fighter))
    paths.append(f"/agents/{agent_id(demo, 'scout-atlas')}")
    for path in paths:
        assert_fits_phone(phone, demo.base + path, path)
    phone.screenshot(path=artifacts / "web-phone-agent.png", full_page=True)


def test_no_page_has_a_serious_accessibility_violation(page: Page, demo: RunningDemo) -> None:
    """Every page, in the light and the dark colour scheme, scanned by axe-core (WCAG 2.1
    A and AA rules and its best practices) in Chromium: no violation rated serious or
    critical."""
    page.goto(demo.base + "/agents")
    fighter = page.get_by_role("link", name="cage-baseline").get_attribute("href")
    paths = ["/", "/agents", "/runs", "/matches", "/leaderboard", "/register", "/owner/token"]
    paths.append("/signin")
    paths += [str(fighter), f"/agents/{agent_id(demo, 'scout-atlas')}"]
    for listing, prefix in (("/matches", "/matches/"), ("/runs", "/runs/")):
        page.goto(demo.base + listing)
        first = page.locator(f"a[href^='{prefix}']").first
        if first.count():
            paths.append(str(first.get_attribute("href")))
    found = serious_violations(page, demo.base, paths)
    assert not found, "\n".join(found)
