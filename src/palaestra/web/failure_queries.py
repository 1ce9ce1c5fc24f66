"""An agent's failures split by kind, as ``/metrics`` counts them (``protocol.CallFailure``).

Read from the agent's roll-ups and the rows after them (``store.history``): its failed
dispatches and health pings, each kind told by its reason line, and its tasks voided as
the platform's fault, which are charged to no agent but
shown beside its own failures so that an owner sees both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from palaestra.platform import Platform
from palaestra.protocol.failures import CallFailure
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.store.history import Tally, agent_failures, tasks_by_status

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
    async with platform.db.session() as session:
        events = await agent_failures(session, agent_id, ("dispatch", "ping"))
        voided = (await tasks_by_status(session, agent_id)).get(TaskStatus.VOIDED.value, Tally())
    dispatches: Counter[CallFailure] = Counter()
    pings: Counter[CallFailure] = Counter()
    seen: dict[CallFailure, Tally] = {}
    for (kind, failure), counted in events.items():
        (pings if kind == "ping" else dispatches)[failure] += counted.count
        seen[failure] = seen.get(failure, Tally()) + counted
    dispatches[CallFailure.PLATFORM_FAULT] += voided.count
    seen[CallFailure.PLATFORM_FAULT] = seen.get(CallFailure.PLATFORM_FAULT, Tally()) + voided
    return [
        FailureCount(kind, dispatches[kind], pings[kind], seen[kind].first, seen[kind].last)
        for kind in CallFailure
        if dispatches[kind] or pings[kind]
    ]
