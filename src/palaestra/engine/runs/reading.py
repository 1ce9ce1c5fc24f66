"""Reading one run as it stands: the one reader behind the runs API and the run page.

:func:`read_run` takes the run with its tasks and candidates, each in the order
they were made; :func:`task_facts` is what both show of a task as it is stored;
:func:`shown_report` is the run's report once the run has ended. Who may read
which run is the caller's business (:func:`palaestra.engine.runs.service.get_run`
for owners, the pages' ``public_runs`` setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import select

from palaestra.platform import Platform
from palaestra.rules.runs.runflow import RunStatus
from palaestra.store.models import Candidate, Run, Task

__all__ = ["TASK_FACTS", "RunDetail", "read_run", "shown_report", "task_facts"]

#: The columns of a task that the API and the run page show as they are stored.
TASK_FACTS: Final = (
    "phase",
    "candidate_id",
    "slot",
    "attempt",
    "status",
    "executor",
    "agent_id",
    "via",
    "model_id",
    "producer",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "reason",
    "contribution",
    "dispatched_at",
    "deadline_at",
    "completed_at",
)


@dataclass(frozen=True, slots=True)
class RunDetail:
    run: Run
    tasks: Sequence[Task]
    candidates: Sequence[Candidate]


async def read_run(platform: Platform, run_id: str) -> RunDetail | None:
    """The run ``run_id`` with its tasks and candidates, or None when there is no such run."""
    async with platform.db.session() as session:
        run = await session.get(Run, run_id)
        if run is None:
            return None
        tasks = (
            await session.scalars(
                select(Task).where(Task.run_id == run_id).order_by(Task.created_at, Task.id)
            )
        ).all()
        candidates = (
            await session.scalars(
                select(Candidate)
                .where(Candidate.run_id == run_id)
                .order_by(Candidate.created_at, Candidate.id)
            )
        ).all()
    return RunDetail(run, tasks, candidates)


def task_facts(task: Task) -> dict[str, Any]:
    """``task``'s :data:`TASK_FACTS`, by name."""
    return {name: getattr(task, name) for name in TASK_FACTS}


def shown_report(run: Run) -> dict[str, Any] | None:
    """The run's report, once the run no longer runs (until then it is not final)."""
    if run.status == RunStatus.RUNNING or not isinstance(run.report, dict):
        return None
    return run.report
