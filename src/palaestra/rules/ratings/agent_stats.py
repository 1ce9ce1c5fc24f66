"""The edgearena table: per agent, how valid, how fast and how useful its finished tasks were.

- A task counts once it is finished: SUCCEEDED, FAILED or TIMEOUT. Pending
  and running tasks, and tasks served by the house (no agent), do not.
- **Validity rate**: the share of finished tasks that SUCCEEDED (a valid
  output arrived in time), with its 95% Wilson score interval, which stays
  honest for agents with a handful of tasks.
- **Latency**: p50 and p90 of the recorded latencies of finished tasks.
- **Contribution**: the mean and the sum of the contribution scores the run
  stepper gave the agent's tasks.
- Agents are ranked within their role by reputation, highest first (ties:
  validity rate, then name).

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Final

import numpy as np

from palaestra.rules.runs.runflow import TaskStatus

__all__ = [
    "FINISHED",
    "AgentFacts",
    "AgentRow",
    "TaskOutcome",
    "rank_agents",
    "summarise",
    "wilson_interval",
]

FINISHED: Final = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.TIMEOUT})
_Z95: Final = 1.959963984540054


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What the table needs from one task row."""

    agent_id: str
    status: str
    latency_ms: float | None = None
    contribution: float | None = None


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """What the table needs from one agent row."""

    agent_id: str
    name: str
    role: str
    status: str
    reputation: float


@dataclass(frozen=True, slots=True)
class AgentRow:
    """An edgearena agent, ranked by reputation within its role."""

    rank: int
    agent_id: str
    name: str
    role: str
    status: str
    reputation: float
    tasks: int
    succeeded: int
    validity_rate: float | None
    validity_low: float | None
    validity_high: float | None
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    contribution_mean: float | None
    contribution_total: float


def wilson_interval(successes: int, trials: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if trials <= 0:
        return 0.0, 1.0
    share = successes / trials
    z2 = _Z95 * _Z95
    centre = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z95 * math.sqrt(share * (1 - share) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarise(agent: AgentFacts, tasks: Sequence[TaskOutcome], rank: int = 0) -> AgentRow:
    """One agent's row from its tasks (unfinished ones are ignored)."""
    finished = [t for t in tasks if t.status in FINISHED]
    succeeded = sum(t.status == TaskStatus.SUCCEEDED for t in finished)
    latencies = [t.latency_ms for t in finished if t.latency_ms is not None]
    contributions = [t.contribution for t in finished if t.contribution is not None]
    rate = low = high = None
    if finished:
        rate = succeeded / len(finished)
        low, high = wilson_interval(succeeded, len(finished))
    p50 = p90 = None
    if latencies:
        p50, p90 = (float(v) for v in np.percentile(latencies, [50, 90]))
    return AgentRow(
        **asdict(agent),
        rank=rank,
        tasks=len(finished),
        succeeded=succeeded,
        validity_rate=rate,
        validity_low=low,
        validity_high=high,
        latency_p50_ms=p50,
        latency_p90_ms=p90,
        contribution_mean=sum(contributions) / len(contributions) if contributions else None,
        contribution_total=float(sum(contributions)),
    )


def rank_agents(agents: Iterable[AgentFacts], tasks: Iterable[TaskOutcome]) -> list[AgentRow]:
    """Every agent's row, grouped by role (alphabetically), ranked by reputation in each."""
    by_agent: dict[str, list[TaskOutcome]] = defaultdict(list)
    for task in tasks:
        by_agent[task.agent_id].append(task)
    rows = [summarise(agent, by_agent.get(agent.agent_id, [])) for agent in agents]
    rows.sort(key=lambda r: (r.role, -r.reputation, -(r.validity_rate or 0.0), r.name, r.agent_id))
    ranked: list[AgentRow] = []
    position = 0
    for i, row in enumerate(rows):
        position = 1 if i == 0 or rows[i - 1].role != row.role else position + 1
        ranked.append(replace(row, rank=position))
    return ranked
