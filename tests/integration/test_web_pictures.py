"""The pictures' rows, read from both stores, and the pages that draw them: a fighter's
ratings after each rated match, an agent's tasks by hour, a candidate's score as bars."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import update

from palaestra.clock import FrozenClock
from palaestra.engine.ratings.live import rate_pending
from palaestra.platform import Platform
from palaestra.store.models import Run
from palaestra.web.picture_queries import agent_hours, rating_history
from tests.integration.arena_rows import add_agent, add_fighter, add_match, add_owner, add_run
from tests.integration.platform_fixtures import running
from tests.integration.web_support import page, still

pytestmark = pytest.mark.asyncio


async def test_a_fighters_ratings_after_each_rated_match(platform: Platform) -> None:
    owner = await add_owner(still(platform))
    a, b = await add_fighter(platform, owner, "alpha"), await add_fighter(platform, owner, "beta")
    await add_match(platform, a, b, "attacker", finished_at=1_000.0)
    await add_match(platform, b, a, "attacker", finished_at=2_000.0)
    await add_match(platform, a, b, "draw", finished_at=3_000.0)
    await add_match(platform, a, b, None, status="RUNNING")  # not rated: no point
    assert await rate_pending(platform) == 3
    history = await rating_history(platform, a)
    assert [p.side for p in history].count("attack") == 2
    assert [p.side for p in history].count("defence") == 1
    assert [p.at for p in history] == sorted(p.at for p in history)
    attack = [p for p in history if p.side == "attack"]
    assert attack[0].mu > 25  # it won its first attack
    assert attack[-1].sigma < attack[0].sigma  # and grows surer
    assert len(await rating_history(platform, a, limit=1)) == 2  # the latest, on each side
    async with running(platform) as api:
        status, body = await page(api, f"/fighters/{a}")
        assert status == 200
        chart = body.split('class="chart ratings-chart"')[1].split("</svg>")[0]
        assert chart.count('class="rt-dot rt-attack"') == 2
        assert chart.count('class="rt-dot rt-defence"') == 1


async def test_an_agents_tasks_by_hour(platform: Platform, clock: FrozenClock) -> None:
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, "scout-hours", "SCOUT")
    clock.current = 1_767_225_600.0 + 10 * 3600 + 120  # ten hours and two minutes in a day
    tasks: list[dict[str, Any]] = [
        {"agent_id": scout, "status": "SUCCEEDED", "latency_ms": 100.0},
        {"agent_id": scout, "status": "SUCCEEDED", "latency_ms": 300.0},
        {"agent_id": scout, "status": "TIMEOUT", "latency_ms": None},
        {"agent_id": scout, "status": "VOIDED"},  # not the agent's doing: not counted
    ]
    await add_run(platform, tasks)
    clock.advance(-3 * 3600)
    await add_run(platform, tasks[:1])
    clock.advance(-30 * 3600)  # a day and more before: outside the window
    await add_run(platform, tasks[:1])
    now = clock.current + 33 * 3600
    hours = await agent_hours(platform, scout, now)
    assert len(hours) == 24
    assert hours[-1].start == now - now % 3600
    assert (hours[-1].succeeded, hours[-1].failed, hours[-1].median_latency_ms) == (2, 1, 200.0)
    assert (hours[-4].succeeded, hours[-4].failed) == (1, 0)
    assert sum(h.tasks for h in hours) == 4
    clock.current = now
    async with running(platform) as api:
        status, body = await page(api, f"/agents/{scout}")
        assert status == 200
        chart = body.split('id="tasks-by-hour"')[1].split("</section>")[0]
        assert len(re.findall(r'<rect class="hr-ok"', chart)) == 2
        assert len(re.findall(r'<rect class="hr-fail"', chart)) == 1
        assert "4 tasks in the last 24 hours" in chart


async def test_a_run_draws_each_candidates_score_as_bars(platform: Platform) -> None:
    platform.settings.public_runs = True
    run_id = await add_run(still(platform), [])
    components = {"scout_quality": 80.0, "verification": 60.0, "adjustments": 2.0, "penalties": 5}
    ranking = [
        {"rank": rank, "candidate_id": f"c{rank}", "title": title, "score": score, "components": c}
        for rank, title, score, c in ((1, "Invoices", 65.0, components), (2, "Rota", 30.0, {}))
    ]
    async with platform.db.session() as session, session.begin():
        await session.execute(
            update(Run).where(Run.id == run_id).values(report={"ranking": ranking})
        )
    async with running(platform) as api:
        status, body = await page(api, f"/runs/{run_id}")
    assert status == 200
    assert body.count('data-candidate="') == 2
    (bars,) = re.findall(r'<svg class="scorebars".*?</svg>', body)  # the one with components
    assert 'aria-label="Score 65.0 of 100: scout quality +32.0, verification +36.0' in bars
    assert bars.count("<rect ") == 5
