"""Reading one run as it stands: the one reader behind the runs API and the run page.

:func:`read_run` takes the run with its tasks and candidates, each in the order
they were made; :class:`RunRead` and :class:`TaskRead` are what both show of a run
(also in a list) and of a task as they are stored;
:func:`shown_report` is the run's report once the run has ended. Who may read
which run is the caller's business (:func:`palaestra.engine.runs.service.get_run`
for owners, the pages' ``public_runs`` setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from palaestra.platform import Platform
from palaestra.rules.producers import Producer
from palaestra.rules.runs.runflow import RunStatus, TaskStatus
from palaestra.store.models import Candidate, Run, Task

__all__ = ["UNSUCCESSFUL", "RunDetail", "RunRead", "TaskRead", "read_run", "shown_report"]

#: Statuses of a finished task that did not succeed.
UNSUCCESSFUL: tuple[TaskStatus, ...] = (TaskStatus.FAILED, TaskStatus.TIMEOUT)


class RunRead(BaseModel):
    """A run as the API and the pages show it in a list, read from its row or from the
    columns of it a list selects (``RunRead.model_validate(run)``): never its config or
    report. The API names its id ``run_id``."""

    model_config = ConfigDict(from_attributes=True, frozen=True)

    id: str = Field(serialization_alias="run_id")
    status: str
    phase: str
    goal: str
    launchpad: str
    created_at: float
    finished_at: float | None


class TaskRead(BaseModel):
    """A task as the API and the run's pages show it, read from its row
    (``TaskRead.model_validate(task)``): never its payload, headers or output. The API
    names two fields its own way (``task_id``, ``dispatched_at``)."""

    model_config = ConfigDict(from_attributes=True, frozen=True)

    id: str = Field(serialization_alias="task_id")
    phase: str
    candidate_id: str | None
    slot: int
    attempt: int
    status: str
    executor: str = Field(
        description="Who the slot was opened for: the agent's name, or the house's "
        "(house-model, house-baseline); after a house model's fallback, house-baseline"
    )
    agent_id: str | None
    via: str | None
    model_id: str | None = Field(
        description="The model that wrote the answer: as the agent reported it, the house "
        "model's id (the local model's file name, or the PALAESTRA_HOUSE_MODEL the house's "
        "server answered as), or house-baseline for the canned baseline"
    )
    producer: Producer | None = Field(
        description="Who wrote the answer: agent, house_model (the platform's model, "
        "named by model_id) or house_baseline (canned, deterministic lines, also when the "
        "house model failed and the baseline answered in its place: reason says why); "
        "null while no answer was recorded"
    )
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float | None
    reason: str | None
    contribution: float | None
    sent_at: float | None = Field(serialization_alias="dispatched_at")
    deadline_at: float | None
    completed_at: float | None

    @property
    def failed(self) -> bool:
        return self.status in UNSUCCESSFUL

    @property
    def house(self) -> bool:
        return self.agent_id is None


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


def shown_report(run: Run) -> dict[str, Any] | None:
    """The run's report, once the run no longer runs (until then it is not final)."""
    if run.status == RunStatus.RUNNING or not isinstance(run.report, dict):
        return None
    return run.report
