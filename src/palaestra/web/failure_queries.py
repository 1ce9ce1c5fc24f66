"""An agent's failures split by kind, as ``/metrics`` counts them (``protocol.CallFailure``).

Read from the agent's roll-ups (``store.rollups``): its failed dispatches and health pings,
each kind told by its reason line as the events were written, and its tasks voided as the
platform's fault, which are charged to no agent but shown beside its own failures so that
an owner sees both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import func, select

from palaestra.platform import Platform
from palaestra.protocol.failures import CallFailure
from palaestra.rules.runflow import TaskStatus
from palaestra.store.rollups import DAY, AgentRollup, TaskRollup

__all__ = ["FailureCount", "failure_split"]


@dataclass(frozen=True, slots=True)
class FailureCount:
    kind: CallFailure
    dispatches: int
    pings: int


async def failure_split(platform: Platform, agent_id: str) -> list[FailureCount]:
    """One row per kind that happened, in :class:`CallFailure`'s order."""
    events = (
        select(AgentRollup.kind, AgentRollup.failure, func.sum(AgentRollup.events))
        .where(
            AgentRollup.agent_id == agent_id,
            AgentRollup.span == DAY,
            AgentRollup.outcome == "failure",
            AgentRollup.kind.in_(("dispatch", "ping")),
        )
        .group_by(AgentRollup.kind, AgentRollup.failure)
    )
    voided = select(func.sum(TaskRollup.tasks)).where(
        TaskRollup.agent_id == agent_id,
        TaskRollup.span == DAY,
        TaskRollup.status == TaskStatus.VOIDED.value,
    )
    dispatches: Counter[CallFailure] = Counter()
    pings: Counter[CallFailure] = Counter()
    async with platform.db.session() as session:
        for kind, failure, count in (await session.execute(events)).all():
            (pings if kind == "ping" else dispatches)[CallFailure(failure)] += int(count)
        dispatches[CallFailure.PLATFORM_FAULT] += int(await session.scalar(voided) or 0)
    return [
        FailureCount(kind, dispatches[kind], pings[kind])
        for kind in CallFailure
        if dispatches[kind] or pings[kind]
    ]
