"""What a step writes as a run moves on: candidates, the shortlist, the run's phase, timeouts.

Each function reads a :class:`Snapshot`, decides with ``rules`` and writes;
each is safe to repeat (a conditional update, or rows keyed by the task
they come from), and keeps the snapshot in step with what it wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from sqlalchemy import update

from palaestra.engine.runs.recorder import Finish
from palaestra.engine.runs.snapshot import Snapshot
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.protocol.failures import Failure
from palaestra.rules.runflow import CandidateStatus, RunStatus, TaskStatus, phase_done
from palaestra.rules.scoring import ShortlistEntry, shortlist, shortlist_score
from palaestra.store.models import Candidate, Run, Task

__all__ = ["make_candidates", "make_shortlist", "note_phase", "timeouts"]

_PHASE_ORDER: Final = (Phase.SCOUT, Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)


async def make_candidates(platform: Platform, snap: Snapshot) -> None:
    """Each successful SCOUT task without a candidate yet becomes one."""
    known = {c.source_task_id for c in snap.candidates}
    now = platform.clock.now()
    scouted = sorted(
        (
            t
            for t in snap.tasks
            if t.phase == Phase.SCOUT.value
            and t.status == TaskStatus.SUCCEEDED
            and t.id not in known
            and t.output is not None
        ),
        key=lambda t: (t.completed_at or 0.0, t.slot),
    )
    if not scouted:
        return
    fresh = []
    for task in scouted:
        output = task.output or {}
        fresh.append(
            Candidate(
                id=new_id(),
                run_id=snap.run.id,
                source_task_id=task.id,
                title=str(output.get("candidate_title", "")).strip()[:500],
                scout_output=output,
                status=CandidateStatus.PROPOSED.value,
                phase=Phase.SCOUT.value,
                shortlist_score=shortlist_score(output),
                created_at=now,
                updated_at=now,
            )
        )
    async with platform.db.session() as session, session.begin():
        session.add_all(fresh)
    snap.candidates += fresh


async def make_shortlist(platform: Platform, snap: Snapshot) -> None:
    """Once every SCOUT slot is done: merge near-duplicates, keep the best, move to BUILD."""
    if snap.run.phase != Phase.SCOUT.value:
        return
    if not phase_done(snap.views(), Phase.SCOUT, None, snap.sizes):
        return
    ordered = sorted(snap.candidates, key=lambda c: (c.created_at, c.id))
    entries = [ShortlistEntry(c.id, c.title, c.shortlist_score or 0.0) for c in ordered]
    result = shortlist(entries, snap.sizes.shortlist)
    now = platform.clock.now()
    status = dict.fromkeys(result.kept, CandidateStatus.SHORTLISTED)
    status |= dict.fromkeys(result.dropped, CandidateStatus.DROPPED)
    status |= dict.fromkeys(result.merged, CandidateStatus.MERGED)
    config = dict(snap.run.config)
    config["shortlist"] = {
        "kept": result.kept,
        "dropped": result.dropped,
        "merged": result.merged,
    }
    async with platform.db.session() as session, session.begin():
        moved = await session.execute(
            update(Run)
            .where(Run.id == snap.run.id, Run.phase == Phase.SCOUT.value)
            .values(phase=Phase.BUILD.value, config=config, updated_at=now)
        )
        if moved.rowcount != 1:  # type: ignore[attr-defined]
            return
        for candidate in snap.candidates:
            await session.execute(
                update(Candidate)
                .where(Candidate.id == candidate.id)
                .values(status=status[candidate.id].value, updated_at=now)
            )
    snap.run.phase = Phase.BUILD.value
    snap.run.config = config
    for candidate in snap.candidates:
        candidate.status = status[candidate.id].value


async def note_phase(platform: Platform, snap: Snapshot) -> None:
    """Keep ``run.phase`` at the furthest phase any task has reached."""
    reached = {t.phase for t in snap.tasks}
    furthest = next((p for p in reversed(_PHASE_ORDER) if p.value in reached), Phase.SCOUT)
    if snap.run.phase == Phase.SCOUT.value or snap.run.phase == furthest.value:
        return
    if _PHASE_ORDER.index(furthest) <= _PHASE_ORDER.index(Phase(snap.run.phase)):
        return
    async with platform.db.session() as session, session.begin():
        await session.execute(
            update(Run)
            .where(Run.id == snap.run.id, Run.status == RunStatus.RUNNING.value)
            .values(phase=furthest.value, updated_at=platform.clock.now())
        )
    snap.run.phase = furthest.value


def timeouts(tasks: Iterable[Task]) -> list[Finish]:
    """The end of each of ``tasks`` (RUNNING, sent to an agent) as TIMEOUT at its deadline."""
    ends = []
    for task in tasks:
        assert task.deadline_at is not None
        deadline_ms = round((task.deadline_at - (task.dispatched_at or task.deadline_at)) * 1000)
        ends.append(
            Finish(
                task_id=task.id,
                run_id=task.run_id,
                phase=Phase(task.phase),
                status=TaskStatus.TIMEOUT,
                via="deadline",
                executor=task.executor,
                agent_id=task.agent_id,
                reason=Failure.timeout(deadline_ms).reason,
                latency_ms=float(deadline_ms),
            )
        )
    return ends
