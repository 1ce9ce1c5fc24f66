"""The end of a run: the ranked report, settled contributions and the agents' reputations.

The report ranks the shortlisted candidates by the final score of
``rules.scoring`` and links every task that contributed to each one. In the
same transaction each successful external task's contribution is settled
with how its work fared, and each agent's reputation takes those scores in
the order the tasks ended. The run moves RUNNING -> COMPLETED by a
conditional update, so all of this happens once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select, update

from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.runflow import CandidateStatus, RunStatus, TaskStatus
from palaestra.rules.scoring import (
    CandidateScore,
    contribution,
    final_score,
    outcome,
    structure,
    updated_reputation,
)
from palaestra.store.models import Agent, Candidate, Run, Task

if TYPE_CHECKING:
    from palaestra.engine.runs.stepper import Snapshot

__all__ = ["SCORE_FORMULA", "build_report", "settle", "task_href"]

SCORE_FORMULA: Final = (
    "score = clamp(0.4 * scout_quality + 0.6 * verification + adjustments - penalties, 0, 100); "
    "scout_quality: the shortlist score (structure, specificity, claims, evidence); "
    "verification: mean of (evidence_quality_score + claim_coverage_score) / 2 x confidence "
    "(high 1, medium 0.85, low 0.7) - 5 per red flag (max 25), 50 without one; adjustments: mean "
    "of each critique's summed score_adjustments (each +-20, sum +-30); penalties: mean of "
    "penalty_points (max 50) + 15 for 'eliminate' without a fatal flaw; a critique with verdict "
    "'eliminate' and fatal_flaw true removes the candidate"
)


def task_href(run_id: str, task_id: str) -> str:
    return f"/api/runs/{run_id}/tasks/{task_id}"


def _ref(task: Task) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "phase": task.phase,
        "slot": task.slot,
        "attempt": task.attempt,
        "executor": task.executor,
        "agent_id": task.agent_id,
        "via": task.via,
        "contribution": task.contribution,
        "href": task_href(task.run_id, task.id),
    }


def _succeeded(tasks: Iterable[Task], phase: Phase, candidate_id: str) -> list[Task]:
    found = [
        t
        for t in tasks
        if t.phase == phase.value
        and t.candidate_id == candidate_id
        and t.status == TaskStatus.SUCCEEDED
        and t.output is not None
    ]
    return sorted(found, key=lambda t: t.slot)


def build_report(snap: Snapshot) -> tuple[dict[str, Any], dict[str, CandidateScore]]:
    """The report and each shortlisted candidate's score. Sets candidates' status and rank."""
    run, tasks = snap.run, snap.tasks
    by_id = {t.id: t for t in tasks}
    shortlisted = snap.shortlisted() or []
    scores: dict[str, CandidateScore] = {}
    for candidate in shortlisted:
        scores[candidate.id] = final_score(
            candidate.shortlist_score or 0.0,
            [t.output or {} for t in _succeeded(tasks, Phase.VERIFY, candidate.id)],
            [t.output or {} for t in _succeeded(tasks, Phase.CRITIQUE, candidate.id)],
        )
    standing = [c for c in shortlisted if not scores[c.id].eliminated]
    standing.sort(key=lambda c: (-scores[c.id].score, -(c.shortlist_score or 0.0), c.id))
    for rank, candidate in enumerate(standing, start=1):
        candidate.status = CandidateStatus.RANKED.value
        candidate.rank = rank
    for candidate in shortlisted:
        candidate.final_score = scores[candidate.id].score
        candidate.phase = Phase.CRITIQUE.value
        if scores[candidate.id].eliminated:
            candidate.status = CandidateStatus.ELIMINATED.value
            candidate.rank = None

    def contributing(candidate: Candidate) -> list[dict[str, Any]]:
        source = by_id.get(candidate.source_task_id or "")
        found = [source] if source is not None else []
        for phase in (Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE):
            found += _succeeded(tasks, phase, candidate.id)
        return [_ref(t) for t in found]

    def entry(candidate: Candidate) -> dict[str, Any]:
        score = scores[candidate.id]
        return {
            "rank": candidate.rank,
            "candidate_id": candidate.id,
            "title": candidate.title,
            "score": score.score,
            "components": score.components(),
            "target_customer": candidate.scout_output.get("target_customer"),
            "proposed_solution": candidate.scout_output.get("proposed_solution"),
            "tasks": contributing(candidate),
        }

    merged = run.config.get("shortlist", {}).get("merged", {})
    others = [c for c in snap.candidates if c.id not in scores]
    counts = {status.value: 0 for status in TaskStatus}
    for task in tasks:
        counts[task.status] = counts.get(task.status, 0) + 1
    report = {
        "goal": run.goal,
        "launchpad": run.launchpad,
        "score_formula": SCORE_FORMULA,
        "ranking": [entry(c) for c in standing],
        "eliminated": [
            entry(c) | {"reason": scores[c.id].elimination_reason}
            for c in shortlisted
            if scores[c.id].eliminated
        ],
        "not_shortlisted": [
            {
                "candidate_id": c.id,
                "title": c.title,
                "status": c.status,
                "shortlist_score": c.shortlist_score,
                "merged_into": merged.get(c.id),
                "tasks": contributing(c),
            }
            for c in sorted(others, key=lambda c: -(c.shortlist_score or 0.0))
        ],
        "tasks": {
            "total": len(tasks),
            **{status.lower(): count for status, count in counts.items()},
            "rerouted": sum(1 for t in tasks if t.attempt > 0),
            "house": sum(1 for t in tasks if t.agent_id is None),
        },
    }
    return report, scores


def _settled_contributions(snap: Snapshot) -> dict[str, float]:
    """Each successful external task's contribution, now that its work's fate is known."""
    by_source = {c.source_task_id: c for c in snap.candidates}
    settled: dict[str, float] = {}
    for task in snap.tasks:
        if task.status != TaskStatus.SUCCEEDED or task.agent_id is None or task.output is None:
            continue
        phase = Phase(task.phase)
        if phase is Phase.SCOUT:
            candidate = by_source.get(task.id)
            fate = outcome(
                phase,
                task.output,
                candidate_status=candidate.status if candidate else None,
                candidate_score=candidate.final_score if candidate else None,
            )
        else:
            cid = task.candidate_id or ""
            fate = outcome(
                phase,
                task.output,
                verifications=[t.output or {} for t in _succeeded(snap.tasks, Phase.VERIFY, cid)],
                critiques=[t.output or {} for t in _succeeded(snap.tasks, Phase.CRITIQUE, cid)],
            )
        deadline_ms = ((task.deadline_at or 0.0) - (task.dispatched_at or 0.0)) * 1000
        settled[task.id] = contribution(
            task.latency_ms or 0.0, deadline_ms, structure(phase, task.output), fate
        )
    return settled


async def settle(platform: Platform, snap: Snapshot) -> bool:
    """Write the report and its consequences once; ``False`` if the run was already settled."""
    build_report(snap)  # ranks the candidates, whose fate the contributions depend on
    contributions = _settled_contributions(snap)
    for task in snap.tasks:
        if task.id in contributions:
            task.contribution = contributions[task.id]
    report = build_report(snap)[0]  # again, with the settled contributions in the links
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        moved = await session.execute(
            update(Run)
            .where(Run.id == snap.run.id, Run.status == RunStatus.RUNNING.value)
            .values(
                status=RunStatus.COMPLETED.value,
                phase="REPORT",
                report=report,
                finished_at=now,
                updated_at=now,
            )
        )
        if moved.rowcount != 1:  # type: ignore[attr-defined]
            return False
        for candidate in snap.candidates:
            await session.execute(
                update(Candidate)
                .where(Candidate.id == candidate.id)
                .values(
                    status=candidate.status,
                    rank=candidate.rank,
                    final_score=candidate.final_score,
                    phase=candidate.phase,
                    updated_at=now,
                )
            )
        for task_id, value in contributions.items():
            await session.execute(update(Task).where(Task.id == task_id).values(contribution=value))
        ended = sorted(
            (t for t in snap.tasks if t.id in contributions),
            key=lambda t: (t.completed_at or 0.0, t.id),
        )
        agent_ids = sorted({t.agent_id for t in ended if t.agent_id is not None})
        if agent_ids:
            query = select(Agent).where(Agent.id.in_(agent_ids)).order_by(Agent.id)
            if not platform.db.is_sqlite:
                query = query.with_for_update()
            agents = {a.id: a for a in await session.scalars(query)}
            for task in ended:
                agent = agents.get(task.agent_id or "")
                if agent is not None:
                    agent.reputation = updated_reputation(
                        agent.reputation or 0.0, contributions[task.id]
                    )
    snap.run.status = RunStatus.COMPLETED.value
    snap.run.report = report
    return True
