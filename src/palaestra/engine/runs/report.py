"""The end of a run written: the report, the candidates' fates, contributions and reputations.

What to write is decided by ``rules.report.settlement`` from the run as the
store holds it; this module only reads the run's records out of a
:class:`Snapshot` and writes the settlement in one transaction. The run
moves RUNNING -> COMPLETED by a conditional update first, so all of this
happens once.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.runs.snapshot import Snapshot
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.report import (
    CandidateFate,
    CandidateRecord,
    RunRecord,
    Settlement,
    TaskRecord,
    reputations_after,
    settlement,
)
from palaestra.rules.runflow import CandidateStatus, RunStatus, TaskStatus
from palaestra.store.models import Agent, Candidate, Run, Task

__all__ = ["settle"]


def _task(task: Task) -> TaskRecord:
    return TaskRecord(
        id=task.id,
        run_id=task.run_id,
        phase=Phase(task.phase),
        candidate_id=task.candidate_id,
        slot=task.slot,
        attempt=task.attempt,
        status=TaskStatus(task.status),
        executor=task.executor,
        agent_id=task.agent_id,
        via=task.via,
        output=task.output,
        contribution=task.contribution,
        latency_ms=task.latency_ms,
        dispatched_at=task.dispatched_at,
        deadline_at=task.deadline_at,
        completed_at=task.completed_at,
    )


def _candidate(candidate: Candidate) -> CandidateRecord:
    return CandidateRecord(
        id=candidate.id,
        title=candidate.title,
        status=CandidateStatus(candidate.status),
        scout_output=candidate.scout_output,
        shortlist_score=candidate.shortlist_score,
        source_task_id=candidate.source_task_id,
        phase=candidate.phase,
        final_score=candidate.final_score,
        rank=candidate.rank,
    )


def _settlement_of(snap: Snapshot) -> Settlement:
    """What the finished run ``snap`` writes (``rules.report.settlement`` of its records)."""
    run = RunRecord(
        goal=snap.run.goal,
        launchpad=snap.run.launchpad,
        merged=snap.run.config.get("shortlist", {}).get("merged", {}),
    )
    return settlement(
        run,
        [_task(t) for t in snap.tasks],
        [_candidate(c) for c in snap.candidates],
        [c.id for c in snap.shortlisted() or []],
    )


async def settle(platform: Platform, snap: Snapshot) -> bool:
    """Write the run's settlement once; ``False`` if the run was already settled."""
    settled = _settlement_of(snap)
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        moved = await session.execute(
            update(Run)
            .where(Run.id == snap.run.id, Run.status == RunStatus.RUNNING.value)
            .values(
                status=RunStatus.COMPLETED.value,
                phase="REPORT",
                report=settled.report,
                finished_at=now,
                updated_at=now,
            )
        )
        if moved.rowcount != 1:  # type: ignore[attr-defined]
            return False
        await _write_fates(session, settled.fates, now)
        for task_id, value in settled.contributions.items():
            await session.execute(update(Task).where(Task.id == task_id).values(contribution=value))
        await _move_reputations(session, platform, settled.ended)
    return True


async def _write_fates(session: AsyncSession, fates: dict[str, CandidateFate], now: float) -> None:
    for candidate_id, fate in fates.items():
        await session.execute(
            update(Candidate)
            .where(Candidate.id == candidate_id)
            .values(
                status=fate.status.value,
                rank=fate.rank,
                final_score=fate.final_score,
                phase=fate.phase,
                updated_at=now,
            )
        )


async def _move_reputations(
    session: AsyncSession, platform: Platform, ended: Sequence[tuple[str, float]]
) -> None:
    """Each agent's reputation takes the run's contributions, its row locked meanwhile."""
    agent_ids = sorted({agent_id for agent_id, _ in ended})
    if not agent_ids:
        return
    query = select(Agent).where(Agent.id.in_(agent_ids)).order_by(Agent.id)
    if not platform.db.is_sqlite:
        query = query.with_for_update()
    agents = {a.id: a for a in await session.scalars(query)}
    moved = reputations_after({a.id: a.reputation for a in agents.values()}, ended)
    for agent_id, reputation in moved.items():
        agents[agent_id].reputation = reputation
