"""Signing in once in headless Chromium, against the running demo: the forms stop asking for
the token, every page says who is signed in, and signing out ends it."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, expect

from tests.acceptance.demo_process import RunningDemo

pytestmark = pytest.mark.chromium

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def test_an_owner_signs_in_works_without_the_token_and_signs_out(
    browser: Browser, demo: RunningDemo, artifacts: Path
) -> None:
    token = demo.call("POST", "/api/owners", body={"name": "signer"})["token"]
    context = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(demo.base + "/register")
        expect(page.locator('input[name="token"]')).to_have_count(1)
        page.locator("#sign-in").click()
        expect(page).to_have_url(demo.base + "/signin?then=/register")
        page.locator("#signin-token").fill("pa_owner_wrong")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#signin-error")).to_contain_text("Invalid bearer token")
        page.locator("#signin-token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        # Back where the owner came from, signed in, and the form no longer asks for the token.
        expect(page).to_have_url(demo.base + "/register")
        expect(page.locator("#signed-in-as")).to_have_text("signer")
        expect(page.locator('input[name="token"]')).to_have_count(0)
        expect(page.locator('input[name="csrf_token"]').first).to_be_attached()
        page.screenshot(path=artifacts / "web-signed-in.png", full_page=True)

        [cookie] = [c for c in context.cookies() if c["name"] == "palaestra_session"]
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Lax"
        assert "palaestra_session" not in page.evaluate("document.cookie")  # no script reads it

        for path in ("/", "/agents", "/leaderboard", "/owner/token"):
            page.goto(demo.base + path)
            expect(page.locator("#signed-in-as")).to_have_text("signer")
        expect(page.locator('#rotate input[name="token"]')).to_have_count(0)

        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(demo.base + "/")
        expect(page.locator("#sign-in")).to_be_visible()
        expect(page.locator("#signed-in-as")).to_have_count(0)
        assert not [c for c in context.cookies() if c["name"] == "palaestra_session"]
        page.goto(demo.base + "/register")
        expect(page.locator('input[name="token"]')).to_have_count(1)
    finally:
        context.close()


def test_the_sign_in_and_new_run_pages_fit_a_phone(browser: Browser, demo: RunningDemo) -> None:
    token = demo.call("POST", "/api/owners", body={"name": "phone-owner"})["token"]
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(demo.base + "/signin")
        page.locator("#signin-token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#signed-in-as")).to_have_text("phone-owner")
        for path in ("/signin", "/runs/new", "/owner/token", "/"):
            page.goto(demo.base + path)
            expect(page.locator("#signed-in-as")).to_be_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{path} scrolls sideways on a phone"
    finally:
        context.close()


def test_the_signed_in_pages_have_no_serious_accessibility_violation(
    browser: Browser, demo: RunningDemo
) -> None:
    token = demo.call("POST", "/api/owners", body={"name": "axe-owner"})["token"]
    page = browser.new_page()
    page.goto(demo.base + "/signin")
    page.locator("#signin-token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signed-in-as")).to_have_text("axe-owner")
    axe = Axe()
    found = []
    for path in ("/runs/new", "/owner/token", "/register", "/runs", "/"):
        page.goto(demo.base + path)
        for violation in axe.run(page).response["violations"]:
            if violation["impact"] in {"serious", "critical"}:
                where = [node["target"] for node in violation["nodes"]][:3]
                found.append(f"{path}: {violation['id']} {where}")
    page.close()
    assert not found, "\n".join(found)
