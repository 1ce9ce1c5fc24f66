"""The arena's jobs on the in-memory broker, on both stores: the job path in one process."""

from __future__ import annotations

import asyncio
from collections import Counter

from sqlalchemy import select, update
from taskiq import InMemoryBroker

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.context import Platform
from palaestra.engine.matches import create_match
from palaestra.engine.referee import LEASE_GRACE_S, _claim
from palaestra.jobs.sweeper import orphaned_matches
from palaestra.jobs.tasks import Jobs
from palaestra.store.models import Agent, Match, Turn
from tests.integration.arena_rows import add_agent, add_fighter, add_owner
from tests.integration.edge_agents import EdgeAgent
from tests.integration.servers import serve


async def drain(broker: InMemoryBroker) -> None:
    """Until no job runs (jobs kick jobs)."""
    while broker._running_tasks:
        await broker.wait_all()
        await asyncio.sleep(0)


async def test_ping_jobs_fan_out_and_ping_each_due_agent_once(
    platform: Platform, clock: FrozenClock
) -> None:
    agent = EdgeAgent(key="")
    async with serve(agent) as endpoint:
        owner = await add_owner(platform)
        ids = [
            await add_agent(platform, owner, f"a{i}", "SCOUT", next_ping_at=clock.now() - 1)
            for i in range(23)
        ]
        async with platform.db.session() as session, session.begin():
            for i, agent_id in enumerate(ids):
                await session.execute(
                    update(Agent)
                    .where(Agent.id == agent_id)
                    .values(endpoint_url=endpoint.url(f"/a{i}"))
                )
        broker = InMemoryBroker()
        jobs = Jobs(broker, platform, ping_batch=5)
        await jobs.ping_due.kiq()
        await drain(broker)
        await jobs.close()
    pinged = Counter(r.path for r in endpoint.received if r.method == "GET")
    assert pinged == Counter({f"/a{i}": 1 for i in range(23)})
    async with platform.db.session() as session:
        due = (await session.scalars(select(Agent.next_ping_at).where(Agent.id.in_(ids)))).all()
    assert all(at is not None and at > clock.now() for at in due)  # each one period ahead
    # 23 agents, 5 a batch: five jobs (a full batch kicks the next), the last one finds 3.
    assert platform.metrics.jobs.labels("ping_due", "done")._value.get() == 5


async def test_a_match_is_played_turn_by_turn_as_jobs(platform: Platform) -> None:
    first = await add_fighter(platform, await add_owner(platform, "h1"), "h1", entrant_type="house")
    second = await add_fighter(
        platform, await add_owner(platform, "h2"), "h2", entrant_type="house"
    )
    broker = InMemoryBroker()
    jobs = Jobs(broker, platform)
    match = await create_match(platform, Caller(owner_id=None, is_admin=True), first, second)
    await jobs.play_pending.kiq()
    await drain(broker)
    await jobs.close()
    async with platform.db.session() as session:
        status = await session.scalar(select(Match.status).where(Match.id == match.id))
        turns = (await session.scalars(select(Turn).where(Turn.match_id == match.id))).all()
    assert status in ("SCORED", "VOIDED")
    assert [t.turn for t in turns] == list(range(1, len(turns) + 1))
    assert all((t.findings or {}).get("sends") == 1 for t in turns)  # each turn sent once


async def test_the_sweeper_finds_matches_left_by_dead_workers(
    platform: Platform, clock: FrozenClock
) -> None:
    first = await add_fighter(platform, await add_owner(platform, "h1"), "h1", entrant_type="house")
    second = await add_fighter(
        platform, await add_owner(platform, "h2"), "h2", entrant_type="house"
    )
    admin = Caller(owner_id=None, is_admin=True)
    between = await create_match(platform, admin, first, second)
    mid_turn = await create_match(platform, admin, second, first)
    await _claim(platform, mid_turn.id)  # a worker took turn 1 and died
    assert await orphaned_matches(platform, clock.now(), stall_s=5) == []
    clock.advance(5)
    assert await orphaned_matches(platform, clock.now(), stall_s=5) == [between.id]
    clock.advance(mid_turn.deadline_ms / 1000 + LEASE_GRACE_S)
    assert set(await orphaned_matches(platform, clock.now(), stall_s=5)) == {
        between.id,
        mid_turn.id,
    }

    broker = InMemoryBroker()
    jobs = Jobs(broker, platform)
    await jobs.sweep.kiq()
    await drain(broker)
    await jobs.close()
    async with platform.db.session() as session:
        rows = (await session.execute(select(Match.id, Match.status))).all()
        resent = await session.scalar(
            select(Turn.findings).where(Turn.match_id == mid_turn.id, Turn.turn == 1)
        )
    assert {status for _, status in rows} <= {"SCORED", "VOIDED"}
    assert resent is not None
    assert resent["sends"] == 2  # the same turn, sent again under its lease

    # Nothing open: nothing to sweep.
    async with platform.db.session() as session, session.begin():
        await session.execute(update(Match).values(updated_at=0))
    assert await orphaned_matches(platform, clock.now(), stall_s=5) == []
