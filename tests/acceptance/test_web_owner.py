"""An owner's work in headless Chromium, signed in once, against the running demo: a run
followed to its report and read task by task, an agent registered and run through its
wizard, paused, resumed, renamed and given a new key, a fighter registered and edited, a
friendly match started, the quotas read, and signing out; an agent moved to a new endpoint
and a run followed live; then the new pages on a phone and under axe-core."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Response, expect

from palaestra.demo import ADMIN_TOKEN
from tests.acceptance.demo_process import RunningDemo, free_port
from tests.acceptance.test_web_register import agent_serve
from tests.acceptance.web_checks import DESKTOP, PHONE, assert_fits_phone, serious_violations

pytestmark = pytest.mark.chromium

SCOUT = "examples.scout:app"


def sign_in(page: Page, demo: RunningDemo, token: str, name: str) -> None:
    page.goto(demo.base + "/signin")
    page.locator("#signin-token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signed-in-as")).to_have_text(name)


def test_an_owner_does_its_work_in_the_browser(
    browser: Browser, demo: RunningDemo, artifacts: Path
) -> None:
    token = demo.call("POST", "/api/owners", body={"name": "worker"})["token"]
    context = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    page = context.new_page()
    try:
        sign_in(page, demo, token, "worker")
        expect(page.locator("#my-runs")).to_contain_text("You have started no run yet")

        # A run, started here and followed on its page to its report.
        page.locator("#my-runs").get_by_role("link", name="Start one").click()
        expect(page.locator("#quotas")).to_contain_text("runs")
        page.get_by_label("Goal").fill("A night market for insomniacs")
        for name, size in (("scouts", "2"), ("shortlist", "1"), ("builds", "1")):
            page.locator(f"#size-{name}").fill(size)
        page.get_by_role("button", name="Start the run").click()
        expect(page).to_have_url(re.compile(r"/runs/[0-9a-f-]+$"))
        run_id = page.url.rsplit("/", 1)[-1]
        report = page.locator('#phases [data-step="report"]')
        expect(report).to_have_attribute("data-state", "done", timeout=120_000)
        page.goto(demo.base + "/")
        expect(page.locator(f'#my-runs tr[data-run="{run_id}"]')).to_contain_text("night market")

        # One of its tasks: the signed request as it was sent, and the reply.
        page.goto(f"{demo.base}/runs/{run_id}")
        answered = page.locator("#tasks tr.task:not(.failure)").filter(
            has=page.locator("a[href^='/agents/']")
        )
        answered.first.locator("a[href^='/tasks/']").click()
        expect(page.locator("#request-headers")).to_contain_text("x-edgearena-task-id")
        expect(page.locator('[data-header="x-edgearena-signature"]')).to_contain_text("sha256=")
        expect(page.locator("#request-body")).to_contain_text("night market")
        expect(page.locator("#reply-body")).to_be_visible()
        expect(page.locator("#producer")).to_have_text("agent")
        page.screenshot(path=artifacts / "web-task.png", full_page=True)
        # The agent it went to, and the tasks that agent served.
        page.locator("#served-by a").click()
        page.locator("#agent-tasks-link").click()
        expect(page.locator("h1")).to_contain_text("Tasks")
        expect(page.locator("#tasks tr[data-task]").first).to_be_visible()

        # An agent of its own: registered, run through its wizard.
        port = free_port()
        with agent_serve(SCOUT, port, key=None) as url:
            page.goto(demo.base + "/register")
            expect(page.locator('input[name="token"]')).to_have_count(0)
            page.get_by_label("Agent name").fill("worker-scout")
            page.get_by_label("Role").select_option("SCOUT")
            page.get_by_label("Endpoint URL").fill(url)
            page.get_by_role("button", name="Probe and register").click()
            expect(page.locator("h1")).to_have_text("worker-scout is registered")
            key = page.locator("#api-key").inner_text().strip()
        with agent_serve(SCOUT, port, key=key):
            page.get_by_role("button", name="Run the wizard").click()
            expect(page.locator("#wizard")).to_have_attribute(
                "data-state", "passed", timeout=60_000
            )
        page.get_by_role("link", name="The agent's page →").click()
        agent_url = page.url
        # Paused (nothing more is sent to it: its server is gone), resumed, paused again.
        page.locator("#pause-agent").click()
        expect(page.locator("#resume-agent")).to_be_visible()
        page.locator("#resume-agent").click()
        page.locator("#pause-agent").click()
        expect(page.locator("#owner-controls")).to_contain_text("Paused")
        # Renamed; a name it already has is refused in plain words.
        page.locator("#rename summary").click()
        page.get_by_label("New name").fill("worker-scout-2")
        page.locator("#rename-agent").click()
        expect(page.locator("h1")).to_have_text("worker-scout-2")
        # A new key, shown once.
        page.locator("summary", has_text="Rotate its key").click()
        page.get_by_label("The old key stops working at once").check()
        page.locator("#rotate-key").click()
        rotated = page.locator("#api-key").inner_text().strip()
        assert rotated.startswith("ea_")
        assert rotated != key
        page.goto(agent_url)
        expect(page.locator("body")).not_to_contain_text(rotated)

        # A fighter: registered with its provider (the arena's local model), then edited.
        page.goto(demo.base + "/agents")
        page.locator("#new-fighter-link").click()
        page.get_by_label("Fighter name").fill("worker-owl")
        page.get_by_label("model", exact=True).check()
        page.get_by_label("Class").select_option("academic")
        page.get_by_label("Model id").fill("local")
        page.get_by_role("button", name="Register the fighter").click()
        expect(page.locator("h1")).to_have_text("worker-owl")
        fighter_url = page.url
        page.goto(demo.base + "/fighters/new")
        page.get_by_label("Fighter name").fill("Worker-Owl")
        page.get_by_label("harness").check()
        page.get_by_role("button", name="Register the fighter").click()
        expect(page.locator("#fighter-error")).to_contain_text(
            "You already have a fighter named 'Worker-Owl'"
        )
        page.goto(fighter_url)
        page.locator("#rename summary").click()
        page.get_by_label("New name").fill("worker-owl-2")
        page.locator("#rename-agent").click()
        expect(page.locator("h1")).to_have_text("worker-owl-2")
        page.locator("summary", has_text="Stop accepting friendly matches").click()
        page.locator("details", has_text="Stop accepting friendly").get_by_role(
            "button", name="Stop accepting"
        ).click()
        expect(page.locator("#friendly-challenges")).to_contain_text("no:")

        # A friendly match against another owner's fighter, and the quota it counts against.
        page.goto(demo.base + "/agents#fighters")
        page.get_by_role("link", name="cage-baseline").click()
        page.locator("#challenge summary").click()
        expect(page.locator("#challenge #quotas")).to_contain_text("matches")
        page.get_by_label("Your fighter").select_option(label="worker-owl-2")
        page.locator("#start-challenge").click()
        expect(page).to_have_url(re.compile(r"/matches/[0-9a-f-]+$"))
        expect(page.locator("h1")).to_contain_text("worker-owl-2")
        page.screenshot(path=artifacts / "web-owner-match.png", full_page=True)

        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#sign-in")).to_be_visible()
        page.goto(agent_url)
        expect(page.locator("#owner-controls")).to_have_count(0)
    finally:
        context.close()


def test_an_owner_moves_its_agent_and_follows_a_run_live(
    browser: Browser, demo: RunningDemo, artifacts: Path
) -> None:
    """A new endpoint, refused in plain words when the arena may not call it, then admitted
    by the wizard run there; and a run's page that follows the run without a reload,
    answered 304 while nothing moved."""
    token = demo.call("POST", "/api/owners", body={"name": "mover"})["token"]
    context = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    page = context.new_page()
    first, second = free_port(), free_port()
    try:
        sign_in(page, demo, token, "mover")
        with agent_serve(SCOUT, first, key=None) as url:
            page.goto(demo.base + "/register")
            page.get_by_label("Agent name").fill("mover-scout")
            page.get_by_label("Role").select_option("SCOUT")
            page.get_by_label("Endpoint URL").fill(url)
            page.get_by_role("button", name="Probe and register").click()
            key = page.locator("#api-key").inner_text().strip()
        with agent_serve(SCOUT, first, key=key):
            page.get_by_role("button", name="Run the wizard").click()
            expect(page.locator("#wizard")).to_have_attribute(
                "data-state", "passed", timeout=60_000
            )
        page.get_by_role("link", name="The agent's page →").click()
        agent_url = page.url

        with agent_serve(SCOUT, second, key=key) as moved:
            page.locator("#change-endpoint-link").click()
            field = page.get_by_label("New endpoint URL")
            expect(field).to_have_value(f"http://127.0.0.1:{first}/")
            field.fill("https://10.20.30.40/hook")
            page.locator("#change-endpoint").click()
            expect(page.locator("#endpoint-error")).to_contain_text(
                "Endpoint refused by egress policy: 10.20.30.40 is a private address"
            )
            expect(page.get_by_label("New endpoint URL")).to_have_value("https://10.20.30.40/hook")
            page.get_by_label("New endpoint URL").fill(moved)
            page.locator("#change-endpoint").click()
            expect(page).to_have_url(re.compile(r"/wizard/[0-9a-f-]+$"))
            expect(page.locator("#wizard")).to_have_attribute(
                "data-state", "passed", timeout=60_000
            )
            page.goto(agent_url)
            expect(page.locator("h1 + div")).to_contain_text("ACTIVE")
            page.locator("#change-endpoint-link").click()
            expect(page.get_by_label("New endpoint URL")).to_have_value(moved)

            # A run, followed on its page without a reload while it goes on.
            seen: list[int] = []

            def answered(response: Response) -> None:
                if response.request.headers.get("palaestra-live") == "1":
                    seen.append(response.status)

            page.on("response", answered)
            page.goto(demo.base + "/runs/new")
            page.get_by_label("Goal").fill("A lantern shop for night walkers")
            for name in ("scouts", "shortlist", "builds", "verifies", "critiques"):
                page.locator(f"#size-{name}").fill("1")
            page.get_by_role("button", name="Start the run").click()
            expect(page).to_have_url(re.compile(r"/runs/[0-9a-f-]+$"))
            page.evaluate("window.loadedOnce = true")  # gone if the page were loaded again
            live = page.locator("#run-live")
            report = live.locator('[data-step="report"]')
            expect(report).to_have_attribute("data-state", "done", timeout=120_000)
            expect(live).to_have_attribute("data-status", "COMPLETED")
            assert page.evaluate("window.loadedOnce") is True
            assert 200 in seen, seen
            expect(live).not_to_have_attribute("hx-get", re.compile("."))  # done: it stops
            asked = len(seen)
            page.wait_for_timeout(3000)
            assert len(seen) == asked, "a finished run's page kept asking"
            page.screenshot(path=artifacts / "web-run-live.png", full_page=True)
    finally:
        context.close()


def a_task(demo: RunningDemo) -> dict[str, Any]:
    """A task of the demo's own run that an agent answered, once the run has one."""

    def found() -> dict[str, Any] | None:
        runs = demo.call("GET", "/api/runs")
        for run in runs:
            for task in demo.call("GET", f"/api/runs/{run['run_id']}")["tasks"]:
                if task["agent_id"] and task["status"] == "SUCCEEDED":
                    return dict(task)
        return None

    return demo.wait_until("a run has a task an agent answered", found, timeout_s=120)


def a_model_fighter(demo: RunningDemo) -> str:
    """A model fighter of an owner of its own (on the arena's local model)."""
    token = demo.call("POST", "/api/owners", body={"name": f"modeller-{uuid.uuid4().hex[:6]}"})
    body = {
        "name": f"owl-{uuid.uuid4().hex[:6]}",
        "entrant_type": "model",
        "class": "academic",
        "model": {"model": "local"},
    }
    fighter_id: str = demo.call("POST", "/api/fighters", token=token["token"], body=body)[
        "fighter_id"
    ]
    return fighter_id


def new_pages(demo: RunningDemo) -> list[str]:
    task = a_task(demo)
    return [
        "/",
        "/fighters/new",
        f"/tasks/{task['task_id']}",
        f"/agents/{task['agent_id']}/tasks",
        f"/agents/{task['agent_id']}",
        f"/agents/{task['agent_id']}/endpoint",
        f"/fighters/{a_model_fighter(demo)}/model",
    ]


def test_the_new_pages_fit_a_phone_with_their_navigation_in_reach(
    browser: Browser, demo: RunningDemo, artifacts: Path
) -> None:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)  # type: ignore[arg-type]
    phone = context.new_page()
    try:
        sign_in(phone, demo, ADMIN_TOKEN, "admin")
        for path in new_pages(demo):
            assert_fits_phone(phone, demo.base + path, path)
            if path.startswith("/tasks/"):
                phone.screenshot(path=artifacts / "web-task-phone.png", full_page=True)
            if path.endswith("/endpoint"):
                phone.screenshot(path=artifacts / "web-endpoint-phone.png", full_page=True)
    finally:
        context.close()


def test_the_new_pages_have_no_serious_accessibility_violation(
    browser: Browser, demo: RunningDemo
) -> None:
    context = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    page = context.new_page()
    try:
        sign_in(page, demo, ADMIN_TOKEN, "admin")
        found = serious_violations(page, demo.base, new_pages(demo))
    finally:
        context.close()
    assert not found, "\n".join(found)
