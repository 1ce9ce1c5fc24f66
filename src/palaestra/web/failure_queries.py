"""An agent's failures split by kind, as ``/metrics`` counts them (``protocol.CallFailure``).

Read from the agent's history (its failed dispatches and health pings, each with its reason
line) and from its tasks voided as the platform's fault, which are charged to no agent but
shown beside its own failures so that an owner sees both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

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


async def failure_split(platform: Platform, agent_id: str) -> list[FailureCount]:
    """One row per kind that happened, in :class:`CallFailure`'s order."""
    events = (
        select(AgentEvent.kind, AgentEvent.reason, func.count())
        .where(
            AgentEvent.agent_id == agent_id,
            AgentEvent.outcome == "failure",
            AgentEvent.kind.in_(("dispatch", "ping")),
        )
        .group_by(AgentEvent.kind, AgentEvent.reason)
    )
    voided = select(func.count()).where(
        Task.agent_id == agent_id, Task.status == TaskStatus.VOIDED.value
    )
    dispatches: Counter[CallFailure] = Counter()
    pings: Counter[CallFailure] = Counter()
    async with platform.db.session() as session:
        for kind, reason, count in (await session.execute(events)).all():
            (pings if kind == "ping" else dispatches)[CallFailure.of(reason)] += count
        dispatches[CallFailure.PLATFORM_FAULT] += await session.scalar(voided) or 0
    return [
        FailureCount(kind, dispatches[kind], pings[kind])
        for kind in CallFailure
        if dispatches[kind] or pings[kind]
    ]
