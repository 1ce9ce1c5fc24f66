"""What tasks and health pings leave on their agents, written in bulk: the one writer.

A task's end (:mod:`palaestra.engine.runs.recorder`) and a health ping
(:mod:`.health`) each count as a success or a failure of an agent: a history
row, a step of the status machine (with a history row for any status change),
and for a failed task a cooldown and a reputation step. :func:`write_outcomes`
applies a batch of them in the caller's transaction: the agents concerned are
read (locked on PostgreSQL, in id order), moved in memory in the outcomes'
order, and written back with one bulk UPDATE of :data:`STATE_COLUMNS` and one
bulk INSERT of history rows (:data:`EVENT_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from sqlalchemy import Table, select
from sqlalchemy.engine import Connection

from palaestra.engine.agents.lifecycle import COOLDOWN_S, AgentColumns, apply_event, state_of
from palaestra.rules.runs.scoring import updated_reputation
from palaestra.rules.status import Event, PingSchedule, settled_by_success
from palaestra.store.bulk import insert_values, json_text, update_rows
from palaestra.store.lists import one_of
from palaestra.store.models import Agent, AgentEvent

__all__ = ["EVENT_COLUMNS", "STATE_COLUMNS", "AgentOutcome", "write_outcomes"]

#: The agent columns an outcome may change, written back for every agent concerned.
STATE_COLUMNS: Final = (
    "status",
    "paused_from",
    "consecutive_failures",
    "hold",
    "last_heartbeat",
    "next_ping_at",
    "cooldown_until",
    "reputation",
    "updated_at",
)
#: A history row's columns, in the order of :attr:`AgentOutcome.history`.
EVENT_COLUMNS: Final = ("agent_id", "at", "kind", "outcome", "latency_ms", "reason", "detail")
_READ_CHUNK: Final = 500  # agents read per query

_AGENTS = cast(Table, Agent.__table__)
_EVENTS = cast(Table, AgentEvent.__table__)


@dataclass(frozen=True, slots=True)
class AgentOutcome:
    """One success or failure of an agent, with its history row built ahead of the
    transaction (on the event loop: the store's writer thread only decides and writes)."""

    agent_id: str
    ok: bool
    cause: str  # said in the reason of a status change it brings
    penalized: bool  # a failed task: a cooldown and a reputation step
    history: tuple[Any, ...]  # in EVENT_COLUMNS' order

    @classmethod
    def of(
        cls,
        agent_id: str,
        now: float,
        kind: str,
        ok: bool,
        *,
        cause: str,
        latency_ms: float | None = None,
        reason: str | None = None,
        detail: dict[str, Any] | None = None,
        penalty: bool = False,
    ) -> AgentOutcome:
        """A ``kind`` history row (``dispatch``, ``ping``); with ``penalty``, a failure costs
        the agent a cooldown and a reputation step."""
        outcome = "success" if ok else "failure"
        row = (agent_id, now, kind, outcome, latency_ms, reason, json_text(detail))
        return cls(agent_id, ok, cause, penalty and not ok, row)


def write_outcomes(
    connection: Connection, outcomes: Sequence[AgentOutcome], now: float, schedule: PingSchedule
) -> list[str]:
    """Apply ``outcomes`` to their agents in order and write agents and history back, in the
    caller's transaction; return the statuses agents moved into. An outcome of an agent
    deleted meanwhile is dropped."""
    agents = _read(connection, sorted({o.agent_id for o in outcomes}))
    histories: list[tuple[Any, ...]] = []
    changes: list[str] = []
    settled: set[str] = set()  # agents whom one more success at ``now`` leaves as they are
    for outcome in outcomes:
        agent = agents.get(outcome.agent_id)
        if agent is None:
            continue
        histories.append(outcome.history)
        if outcome.ok and agent.id in settled:
            continue  # the usual case: the agent's first success of the batch did it all
        settled.discard(agent.id)
        for row in _apply(agent, outcome, now, schedule):
            histories.append(
                tuple(
                    json_text(row.detail) if c == "detail" else getattr(row, c)
                    for c in EVENT_COLUMNS
                )
            )
            if row.kind == "status":
                changes.append(row.outcome)
        if outcome.ok and settled_by_success(state_of(agent)):
            settled.add(agent.id)
    rows = [{c: getattr(a, c) for c in STATE_COLUMNS} | {"agent_id": a.id} for a in agents.values()]
    update_rows(connection, _AGENTS, rows, match={"id": "agent_id"})
    insert_values(connection, _EVENTS, EVENT_COLUMNS, histories)
    return changes


def _apply(
    agent: AgentColumns, outcome: AgentOutcome, now: float, schedule: PingSchedule
) -> list[AgentEvent]:
    if outcome.penalized:
        agent.cooldown_until = now + COOLDOWN_S
        agent.reputation = updated_reputation(agent.reputation or 0.0, 0.0)
    event = Event.SUCCESS if outcome.ok else Event.FAILURE
    return apply_event(agent, event, now, schedule, cause=outcome.cause)


_READ: Final = select(*(_AGENTS.c[c] for c in AgentColumns.__slots__)).where(
    one_of(_AGENTS.c.id, "ids")
)
#: On PostgreSQL the rows are locked in id order: two batches never wait on each other's
#: rows crosswise. On SQLite the transaction holds the write lock already.
#: NO KEY UPDATE, not UPDATE: inserting a task takes a key-share lock on its agent's row,
#: which a plain FOR UPDATE would wait on (and, across two transactions, deadlock with).
_READ_LOCKED: Final = _READ.order_by(_AGENTS.c.id).with_for_update(key_share=True)


def _read(connection: Connection, ids: list[str]) -> dict[str, AgentColumns]:
    query = _READ if connection.dialect.name == "sqlite" else _READ_LOCKED
    agents: dict[str, AgentColumns] = {}
    for start in range(0, len(ids), _READ_CHUNK):
        for row in connection.execute(query, {"ids": ids[start : start + _READ_CHUNK]}):
            agents[row.id] = AgentColumns(*row)
    return agents
