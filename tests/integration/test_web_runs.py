"""The run pages, rendered from runs, candidates and tasks written straight into the store."""

from __future__ import annotations

from typing import Any

import pytest
from markupsafe import escape

from palaestra.engine.agents.lifecycle import history
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.store.models import Candidate, Run, Task
from tests.integration.arena_rows import add_agent, add_owner
from tests.integration.platform_fixtures import running
from tests.integration.web_support import HOSTILE, page, still

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def public_runs(platform: Platform) -> None:
    """These pages are shown only on arenas that publish their runs."""
    platform.settings.public_runs = True


SIZES = {"scouts": 2, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}
FAILURE = f"External agent responded with 500: {HOSTILE}"


def task(run_id: str, phase: str, slot: int, status: str, **extra: Any) -> Task:
    now = 1_000.0 + slot
    fields: dict[str, Any] = {
        "id": new_id(),
        "run_id": run_id,
        "phase": phase,
        "slot": slot,
        "attempt": 0,
        "executor": "agent",
        "status": status,
        "created_at": now,
        "sent_at": now,
        "latency_ms": 250.0,
    } | extra
    return Task(**fields)


async def completed_run(platform: Platform, scout: str, analyst: str) -> dict[str, str]:
    """A finished run: two scouts (one failed and re-routed), one shortlisted candidate."""
    run_id, kept, dropped = new_id(), new_id(), new_id()
    scouted = task(
        run_id,
        "SCOUT",
        0,
        "SUCCEEDED",
        agent_id=scout,
        executor="scout-atlas",
        output={"candidate_title": HOSTILE, "target_customer": f"agencies {HOSTILE}"},
        contribution=0.71,
    )
    failed = task(
        run_id, "SCOUT", 1, "FAILED", agent_id=scout, executor="scout-atlas", reason=FAILURE
    )
    rerouted = task(
        run_id,
        "SCOUT",
        1,
        "SUCCEEDED",
        attempt=1,
        agent_id=analyst,
        executor="other-scout",
        output={"candidate_title": "Dog walking"},
    )
    build = task(
        run_id,
        "BUILD",
        0,
        "SUCCEEDED",
        candidate_id=kept,
        executor="house-baseline",
        via="house",
        reason="house-baseline: nothing was researched",
        output={"execution": {"objective": "Ship an invoicing bot", "phases": ["a"]}},
    )
    verify = task(
        run_id,
        "VERIFY",
        0,
        "SUCCEEDED",
        candidate_id=kept,
        agent_id=analyst,
        executor="analyst-lens",
        output={
            "evidence_quality_score": 64,
            "overall_confidence": "medium",
            "red_flags": [HOSTILE],
        },
    )
    critique = task(
        run_id,
        "CRITIQUE",
        0,
        "SUCCEEDED",
        candidate_id=kept,
        agent_id=analyst,
        executor="analyst-lens",
        output={"verdict": "pass", "fatal_flaw": False, "strengths": ["cheap to start"]},
    )
    tasks = [scouted, failed, rerouted, build, verify, critique]
    refs = [{"task_id": t.id, "phase": t.phase} for t in (scouted, build, verify, critique)]
    report = {
        "goal": "g",
        "score_formula": "score = clamp(...)",
        "ranking": [
            {
                "rank": 1,
                "candidate_id": kept,
                "title": HOSTILE,
                "score": 61.25,
                "components": {
                    "scout_quality": 70,
                    "verification": 55,
                    "adjustments": 2,
                    "penalties": 0,
                },
                "target_customer": f"agencies {HOSTILE}",
                "tasks": refs,
            }
        ],
        "eliminated": [],
        "not_shortlisted": [{"candidate_id": dropped, "title": "Dog walking"}],
    }
    run = Run(
        id=run_id,
        owner_id=None,
        goal=f"Find a business {HOSTILE}",
        launchpad="make-money",
        status="COMPLETED",
        phase="REPORT",
        config={
            "sizes": SIZES,
            "launchpad_title": "Make Money",
            "shortlist": {"kept": [kept], "dropped": [dropped], "merged": {}},
        },
        report=report,
        created_at=1_000.0,
        updated_at=1_100.0,
        finished_at=1_100.0,
    )
    candidates = [
        Candidate(
            id=kept,
            run_id=run_id,
            source_task_id=scouted.id,
            title=HOSTILE,
            scout_output=scouted.output,
            status="RANKED",
            phase="CRITIQUE",
            shortlist_score=70.0,
            final_score=61.25,
            rank=1,
            created_at=1_001.0,
            updated_at=1_100.0,
        ),
        Candidate(
            id=dropped,
            run_id=run_id,
            source_task_id=rerouted.id,
            title="Dog walking",
            scout_output=rerouted.output,
            status="DROPPED",
            phase="SCOUT",
            shortlist_score=20.0,
            created_at=1_002.0,
            updated_at=1_002.0,
        ),
    ]
    async with platform.db.session() as session, session.begin():
        session.add(run)
        await session.flush()
        session.add_all([*tasks, *candidates])
    return {
        "run": run_id,
        "kept": kept,
        "scouted": scouted.id,
        "failed": failed.id,
        "rerouted": rerouted.id,
        "build": build.id,
        "critique": critique.id,
    }


async def test_a_finished_run_shows_phases_candidates_and_its_ranking(platform: Platform) -> None:
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, "scout-atlas", "SCOUT")
    analyst = await add_agent(platform, owner, "analyst-lens", "ANALYST")
    ids = await completed_run(platform, scout, analyst)
    async with running(platform) as api:
        status, body = await page(api, f"/runs/{ids['run']}")
    assert status == 200, body[:400]
    assert "<script>alert" not in body
    assert str(escape(HOSTILE)) in body
    for step in ("SCOUT", "shortlist", "BUILD", "VERIFY", "CRITIQUE", "report"):
        assert f'data-step="{step}" data-state="done"' in body, step
    assert "1 kept, 1 dropped, 0 merged" in body
    assert "1 re-routed" in body
    assert "1 failed" in body
    # The ranking, each contributing task linked to its row below.
    assert f'<li class="ranked" data-candidate="{ids["kept"]}">' in body
    assert "61.2" in body
    for key in ("scouted", "build", "critique"):
        assert f'href="#task-{ids[key]}"' in body
        assert f'id="task-{ids[key]}"' in body
    # The failure and the re-route that replaced it, with its kind and status: what the agent
    # sent with it is for its owner, not for a public page.
    assert f'<tr id="task-{ids["failed"]}" class="task failure"' in body
    assert "External agent responded with 500</td>" in body
    assert str(escape(FAILURE)) not in body
    assert "re-route 1" in body
    assert 'title="served by the arena\'s house agent">house</span>' in body
    # Candidates with what each phase made of them.
    assert f'id="candidate-{ids["kept"]}"' in body
    assert "evidence quality" in body
    assert "Ship an invoicing bot" in body
    assert "<dd>pass</dd>" in body
    assert f'href="/agents/{analyst}"' in body
    assert "hx-get" not in body


async def test_a_running_run_polls_and_the_list_links_it(platform: Platform) -> None:
    started = platform.clock.now() - 600  # ten minutes before the page is drawn
    async with running(still(platform)) as api:
        _, empty = await page(api, "/runs")
        assert "Nothing yet" in empty
        run_id = new_id()
        async with platform.db.session() as session, session.begin():
            session.add(
                Run(
                    id=run_id,
                    owner_id=None,
                    goal="Find a business",
                    launchpad="make-money",
                    status="RUNNING",
                    phase="SCOUT",
                    config={"sizes": SIZES},
                    created_at=started,
                    updated_at=started,
                )
            )
            await session.flush()
            session.add(
                task(
                    run_id,
                    "SCOUT",
                    0,
                    "RUNNING",
                    executor="scout-atlas",
                    latency_ms=None,
                    sent_at=platform.clock.now() - 67,
                    deadline_at=platform.clock.now() + 23,
                )
            )
        _, listed = await page(api, "/runs")
        assert f'<a href="/runs/{run_id}">Find a business</a>' in listed
        _, overview = await page(api, "/")
        assert f'href="/runs/{run_id}"' in overview
        for body in (listed, overview):  # the lists' macros see the page's "now"
            assert ">10 min ago</td>" in body
            assert "just now" not in body
        status, body = await page(api, f"/runs/{run_id}")
        assert status == 200
        assert f'hx-get="/runs/{run_id}"' in body
        assert 'data-step="SCOUT" data-state="running"' in body
        assert 'data-step="report" data-state="pending"' in body
        assert "No candidate yet" in body
        # A running task says how long it has run, of what its deadline allows.
        assert '<span class="elapsed"' in body
        assert ">67 s of 90 s</span>" in body
        status, fragment = await page(api, f"/runs/{run_id}", headers={"HX-Request": "true"})
        assert status == 200
        assert fragment.lstrip().startswith('<div id="run-live"')
        assert "<nav" not in fragment
        status, missing = await page(api, "/runs/01234567-89ab-7def-8123-456789abcdef")
        assert status == 404
        assert "No such run." in missing


async def test_a_dispatch_failure_links_to_its_run(platform: Platform) -> None:
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, "scout-atlas", "SCOUT")
    run_id, task_id = new_id(), new_id()
    async with platform.db.session() as session, session.begin():
        session.add(
            history(
                scout,
                1_000.0,
                "dispatch",
                "failure",
                latency_ms=30_000.0,
                reason="External agent timed out after 30000ms",
                detail={"task_id": task_id, "run_id": run_id, "phase": "SCOUT"},
            )
        )
    async with running(platform) as api:
        _, body = await page(api, f"/agents/{scout}")
        _, overview = await page(api, "/")
    link = f'href="/runs/{run_id}#task-{task_id}"'
    assert link in body
    assert link in overview


async def test_runs_are_private_unless_the_operator_publishes_them(platform: Platform) -> None:
    platform.settings.public_runs = False
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, "scout-atlas", "SCOUT")
    analyst = await add_agent(platform, owner, "analyst-lens", "ANALYST")
    ids = await completed_run(platform, scout, analyst)
    async with running(platform) as api:
        listed = await page(api, "/runs")
        shown = await page(api, f"/runs/{ids['run']}")
        overview = await page(api, "/")
    for status, body in (listed, shown):
        assert status == 403
        assert "Runs on this arena are private" in body
        assert str(escape(HOSTILE)) not in body
    assert overview[0] == 200
    assert 'id="recent-runs"' not in overview[1]
