"""An agent's failures split by kind, as ``/metrics`` counts them (``protocol.CallFailure``).

Read from the agent's history (its failed dispatches and health pings, each with its reason
line) and from its tasks voided as the platform's fault, which are charged to no agent but
shown beside its own failures so that an owner sees both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import func, select

from palaestra.platform import Platform
from palaestra.protocol.failures import CallFailure
from palaestra.rules.runflow import TaskStatus
from palaestra.store.models import AgentEvent, Task

__all__ = ["FailureCount", "failure_split"]


@dataclass(frozen=True, slots=True)
class FailureCount:
    kind: CallFailure
    dispatches: int
    pings: int
    #: When the first and the latest failure of this kind happened (compared apart).
    first_at: float | None = field(default=None, compare=False)
    last_at: float | None = field(default=None, compare=False)


async def failure_split(platform: Platform, agent_id: str) -> list[FailureCount]:
    """One row per kind that happened, in :class:`CallFailure`'s order, with when the
    first and the latest happened: a failure said 77 times is one row, not 77."""
    events = (
        select(
            AgentEvent.kind,
            AgentEvent.reason,
            func.count(),
            func.min(AgentEvent.at),
            func.max(AgentEvent.at),
        )
        .where(
            AgentEvent.agent_id == agent_id,
            AgentEvent.outcome == "failure",
            AgentEvent.kind.in_(("dispatch", "ping")),
        )
        .group_by(AgentEvent.kind, AgentEvent.reason)
    )
    ended = func.coalesce(Task.completed_at, Task.created_at)
    voided = select(func.count(), func.min(ended), func.max(ended)).where(
        Task.agent_id == agent_id, Task.status == TaskStatus.VOIDED.value
    )
    dispatches: Counter[CallFailure] = Counter()
    pings: Counter[CallFailure] = Counter()
    seen: dict[CallFailure, tuple[float, float]] = {}

    def saw(kind: CallFailure, first: float | None, last: float | None) -> None:
        if first is not None and last is not None:
            low, high = seen.get(kind, (first, last))
            seen[kind] = (min(low, first), max(high, last))

    async with platform.db.session() as session:
        for kind, reason, count, first, last in (await session.execute(events)).all():
            failure = CallFailure.of(reason)
            (pings if kind == "ping" else dispatches)[failure] += count
            saw(failure, first, last)
        count, first, last = (await session.execute(voided)).one()
        dispatches[CallFailure.PLATFORM_FAULT] += count or 0
        saw(CallFailure.PLATFORM_FAULT, first, last)
    return [
        FailureCount(kind, dispatches[kind], pings[kind], *seen.get(kind, (None, None)))
        for kind in CallFailure
        if dispatches[kind] or pings[kind]
    ]
