"""Registering an agent from the browser and watching its wizard, check by check."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from palaestra.engine.agents.wizard import WIZARD_CHECKS
from tests.acceptance.demo_process import ROOT, RunningDemo, free_port

pytestmark = pytest.mark.chromium

SLOW = "palaestra.demo.agents:slow_analyst"


@contextmanager
def agent_serve(target: str, port: int, key: str | None) -> Iterator[str]:
    """``palaestra agent serve`` on ``port``; yields its URL once it answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_AGENT_")}
    if key is not None:
        env["PALAESTRA_AGENT_KEY"] = key
    process = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "agent", "serve", target, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the agent exited"
            try:
                with urllib.request.urlopen(url, timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the agent did not come up"
                time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)


def test_register_an_agent_and_watch_each_check(
    browser: Browser, demo: RunningDemo, artifacts: Path
) -> None:
    owner = demo.call("POST", "/api/owners", body={"name": "newcomer"})["token"]
    port = free_port()
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    try:
        with agent_serve(SLOW, port, key=None) as url:
            page.goto(demo.base + "/")
            page.get_by_role("navigation").get_by_role("link", name="Register").click()
            page.get_by_label("Owner token").fill(owner)
            page.get_by_label("Agent name").fill("newcomer-analyst")
            page.get_by_label("Role").select_option("ANALYST")
            page.get_by_label("Endpoint URL").fill(url)
            page.screenshot(path=artifacts / "web-register-form.png", full_page=True)
            page.get_by_role("button", name="Probe and register").click()
            expect(page.locator("h1")).to_have_text("newcomer-analyst is registered")
            key = page.locator("#api-key").inner_text().strip()
            assert key.startswith("ea_")
            page.screenshot(path=artifacts / "web-registered.png", full_page=True)

        # As an owner would: give the agent its key and restart it, then run the wizard.
        with agent_serve(SLOW, port, key=key):
            page.get_by_role("button", name="Run the wizard").click()
            wizard = page.locator("#wizard")
            # The slow agent takes over a second per step: checks appear while it runs.
            expect(page.locator('#wizard[data-state="running"] .check.pass').first).to_be_visible(
                timeout=15_000
            )
            expect(page.locator('#wizard[data-state="running"] .check.wait').first).to_be_visible()
            page.screenshot(path=artifacts / "web-wizard-running.png", full_page=True)
            expect(wizard).to_have_attribute("data-state", "passed", timeout=60_000)
        for name in WIZARD_CHECKS:
            expect(wizard.locator(f'[data-check="{name}"]')).to_have_class("check pass")
        expect(wizard).to_contain_text("All 12 checks passed")
        expect(wizard.locator(".chip")).to_have_text("ACTIVE")
        page.screenshot(path=artifacts / "web-wizard-passed.png", full_page=True)
    finally:
        context.close()
    assert demo.agents()["newcomer-analyst"]["status"] == "ACTIVE"


def test_a_wrong_token_is_explained_in_the_form(browser: Browser, demo: RunningDemo) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(demo.base + "/register")
        page.get_by_label("Owner token").fill("pa_owner_not-a-real-one")
        page.get_by_label("Agent name").fill("x")
        page.get_by_label("Endpoint URL").fill("http://127.0.0.1:9/")
        page.get_by_role("button", name="Probe and register").click()
        expect(page.get_by_role("alert")).to_have_text("Invalid bearer token")
        expect(page.get_by_label("Agent name")).to_have_value("x")
    finally:
        context.close()
