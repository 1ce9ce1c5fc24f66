"""A roll-up always equals the aggregate of the rows it summarises, on both stores.

Hypothesis writes history as the arena does, under a clock that moves on: events written
up to a deadline after their time, tasks opened in running runs and finished (and given
their contribution) hours later when their run ends, matches opened, scored and
rejudged. The roll-up job runs now and then. After each step (a) every closed roll-up
row equals the aggregate, computed here in Python, of the raw rows of its hour or day,
and (b) every read of ``store.history`` (roll-ups plus the rows after the watermark)
equals the same read over the raw rows.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter, defaultdict
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from palaestra.ids import new_id
from palaestra.protocol.failures import REASON_PREFIXES, CallFailure
from palaestra.rules.cage.matchmaking import pair_key
from palaestra.store import history
from palaestra.store.db import Database
from palaestra.store.models import Agent, AgentEvent, Match, Meta, Owner, Run, Task
from palaestra.store.rollup_models import (
    DAY,
    HOUR,
    AgentRollup,
    ArenaRollup,
    MatchRollup,
    RollupStale,
    TaskRollup,
    histogram_counts,
    histogram_text,
    latency_bucket,
    percentile,
)
from palaestra.store.rollups import UNTIL_KEY, mark_stale, recompute_marked, roll_up, until_of
from tests.integration.platform_fixtures import reset_postgres

AGENTS = 3
GRACE = 900.0
LATE = 300.0  # a row is written at most this long after the time it carries
T0 = 1_790_000_000.0 - 1_790_000_000.0 % DAY + 20 * HOUR  # four hours before a day ends

FINISH = ("VOIDED", 0.5)
reasons = st.sampled_from(
    [None, "", "something else", *(prefix + "x" for prefix, _ in REASON_PREFIXES)]
)
events = st.lists(
    st.tuples(
        st.integers(0, AGENTS - 1),
        st.floats(0, LATE),
        st.sampled_from(["ping", "dispatch", "verify", "status"]),
        st.sampled_from(["success", "failure"]),
        st.one_of(st.none(), st.sampled_from([1.0, 10.0, 30000.0]), st.floats(0, 2e5)),
        reasons,
    ),
    max_size=10,
)
tasks = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, AGENTS - 1)), st.floats(0, LATE)), max_size=5
)
finish = st.tuples(
    st.sampled_from(["SUCCEEDED", "FAILED", "TIMEOUT", "VOIDED"]),
    st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)),
)
matches = st.lists(
    st.tuples(
        st.integers(0, AGENTS - 1), st.integers(0, AGENTS - 1), st.sampled_from(["rated", "x"])
    ),
    max_size=3,
)
steps = st.one_of(
    st.tuples(st.just("events"), events),
    st.tuples(st.just("tasks"), tasks),
    st.tuples(st.just("end_run"), finish),
    st.tuples(st.just("matches"), matches),
    st.tuples(st.just("score"), st.sampled_from(["attacker", "defender", "draw", "VOIDED"])),
    st.tuples(st.just("rejudge"), st.sampled_from(["attacker", "defender", "draw"])),
    st.tuples(st.just("wait"), st.floats(0, 5 * HOUR)),
    st.tuples(st.just("job"), st.sampled_from([1, 3, None])),
)


@pytest.fixture
def migrated(database_url: str) -> str:
    async def prepare() -> None:
        if database_url.startswith("postgresql"):
            await reset_postgres(database_url)
        db = Database(database_url)
        await db.migrate()
        await db.dispose()

    asyncio.run(prepare())
    return database_url


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(steps, min_size=1, max_size=14))
# A task whose run outlives its hour: the hour waits for the run.
@example(script=[("tasks", [(0, 0.0)]), ("wait", 3 * HOUR), ("job", None), ("end_run", FINISH)])
# A match rejudged after its hour and day closed: they are recomputed.
@example(
    script=[
        ("matches", [(0, 1, "rated")]),
        ("score", "attacker"),
        ("wait", 5 * HOUR),
        ("job", None),
        ("rejudge", "draw"),
        ("job", 1),
    ]
)
def test_rollups_and_the_tail_equal_the_aggregates_of_the_rows(
    migrated: str, script: list[tuple[str, Any]]
) -> None:
    asyncio.run(_replay(migrated, script))


class Arena:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.now = T0
        self.agents = [new_id() for _ in range(AGENTS)]
        self.run_id: str | None = None  # the run open now, if any

    async def open(self) -> None:
        owner = new_id()

        def write(connection: Connection) -> None:
            connection.execute(
                insert(Owner), [{"id": owner, "name": "o", "token_hash": new_id(), "created_at": 0}]
            )
            connection.execute(
                insert(Agent),
                [
                    {
                        "id": agent,
                        "owner_id": owner,
                        "name": f"a{i}",
                        "arena": "edgearena",
                        "status": "ACTIVE",
                        "consecutive_failures": 0,
                        "hold": False,
                        "reputation": 0.0,
                        "sandbox_attested": False,
                        "created_at": 0,
                        "updated_at": 0,
                    }
                    for i, agent in enumerate(self.agents)
                ],
            )

        await self.db.transact(write)

    def _new_run(self, connection: Connection) -> str:
        self.run_id = new_id()
        connection.execute(
            insert(Run),
            [
                {
                    "id": self.run_id,
                    "goal": "g",
                    "launchpad": "l",
                    "status": "RUNNING",
                    "phase": "SCOUT",
                    "config": {},
                    "created_at": self.now,
                    "updated_at": self.now,
                }
            ],
        )
        return self.run_id

    async def step(self, step: str, value: Any) -> None:
        if step == "wait":
            self.now += value
        elif step == "job":
            await roll_up(self.db, self.now, grace_s=GRACE, max_hours=value)
        elif step == "rejudge":
            await self._rejudge(value)
        else:
            await self.db.transact(partial(self._write, step=step, value=value))

    async def _rejudge(self, outcome: str) -> None:
        async with self.db.session() as session, session.begin():
            match = await session.scalar(
                select(Match).where(Match.status == "SCORED").order_by(Match.id).limit(1)
            )
            if match is None or match.outcome == outcome:
                return
            match.outcome = outcome
            await mark_stale(session, [match.created_at])
        await recompute_marked(self.db, self.now)  # as ``palaestra rejudge`` does

    def _write(self, connection: Connection, step: str, value: Any) -> None:
        now = self.now
        if step == "events" and value:
            connection.execute(
                insert(AgentEvent),
                [
                    {
                        "agent_id": self.agents[a],
                        "at": now - late,
                        "kind": kind,
                        "outcome": outcome,
                        "latency_ms": latency,
                        "reason": reason,
                    }
                    for a, late, kind, outcome, latency, reason in value
                ],
            )
        elif step == "tasks" and value:
            run_id = self.run_id or self._new_run(connection)
            slot = connection.scalar(select(Task.slot).order_by(Task.slot.desc()).limit(1)) or 0
            connection.execute(
                insert(Task),
                [
                    {
                        "id": new_id(),
                        "run_id": run_id,
                        "phase": "SCOUT",
                        "slot": slot + 1 + i,
                        "attempt": 0,
                        "agent_id": None if a is None else self.agents[a],
                        "executor": "x",
                        "status": "RUNNING",
                        # Opened in its run, up to a deadline before being written.
                        "created_at": max(now - late, self._run_created(connection, run_id)),
                    }
                    for i, (a, late) in enumerate(value)
                ],
            )
        elif step == "end_run" and self.run_id is not None:
            status, share = value
            connection.execute(
                update(Task)
                .where(Task.run_id == self.run_id)
                .values(status=status, contribution=share, completed_at=now)
            )
            connection.execute(
                update(Run).where(Run.id == self.run_id).values(status="COMPLETED", finished_at=now)
            )
            self.run_id = None
        elif step == "matches" and value:
            connection.execute(
                insert(Match),
                [
                    {
                        "id": new_id(),
                        "attacker_id": self.agents[x],
                        "defender_id": self.agents[y],
                        "ruleset": "cage.v1",
                        "kind": kind,
                        "status": "RUNNING",
                        "seed": 1,
                        "material": {},
                        "deadline_ms": 1,
                        "next_turn": 0,
                        "created_at": now,
                        "updated_at": now,
                    }
                    for x, y, kind in value
                ],
            )
        elif step == "score":
            voided = value == "VOIDED"
            connection.execute(
                update(Match)
                .where(Match.status == "RUNNING")
                .values(
                    status="VOIDED" if voided else "SCORED",
                    outcome=None if voided else value,
                    finished_at=now,
                )
            )

    def _run_created(self, connection: Connection, run_id: str) -> float:
        created = connection.scalar(select(Run.created_at).where(Run.id == run_id))
        assert created is not None
        return float(created)


async def _replay(url: str, script: list[tuple[str, Any]]) -> None:
    db = Database(url)
    try:
        arena = Arena(db)
        await arena.open()
        for step, value in script:
            await arena.step(step, value)
            closed = await db.query(_closed_rollups)
            assert closed == await db.query(partial(_closed_aggregates, until=closed["until"]))
            assert await _reads(db, arena.agents) == await db.query(
                partial(_raw_reads, agents=arena.agents)
            )
    finally:
        await db.transact(_forget)
        await db.dispose()


def _forget(connection: Connection) -> None:
    """Every row gone, roll-ups and watermark too: the next example starts afresh."""
    for table in (Owner, Run, RollupStale, ArenaRollup):
        connection.execute(delete(table))
    connection.execute(delete(Meta).where(Meta.key == UNTIL_KEY))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6) + 0.0


def _closed_rollups(connection: Connection) -> dict[str, Any]:
    until = until_of(connection) or 0.0
    found: dict[str, Any] = {"until": until}
    found["events"] = {
        (r.agent_id, r.span, r.start, r.kind, r.outcome, r.failure): (
            r.events,
            _r(r.latency_ms_sum),
            _r(r.first_at),
            _r(r.last_at),
            r.latency_histogram,
        )
        for r in connection.execute(select(AgentRollup))
    }
    found["tasks"] = {
        (r.agent_id, r.span, r.start, r.status): (
            r.tasks,
            r.contributed,
            _r(r.contribution_sum),
            _r(r.first_ended),
            _r(r.last_ended),
        )
        for r in connection.execute(select(TaskRollup))
    }
    found["matches"] = {
        (r.fighter_id, r.span, r.start, r.opponent_id, r.side, r.kind, r.status, r.outcome): (
            r.matches
        )
        for r in connection.execute(select(MatchRollup))
    }
    found["arena"] = {
        (r.span, r.start): (r.runs, r.matches) for r in connection.execute(select(ArenaRollup))
    }
    return found


def _spans(at: float, until: float) -> list[tuple[int, int]]:
    """The closed spans a row of time ``at`` is summed in."""
    found = []
    hour = math.floor(at / HOUR) * HOUR
    if hour + HOUR <= until:
        found.append((HOUR, hour))
    day = math.floor(at / DAY) * DAY
    if day + DAY <= until:
        found.append((DAY, day))
    return found


def _closed_aggregates(connection: Connection, until: float) -> dict[str, Any]:
    events: dict[tuple[Any, ...], list[Any]] = defaultdict(
        lambda: [0, 0.0, math.inf, -math.inf, Counter()]
    )
    for e in connection.execute(select(AgentEvent)):
        failure = "" if e.outcome != "failure" else CallFailure.of(e.reason).value
        for span, start in _spans(e.at, until):
            total = events[e.agent_id, span, start, e.kind, e.outcome, failure]
            total[0] += 1
            total[1] += e.latency_ms or 0.0
            total[2] = min(total[2], e.at)
            total[3] = max(total[3], e.at)
            total[4][latency_bucket(e.latency_ms)] += 1
    tasks: dict[tuple[Any, ...], list[Any]] = defaultdict(lambda: [0, 0, 0.0, math.inf, -math.inf])
    for t in connection.execute(select(Task).where(Task.agent_id.is_not(None))):
        ended = t.completed_at if t.completed_at is not None else t.created_at
        for span, start in _spans(t.created_at, until):
            total = tasks[(t.agent_id, span, start, t.status)]
            total[0] += 1
            total[1] += t.contribution is not None
            total[2] += t.contribution or 0.0
            total[3] = min(total[3], ended)
            total[4] = max(total[4], ended)
    found: Counter[tuple[Any, ...]] = Counter()
    for m in connection.execute(select(Match)):
        for span, start in _spans(m.created_at, until):
            for me, them, side in (
                (m.attacker_id, m.defender_id, "attacker"),
                (m.defender_id, m.attacker_id, "defender"),
            ):
                found[(me, span, start, them, side, m.kind, m.status, m.outcome or "")] += 1
    arena: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for run in connection.execute(select(Run)):
        for span, start in _spans(run.created_at, until):
            arena[span, start][0] += 1
    for m in connection.execute(select(Match)):
        for span, start in _spans(m.created_at, until):
            arena[span, start][1] += 1
    return {
        "until": until,
        "events": {
            k: (n, _r(s), _r(f), _r(la), histogram_text(h))
            for k, (n, s, f, la, h) in events.items()
        },
        "tasks": {k: (n, c, _r(s), _r(f), _r(la)) for k, (n, c, s, f, la) in tasks.items()},
        "matches": dict(found),
        "arena": {k: (runs, matches) for k, (runs, matches) in arena.items()},
    }


async def _reads(db: Database, agents: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    async with db.session() as session:
        for agent in agents:
            failures = await history.agent_failures(session, agent, ("dispatch", "ping"))
            found[agent] = (
                {k: (s.count, _r(s.first), _r(s.last)) for k, s in failures.items()},
                await history.failures_total(session, agent),
                {
                    k: (s.count, _r(s.first), _r(s.last))
                    for k, s in (await history.tasks_by_status(session, agent)).items()
                },
                dict(await history.fighter_matches(session, agent)),
                await history.latency_percentiles(session, agent, ("ping", "dispatch")),
            )
        found["matches"] = await history.matches_total(session)
        found["runs"] = await history.runs_total(session)
        found["pairs"] = dict(await history.pairs_played(session))
    return found


def _raw_reads(connection: Connection, agents: list[str]) -> dict[str, Any]:
    rows = list(connection.execute(select(AgentEvent)))
    task_rows = list(connection.execute(select(Task)))
    match_rows = list(connection.execute(select(Match)))
    found: dict[str, Any] = {}
    for agent in agents:
        failures: dict[tuple[str, CallFailure], list[Any]] = {}
        for e in rows:
            if e.agent_id == agent and e.outcome == "failure" and e.kind in ("dispatch", "ping"):
                seen = failures.setdefault((e.kind, CallFailure.of(e.reason)), [0, None, None])
                seen[0] += 1
                seen[1] = e.at if seen[1] is None else min(seen[1], e.at)
                seen[2] = e.at if seen[2] is None else max(seen[2], e.at)
        statuses: dict[str, list[Any]] = {}
        for t in task_rows:
            if t.agent_id == agent:
                ended = t.completed_at if t.completed_at is not None else t.created_at
                seen = statuses.setdefault(t.status, [0, ended, ended])
                seen[0] += 1
                seen[1], seen[2] = min(seen[1], ended), max(seen[2], ended)
        record: Counter[tuple[str, str, str]] = Counter()
        for m in match_rows:
            for fighter, side in ((m.attacker_id, "attacker"), (m.defender_id, "defender")):
                if fighter == agent:
                    record[m.status, m.outcome or "", side] += 1
        histogram = Counter(
            latency_bucket(e.latency_ms)
            for e in rows
            if e.agent_id == agent and e.kind in ("ping", "dispatch")
        )
        found[agent] = (
            {k: (n, _r(f), _r(la)) for k, (n, f, la) in failures.items()},
            sum(1 for e in rows if e.agent_id == agent and e.outcome == "failure"),
            {k: (n, _r(f), _r(la)) for k, (n, f, la) in statuses.items()},
            dict(record),
            [percentile(histogram.items(), f) for f in (0.5, 0.95, 0.99)],
        )
    found["matches"] = len(match_rows)
    found["runs"] = len(list(connection.execute(select(Run.id))))
    found["pairs"] = dict(Counter(pair_key(m.attacker_id, m.defender_id) for m in match_rows))
    return found


def test_a_percentile_is_the_bound_of_the_bucket_that_holds_it() -> None:
    latencies = [1.0, 20.0, 20.0, 90.0, 400.0, 1e9]
    histogram = Counter(latency_bucket(x) for x in [*latencies, None])
    assert percentile(histogram.items(), 0.5) == 23.71  # the bucket of 20 ms: 10 ** (11 / 8)
    assert percentile(histogram.items(), 0.8) == 421.7
    assert percentile(histogram.items(), 0.99) == math.inf
    assert percentile([], 0.5) is None
    assert latency_bucket(1.0) == 0


def test_a_histogram_is_written_as_its_buckets_ascending_and_read_back() -> None:
    counts = {12: 3, -1: 2, 41: 1, 5: 0}
    assert histogram_text(counts) == "-1:2,12:3,41:1"  # a bucket without events left out
    assert histogram_counts(histogram_text(counts)) == {-1: 2, 12: 3, 41: 1}
    assert histogram_counts("") == {}
