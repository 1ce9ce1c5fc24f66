"""A roll-up always equals the aggregate of the rows it summarises, on both stores.

Hypothesis writes history as the platform does (events in bulk and through the ORM;
tasks and matches opened, moved, re-assigned and deleted; agents deleted), and after
each step the roll-ups are compared with the aggregates computed here, in Python, from
the raw rows: the failure kind from :meth:`CallFailure.of`, the bucket from the bounds.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter, defaultdict
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.engine import Connection

from palaestra.engine.agents.outcomes import EVENT_COLUMNS
from palaestra.ids import new_id
from palaestra.protocol.failures import REASON_PREFIXES, CallFailure
from palaestra.store.bulk import insert_values
from palaestra.store.db import Database
from palaestra.store.models import Agent, AgentEvent, Match, Owner, Run, Task
from palaestra.store.rollups import (
    LATENCY_BOUNDS_MS,
    SPANS,
    AgentRollup,
    MatchRollup,
    TaskRollup,
    latency_bucket,
    percentile,
)
from tests.integration.platform_fixtures import reset_postgres

AGENTS = 3
DAY_S = 86400.0
T0 = 1_790_000_000.0  # a fixed day; times fall within three days of it

reasons = st.sampled_from(
    [None, "", "something else", *(prefix + "x" for prefix, _ in REASON_PREFIXES)]
)
events = st.tuples(
    st.integers(0, AGENTS - 1),
    st.floats(0, 3 * DAY_S, allow_nan=False),
    st.sampled_from(["ping", "dispatch", "verify", "wizard", "status", "probe"]),
    st.sampled_from(["success", "failure", "ACTIVE"]),
    st.one_of(st.none(), st.sampled_from([0.0, 10.0, 10.5, 30000.0, 30001.0]), st.floats(0, 6e4)),
    reasons,
)
task_statuses = st.sampled_from(["RUNNING", "SUCCEEDED", "FAILED", "TIMEOUT", "VOIDED"])
contribution = st.one_of(st.none(), st.floats(-1, 1, allow_nan=False))
agent_or_none = st.one_of(st.none(), st.integers(0, AGENTS - 1))
steps = st.one_of(
    st.tuples(st.just("events"), st.lists(events, max_size=12)),
    st.tuples(st.just("orm_event"), events),
    st.tuples(
        st.just("tasks"),
        st.lists(
            st.tuples(agent_or_none, st.floats(0, 3 * DAY_S), task_statuses, contribution),
            max_size=6,
        ),
    ),
    st.tuples(st.just("move_tasks"), st.tuples(agent_or_none, task_statuses, contribution)),
    st.tuples(st.just("delete_task"), st.just(None)),
    st.tuples(
        st.just("matches"),
        st.lists(
            st.tuples(
                st.integers(0, AGENTS - 1),
                st.integers(0, AGENTS - 1),
                st.sampled_from(["rated", "friendly"]),
                st.sampled_from(["RUNNING", "SCORED", "VOIDED"]),
                st.sampled_from([None, "attacker", "defender", "draw"]),
            ),
            max_size=4,
        ),
    ),
    st.tuples(st.just("score_matches"), st.sampled_from(["attacker", "draw"])),
    st.tuples(st.just("delete_match"), st.just(None)),
    st.tuples(st.just("delete_agent"), st.integers(0, AGENTS - 1)),
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
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(steps, min_size=1, max_size=8))
def test_rollups_equal_the_aggregates_of_their_rows(
    migrated: str, history: list[tuple[str, Any]]
) -> None:
    asyncio.run(_replay(migrated, history))


async def _replay(url: str, history: list[tuple[str, Any]]) -> None:
    db = Database(url)
    try:
        agents, run_id = await _arena(db)
        deleted: set[int] = set()
        for step, value in history:
            await db.transact(partial(_apply, agents=agents, run_id=run_id, step=step, value=value))
            if step == "delete_agent":
                deleted.add(value)
            if step == "orm_event" and value[0] not in deleted:
                agent, at, kind, outcome, latency, reason = value
                async with db.session() as session, session.begin():
                    session.add(
                        AgentEvent(
                            agent_id=agents[agent],
                            at=T0 + at,
                            kind=kind,
                            outcome=outcome,
                            latency_ms=latency,
                            reason=reason,
                        )
                    )
            assert await db.query(_rollups) == await db.query(_aggregates)
    finally:
        await db.transact(lambda c: c.execute(delete(Owner)))
        await db.transact(lambda c: c.execute(delete(Run)))
        await db.dispose()


async def _arena(db: Database) -> tuple[list[str], str]:
    owner, run_id = new_id(), new_id()
    agents = [new_id() for _ in range(AGENTS)]

    def write(connection: Connection) -> None:
        connection.execute(
            insert(Owner),
            [{"id": owner, "name": "o", "token_hash": new_id(), "created_at": T0}],
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
                    "created_at": T0,
                    "updated_at": T0,
                }
                for i, agent in enumerate(agents)
            ],
        )
        connection.execute(
            insert(Run),
            [
                {
                    "id": run_id,
                    "goal": "g",
                    "launchpad": "l",
                    "status": "RUNNING",
                    "phase": "SCOUT",
                    "config": {},
                    "created_at": T0,
                    "updated_at": T0,
                }
            ],
        )

    await db.transact(write)
    return agents, run_id


def _pick(agents: list[str], index: int | None) -> str | None:
    return None if index is None else agents[index]


def _apply(connection: Connection, agents: list[str], run_id: str, step: str, value: Any) -> None:
    tasks, matches, history = Task.__table__, Match.__table__, AgentEvent.__table__
    assert isinstance(tasks, Table)
    assert isinstance(matches, Table)
    assert isinstance(history, Table)
    live = set(connection.scalars(select(Agent.id)))
    if step == "events":
        history_rows = [
            (agents[a], T0 + at, kind, outcome, latency, reason, None)
            for a, at, kind, outcome, latency, reason in value
            if agents[a] in live
        ]
        if history_rows:
            insert_values(connection, history, EVENT_COLUMNS, history_rows)
    elif step == "tasks" and value:
        slot = connection.scalar(select(Task.slot).order_by(Task.slot.desc()).limit(1)) or 0
        connection.execute(
            tasks.insert(),
            [
                {
                    "id": new_id(),
                    "run_id": run_id,
                    "phase": "SCOUT",
                    "slot": slot + 1 + i,
                    "attempt": 0,
                    "agent_id": agent if (agent := _pick(agents, a)) in live else None,
                    "executor": "x",
                    "status": status,
                    "contribution": share,
                    "created_at": T0 + at,
                }
                for i, (a, at, status, share) in enumerate(value)
            ],
        )
    elif step == "move_tasks":
        a, status, share = value
        agent = _pick(agents, a)
        half = select(Task.id).order_by(Task.id).limit(3)
        connection.execute(
            update(Task)
            .where(Task.id.in_(half))
            .values(status=status, contribution=share, agent_id=agent if agent in live else None)
        )
    elif step == "delete_task":
        connection.execute(delete(Task).where(Task.id.in_(select(Task.id).limit(1))))
    elif step == "matches":
        rows = [
            {
                "id": new_id(),
                "attacker_id": agents[x],
                "defender_id": agents[y],
                "ruleset": "cage.v1",
                "kind": kind,
                "status": status,
                "outcome": outcome,
                "seed": 1,
                "material": {},
                "deadline_ms": 1,
                "next_turn": 0,
                "created_at": T0,
                "updated_at": T0,
            }
            for x, y, kind, status, outcome in value
            if agents[x] in live and agents[y] in live
        ]
        if rows:
            connection.execute(matches.insert(), rows)
    elif step == "score_matches":
        connection.execute(
            update(Match).where(Match.status == "RUNNING").values(status="SCORED", outcome=value)
        )
    elif step == "delete_match":
        connection.execute(delete(Match).where(Match.id.in_(select(Match.id).limit(1))))
    elif step == "delete_agent":
        connection.execute(delete(Agent).where(Agent.id == agents[value]))


def _rollups(connection: Connection) -> dict[str, Any]:
    found: dict[str, Any] = {}
    found["events"] = {
        (r.agent_id, r.span, r.start, r.kind, r.outcome, r.failure, r.bucket): (
            r.events,
            _rounded(r.latency_ms_sum),
        )
        for r in connection.execute(select(AgentRollup))
    }
    found["tasks"] = {
        (r.agent_id, r.span, r.start, r.status): (
            r.tasks,
            r.contributed,
            _rounded(r.contribution_sum),
        )
        for r in connection.execute(select(TaskRollup))
        if r.tasks or r.contributed or _rounded(r.contribution_sum)
    }
    found["matches"] = {
        (r.attacker_id, r.defender_id, r.kind, r.status, r.outcome): r.matches
        for r in connection.execute(select(MatchRollup))
        if r.matches
    }
    return found


def _rounded(value: float) -> float:
    return round(value, 6) + 0.0  # -0.0 and float noise from adding and taking out


def _aggregates(connection: Connection) -> dict[str, Any]:
    events: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0.0])
    for e in connection.execute(select(AgentEvent)):
        failure = "" if e.outcome != "failure" else CallFailure.of(e.reason).value
        for span in SPANS:
            key = (e.agent_id, span, _start(e.at, span), e.kind, e.outcome, failure)
            total = events[(*key, latency_bucket(e.latency_ms))]
            total[0] += 1
            total[1] += e.latency_ms or 0.0
    tasks: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for t in connection.execute(select(Task).where(Task.agent_id.is_not(None))):
        for span in SPANS:
            total = tasks[(t.agent_id, span, _start(t.created_at, span), t.status)]
            total[0] += 1
            total[1] += t.contribution is not None
            total[2] += t.contribution or 0.0
    matches: Counter[tuple[Any, ...]] = Counter()
    for m in connection.execute(select(Match)):
        matches[(m.attacker_id, m.defender_id, m.kind, m.status, m.outcome or "")] += 1
    return {
        "events": {k: (int(n), _rounded(s)) for k, (n, s) in events.items()},
        "tasks": {k: (int(n), int(c), _rounded(s)) for k, (n, c, s) in tasks.items()},
        "matches": dict(matches),
    }


def _start(at: float, span: int) -> int:
    return math.floor(at / span) * span


def test_a_percentile_is_the_bound_of_the_bucket_that_holds_it() -> None:
    latencies = [5.0, 20.0, 20.0, 90.0, 400.0, 99999.0]
    histogram = Counter(latency_bucket(x) for x in [*latencies, None])
    assert percentile(histogram.items(), 0.5) == 25.0
    assert percentile(histogram.items(), 0.8) == 500.0
    assert percentile(histogram.items(), 0.99) == math.inf
    assert percentile([], 0.5) is None
    assert latency_bucket(LATENCY_BOUNDS_MS[0]) == 0
