"""A run as the store holds it, read in one go for a step: the run, its tasks, its candidates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.runflow import CandidateStatus, RunSizes, TaskStatus, TaskView
from palaestra.store.models import Candidate, Run, Task

__all__ = ["Snapshot", "load_snapshot"]

_SHORTLISTED = (CandidateStatus.SHORTLISTED, CandidateStatus.RANKED, CandidateStatus.ELIMINATED)


@dataclass
class Snapshot:
    """A run as the store holds it."""

    run: Run
    tasks: list[Task]
    candidates: list[Candidate]

    @property
    def sizes(self) -> RunSizes:
        return RunSizes.of(self.run.config.get("sizes", {}))

    @property
    def max_reroutes(self) -> int:
        return int(self.run.config.get("max_reroutes", 2))

    def deadline_s(self, phase: Phase) -> float:
        deadlines = self.run.config.get("deadlines_ms", {})
        return float(deadlines.get(phase.value, phase.deadline_ms)) / 1000

    def views(self) -> list[TaskView]:
        return [
            TaskView(
                t.id,
                Phase(t.phase),
                t.candidate_id,
                t.slot,
                t.attempt,
                TaskStatus(t.status),
                t.agent_id,
            )
            for t in self.tasks
        ]

    def outputs(self, phase: Phase, candidate_id: str) -> list[dict[str, Any]]:
        found = [
            t
            for t in self.tasks
            if t.phase == phase.value
            and t.candidate_id == candidate_id
            and t.status == TaskStatus.SUCCEEDED
            and t.output is not None
        ]
        return [t.output for t in sorted(found, key=lambda t: t.slot) if t.output is not None]

    def shortlisted(self) -> list[Candidate] | None:
        if self.run.phase == Phase.SCOUT.value:
            return None
        kept = [c for c in self.candidates if c.status in _SHORTLISTED]
        return sorted(kept, key=lambda c: (-(c.shortlist_score or 0.0), c.created_at, c.id))

    def context(
        self, phase: Phase, candidate_id: str | None
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
        """What a task of ``phase`` for ``candidate_id`` is told: (the scout's output, the
        builds, the verifications) so far."""
        if candidate_id is None:
            return None, [], []
        candidate = next(c for c in self.candidates if c.id == candidate_id)
        builds = self.outputs(Phase.BUILD, candidate_id) if phase is not Phase.BUILD else []
        verifications = self.outputs(Phase.VERIFY, candidate_id) if phase is Phase.CRITIQUE else []
        return candidate.scout_output, builds, verifications


async def load_snapshot(platform: Platform, run_id: str) -> Snapshot | None:
    """The run ``run_id`` with its tasks and candidates, or ``None`` if there is no such run."""
    async with platform.db.session() as session:
        run = await session.get(Run, run_id)
        if run is None:
            return None
        tasks = (await session.scalars(select(Task).where(Task.run_id == run_id))).all()
        candidates = (
            await session.scalars(select(Candidate).where(Candidate.run_id == run_id))
        ).all()
    return Snapshot(run, list(tasks), list(candidates))
