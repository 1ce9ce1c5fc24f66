"""The reads of an agent's history go through its indexes, on both stores.

Every statement an agent's page, its failure split, its wizard progress, its history
through the API, a fighter's page and the overview issue over the history tables is
explained, with part of the history rolled up: none may read ``agent_events``, ``tasks``
or ``matches`` whole (a sequential scan, SQLite's ``SCAN``) or walk its primary key (the plan that
crossed the whole history for an agent gone quiet). On PostgreSQL sequential scans are
priced out first, so that the small test table shows which index each read could use.
(At this size the planner does not fall into that walk even when asked with equalities:
``bench/history.py`` shows it, at a million rows.)
"""

from __future__ import annotations

import pytest
from sqlalchemy import insert, text

from palaestra.engine.accounts import Caller
from palaestra.engine.agents.registry import recent_history
from palaestra.engine.agents.wizard import wizard_progress
from palaestra.platform import Platform
from palaestra.store.history import fighter_matches, pairs_played
from palaestra.store.models import AgentEvent
from palaestra.store.rollups import roll_up
from palaestra.web.failure_queries import failure_split
from palaestra.web.fighter_queries import fighter_page
from palaestra.web.queries import agent_page, overview
from tests.integration.arena_rows import add_agent, add_owner
from tests.integration.plans import plan, selects

pytestmark = pytest.mark.asyncio

START = 1_790_000_000.0

HISTORY = ("agent_events", "tasks", "matches", "runs")


async def test_an_agents_history_is_read_through_its_indexes(platform: Platform) -> None:
    owner = await add_owner(platform)
    agent = await add_agent(platform, owner, "quiet", "SCOUT")
    other = await add_agent(platform, owner, "busy", "SCOUT")
    # The quiet agent's events all come before the busy one's: walking the primary key
    # back from the newest row crosses the busy agent's history before finding one.
    rows = [
        {
            "agent_id": agent_id,
            "at": START + 60.0 * i,
            "kind": kind,
            "outcome": "failure" if i % 5 == 0 else "success",
            "latency_ms": 10.0,
            "reason": "External agent timed out after 30000 ms" if i % 5 == 0 else None,
        }
        for i in range(200)
        for agent_id in ((agent,) if i < 50 else (other,))
        for kind in ("ping", "dispatch", "status", "wizard")
    ]
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(AgentEvent), rows)
    # The first half of the history rolled up; the rest is read from the rows.
    await roll_up(platform.db, START + 100 * 60.0 + 3600, grace_s=3600, max_hours=None)
    async with platform.db.engine.begin() as connection:
        await connection.execute(text("ANALYZE"))
    caller = Caller(owner_id=None, is_admin=True)
    with selects(platform, HISTORY) as seen:
        page = await agent_page(platform, agent)
        assert page is not None
        assert page.failures_total == 40  # from the roll-ups: 10 of each kind
        await failure_split(platform, agent)
        await wizard_progress(platform, agent)
        await recent_history(platform, caller, agent, limit=20)
        await overview(platform)
        await fighter_page(platform, agent)
        async with platform.db.session() as session:
            await fighter_matches(session, agent)
            await pairs_played(session)
    assert len(seen) >= 10
    for statement, parameters in seen:
        explained = await plan(platform, statement, parameters)
        assert "agent_events_pkey" not in explained, (statement, explained)
        for table in HISTORY:
            assert f"Seq Scan on {table}" not in explained, (statement, explained)
        for line in explained.splitlines():  # SQLite: a whole scan, but of the notable rows
            if any(f"SCAN {table}" in line for table in HISTORY):
                assert "USING INDEX ix_agent_events_notable" in line, (statement, explained)
