"""Applying the pure status machine to stored agents, with the history it leaves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from palaestra.protocol.constants import Arena
from palaestra.rules.status import (
    AgentState,
    Event,
    PingSchedule,
    Status,
    next_ping_at,
    ping_interval,
    transition,
)
from palaestra.store.models import Agent, AgentEvent

__all__ = [
    "COOLDOWN_S",
    "AgentColumns",
    "apply_event",
    "history",
    "state_of",
]

#: A failed dispatch keeps the agent out of selection this long.
COOLDOWN_S = 60.0


@dataclass(slots=True)
class AgentColumns:
    """The columns of an agent that the status machine and a task's or ping's outcome read
    and write, read without the ORM (:mod:`.outcomes`)."""

    id: str
    arena: str
    status: str
    paused_from: str | None
    consecutive_failures: int
    hold: bool
    last_heartbeat: float | None
    next_ping_at: float | None
    cooldown_until: float | None
    reputation: float
    updated_at: float


def state_of(agent: Agent | AgentColumns) -> AgentState:
    return AgentState(
        status=Status(agent.status),
        failures=agent.consecutive_failures,
        paused_from=Status(agent.paused_from) if agent.paused_from else None,
        hold=agent.hold,
    )


def history(
    agent_id: str,
    now: float,
    kind: str,
    outcome: str,
    *,
    latency_ms: float | None = None,
    reason: str | None = None,
    detail: dict[str, Any] | None = None,
) -> AgentEvent:
    return AgentEvent(
        agent_id=agent_id,
        at=now,
        kind=kind,
        outcome=outcome,
        latency_ms=latency_ms,
        reason=reason,
        detail=detail,
    )


def apply_event(
    agent: Agent | AgentColumns,
    event: Event,
    now: float,
    schedule: PingSchedule,
    *,
    cause: str | None = None,
) -> list[AgentEvent]:
    """Move ``agent`` through ``event``; return the history rows of any status change.

    A success refreshes the heartbeat. When the ping cadence changes (or pings
    stop), the next ping is rescheduled from ``now``.
    """
    before = state_of(agent)
    after = transition(before, event)
    if event is Event.SUCCESS:
        agent.last_heartbeat = now
    agent.consecutive_failures = after.failures
    agent.paused_from = after.paused_from
    agent.hold = after.hold
    agent.updated_at = now
    rows: list[AgentEvent] = []
    if after.status is not before.status:
        agent.status = after.status
        rows.append(
            history(
                agent.id,
                now,
                "status",
                after.status.value,
                reason=f"{before.status.value} -> {after.status.value}"
                + (f" ({cause})" if cause else ""),
                detail={"from": before.status.value, "to": after.status.value, "event": event},
            )
        )
    if agent.arena != Arena.EDGEARENA:
        agent.next_ping_at = None  # cage harnesses answer POST only; they are not pinged
    elif ping_interval(after) != ping_interval(before) or agent.next_ping_at is None:
        agent.next_ping_at = next_ping_at(after, now, schedule)
    if event in (Event.HOLD, Event.RELEASE) and before.hold is not after.hold:
        rows.append(history(agent.id, now, "hold", "set" if after.hold else "released"))
    return rows
