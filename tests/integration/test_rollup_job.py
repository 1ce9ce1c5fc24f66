"""The roll-up job: idempotent, and safe beside the arena's writers and a second runner.

Two runners on PostgreSQL (two stores, as two workers have) close the same hours at once
while the arena writes events and moves tasks and matches: nothing deadlocks, every hour
is closed once (the hours the runners report add up to the hours closed), and the
roll-ups equal the aggregates of their rows. Redoing an hour changes nothing.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection

from palaestra.store import history
from palaestra.store.db import Database, migrate
from palaestra.store.models import AgentEvent, Match, Task
from palaestra.store.rollup_models import (
    DAY,
    HOUR,
    LATENCY_BOUNDS_MS,
    AgentRollup,
    MatchRollup,
    histogram_counts,
    histogram_text,
    latency_bucket,
    percentile,
)
from palaestra.store.rollups import (
    DEFAULT_GRACE_S,
    mark_stale,
    prune_hour,
    recompute_day,
    recompute_hour,
    recompute_marked,
    roll_up,
    rolled_up_until,
    until_of,
)
from tests.integration.platform_fixtures import reset_postgres
from tests.integration.test_rollups import Arena, _closed_aggregates, _closed_rollups

pytestmark = pytest.mark.asyncio

START = 1_789_948_800.0  # a day's start
HOURS = 30


async def _store(url: str) -> Database:
    if url.startswith("postgresql"):
        await reset_postgres(url)
    db = Database(url)
    await db.migrate()
    return db


async def _history(db: Database, start: float = START) -> Arena:
    """An arena with HOURS hours of events, finished tasks and scored matches from ``start``."""
    arena = Arena(db)
    await arena.open()
    rng = random.Random(7)
    for hour in range(HOURS):
        arena.now = start + hour * HOUR + 1800
        await arena.step(
            "events",
            [
                (rng.randrange(3), rng.uniform(0, 300), kind, outcome, rng.uniform(1, 900), None)
                for kind in ("ping", "dispatch")
                for outcome in ("success", "failure")
            ],
        )
        await arena.step("tasks", [(rng.randrange(3), 0.0), (None, 0.0)])
        await arena.step("matches", [(0, 1, "rated"), (2, 0, "rated")])
        await arena.step("score", rng.choice(["attacker", "defender", "draw"]))
        await arena.step("end_run", ("SUCCEEDED", 0.5))
    arena.now = start + HOURS * HOUR + 2 * HOUR
    return arena


def _writes(connection: Connection, agents: list[str], at: float) -> None:
    """What the arena writes meanwhile: events, and tasks and matches moved."""
    connection.execute(
        insert(AgentEvent),
        [{"agent_id": a, "at": at, "kind": "ping", "outcome": "success"} for a in agents],
    )
    connection.execute(update(Task).where(Task.status == "SUCCEEDED").values(reason="seen"))
    connection.execute(update(Match).where(Match.status == "SCORED").values(updated_at=at))


async def test_two_runners_and_the_arena_at_once_close_each_hour_once(
    postgres_database: str,
) -> None:
    db = await _store(postgres_database)
    other = Database(postgres_database)
    try:
        arena = await _history(db)
        stop = asyncio.Event()

        async def arena_writes() -> int:
            done = 0
            while not stop.is_set():
                await db.transact(partial(_writes, agents=arena.agents, at=arena.now))
                done += 1
            return done

        writer = asyncio.create_task(arena_writes())
        closed = await asyncio.gather(
            *(
                roll_up(store, arena.now, grace_s=900, max_hours=None)
                for store in (db, other, db, other)
            )
        )
        stop.set()
        assert await writer > 0
        until = await db.query(until_of)
        assert until == START + (HOURS + 1) * HOUR  # every hour before now - grace
        assert sum(closed) == (until - START) // HOUR  # each closed by one runner only
        found = await db.query(_closed_rollups)
        assert found == await db.query(partial(_closed_aggregates, until=until))
        days = select(func.count()).select_from(AgentRollup).where(AgentRollup.span == DAY)
        assert await db.query(lambda c: c.scalar(days))  # a whole day closed
    finally:
        await other.dispose()
        await db.dispose()


async def test_an_hour_or_a_day_redone_changes_nothing(database_url: str) -> None:
    db = await _store(database_url)
    try:
        async with db.session() as session:  # nothing closed yet: nothing may be pruned
            assert await rolled_up_until(session) == datetime.fromtimestamp(0, UTC)
        arena = await _history(db)
        await roll_up(db, arena.now, grace_s=900, max_hours=None)
        async with db.session() as session:  # what retention may prune before
            until = await rolled_up_until(session)
        assert until == datetime.fromtimestamp(START + (HOURS + 1) * HOUR, UTC)
        before = await db.query(_closed_rollups)
        assert before["events"]
        assert before["tasks"]
        assert before["matches"]
        for hour in range(3):
            await db.transact(partial(recompute_hour, start=int(START) + hour * HOUR))
        await db.transact(partial(recompute_day, day=int(START)))
        await roll_up(db, arena.now, grace_s=900, max_hours=None)
        assert await db.query(_closed_rollups) == before
    finally:
        await db.dispose()


async def test_the_migration_rolls_up_the_history_already_stored(database_url: str) -> None:
    if database_url.startswith("postgresql"):
        await reset_postgres(database_url)
    db = Database(database_url)
    try:
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, "0011"))
        yesterday = time.time() // DAY * DAY - DAY  # the history of the last day or two
        await _history(db, yesterday)
        await db.migrate()
        until = await db.query(until_of)
        assert until == (time.time() - DEFAULT_GRACE_S) // HOUR * HOUR
        found = await db.query(_closed_rollups)
        assert found["events"]
        assert found == await db.query(partial(_closed_aggregates, until=until))
    finally:
        await db.dispose()


async def test_a_stale_hour_of_a_pruned_day_keeps_its_days_sums(database_url: str) -> None:
    db = await _store(database_url)
    try:
        arena = await _history(db)
        await roll_up(db, arena.now, grace_s=900, max_hours=None)
        while await db.transact(partial(prune_hour, before=START + DAY)):
            pass
        day_rows = select(MatchRollup).where(MatchRollup.span == DAY, MatchRollup.start == START)
        hours = select(func.count()).where(
            MatchRollup.span == HOUR, MatchRollup.start < START + DAY
        )

        def rows(connection: Connection) -> list[tuple[object, ...]]:
            return sorted(tuple(r) for r in connection.execute(day_rows).all())

        before = await db.query(rows)
        assert before
        assert await db.query(lambda c: c.scalar(hours)) == 0
        async with db.session() as session, session.begin():  # a rejudge in the pruned day
            match = await session.scalar(
                select(Match).where(Match.created_at < START + DAY).limit(1)
            )
            assert match is not None
            match.outcome = "draw" if match.outcome != "draw" else "attacker"
            await mark_stale(session, [match.created_at])
        # No retention window (as after the window was widened): the mark is still skipped.
        await recompute_marked(db, arena.now, keep_raw_s=None)
        assert await db.query(rows) == before
        assert await db.query(lambda c: c.scalar(hours)) == 0
    finally:
        await db.dispose()


async def test_a_day_of_many_latencies_is_a_row_per_kind_outcome_and_failure(
    database_url: str,
) -> None:
    db = await _store(database_url)
    try:
        arena = Arena(db)
        await arena.open()
        agent = arena.agents[0]
        rng = random.Random(11)
        # 2,000 events over a day, in every bucket (and without a latency), of two kinds,
        # succeeded, timed out or failed otherwise.
        latencies = [None, *LATENCY_BOUNDS_MS, 1e9]
        written: list[dict[str, Any]] = [
            {
                "agent_id": agent,
                "at": START + i * DAY / 2000,
                "kind": rng.choice(["ping", "dispatch"]),
                "outcome": outcome,
                "latency_ms": latencies[i % len(latencies)],
                "reason": reason,
            }
            for i in range(2000)
            for outcome, reason in [
                rng.choice(
                    [
                        ("success", None),
                        ("failure", "External agent timed out after 30000 ms"),
                        ("failure", "something else"),
                    ]
                )
            ]
        ]
        await db.transact(lambda c: c.execute(insert(AgentEvent), written))
        await roll_up(db, START + DAY + 2 * HOUR, grace_s=900, max_hours=None)

        def rows(connection: Connection, span: int) -> list[Any]:
            return list(connection.execute(select(AgentRollup).where(AgentRollup.span == span)))

        days = await db.query(partial(rows, span=DAY))
        groups = {(e["kind"], e["outcome"], e["reason"]) for e in written}
        assert len(days) == len(groups) == 6
        for row in days:
            histogram = histogram_counts(row.latency_histogram)
            assert sum(histogram.values()) == row.events
            assert histogram == Counter(
                latency_bucket(e["latency_ms"])
                for e in written
                if (e["kind"], e["outcome"]) == (row.kind, row.outcome)
                and (row.failure == "timeout") == (e["reason"] or "").startswith("External")
            )
            assert len(histogram) > 20  # many buckets in one row
            assert row.latency_histogram == histogram_text(histogram)  # ascending
        assert sum(row.events for row in days) == len(written)
        hours = await db.query(partial(rows, span=HOUR))
        assert len(hours) <= 24 * len(groups)
        assert sum(row.events for row in hours) == len(written)
        for row in hours:  # each written with its buckets ascending, on both stores
            assert row.latency_histogram == histogram_text(histogram_counts(row.latency_histogram))
        async with db.session() as session:
            found = await history.latency_percentiles(session, agent, ("ping", "dispatch"))
        every = Counter(latency_bucket(e["latency_ms"]) for e in written)
        assert found == [percentile(every.items(), f) for f in (0.5, 0.95, 0.99)]
    finally:
        await db.dispose()
