"""The end of a run, pure: the ranked report, settled contributions and the agents' reputations.

:func:`settlement` takes a finished run as records (its tasks, its
candidates, its shortlist in order) and returns everything the run writes
once, without touching its arguments (the engine reads, calls, and writes it):

- each shortlisted candidate's final score (``rules.runs.scoring``): the
  candidates still standing ranked by it (ties by shortlist score, then id),
  those a critique eliminated set apart;
- each successful external task's contribution, settled with how its work
  fared (a scout's with its candidate's fate, so after the ranking);
- the report, which links every task that contributed to each candidate
  with its settled contribution;
- the (agent, contribution) pairs in the order the tasks ended, which
  :func:`reputations_after` folds into the agents' reputations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from palaestra.protocol.constants import Phase
from palaestra.rules.runs.runflow import CandidateStatus, TaskStatus
from palaestra.rules.runs.scoring import (
    CandidateScore,
    contribution,
    final_score,
    outcome,
    structure,
    updated_reputation,
)

__all__ = [
    "SCORE_FORMULA",
    "CandidateFate",
    "CandidateRecord",
    "RunRecord",
    "Settlement",
    "TaskRecord",
    "build_report",
    "candidate_fates",
    "candidate_scores",
    "reputations_after",
    "settled_contributions",
    "settlement",
    "task_href",
]

SCORE_FORMULA: Final = (
    "score = clamp(0.4 * scout_quality + 0.6 * verification + adjustments - penalties, 0, 100); "
    "scout_quality: the shortlist score (structure, specificity, claims, evidence); "
    "verification: mean of (evidence_quality_score + claim_coverage_score) / 2 x confidence "
    "(high 1, medium 0.85, low 0.7) - 5 per red flag (max 25), 50 without one; adjustments: mean "
    "of each critique's summed score_adjustments (each +-20, sum +-30); penalties: mean of "
    "penalty_points (max 50) + 15 for 'eliminate' without a fatal flaw; a critique with verdict "
    "'eliminate' and fatal_flaw true removes the candidate"
)
_LATER_PHASES: Final = (Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What the report says of the run itself."""

    goal: str
    launchpad: str
    merged: Mapping[str, str] = field(default_factory=dict)  # duplicate -> the candidate kept


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """What the settlement needs of a task."""

    id: str
    run_id: str
    phase: Phase
    candidate_id: str | None
    slot: int
    attempt: int
    status: TaskStatus
    executor: str
    agent_id: str | None = None
    via: str | None = None
    output: Mapping[str, Any] | None = None
    contribution: float | None = None
    latency_ms: float | None = None
    sent_at: float | None = None
    deadline_at: float | None = None
    completed_at: float | None = None
    producer: str | None = None  # rules.producers.Producer: who wrote the output


@dataclass(frozen=True, slots=True)
class CandidateRecord:
    """What the settlement needs of a candidate."""

    id: str
    title: str
    status: CandidateStatus
    scout_output: Mapping[str, Any]
    shortlist_score: float | None = None
    source_task_id: str | None = None
    phase: str | None = None
    final_score: float | None = None
    rank: int | None = None

    @property
    def fate(self) -> CandidateFate:
        return CandidateFate(self.status, self.rank, self.final_score, self.phase)

    def settled(self, fate: CandidateFate) -> CandidateRecord:
        return replace(
            self, status=fate.status, rank=fate.rank, final_score=fate.final_score, phase=fate.phase
        )


@dataclass(frozen=True, slots=True)
class CandidateFate:
    """A candidate's standing once the run is settled."""

    status: CandidateStatus
    rank: int | None
    final_score: float | None
    phase: str | None


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a finished run writes, once."""

    report: dict[str, Any]
    fates: dict[str, CandidateFate]  # every candidate's, in the order given
    contributions: dict[str, float]  # each successful external task's
    ended: list[tuple[str, float]]  # (agent id, contribution), in the order the tasks ended


def task_href(run_id: str, task_id: str) -> str:
    return f"/api/runs/{run_id}/tasks/{task_id}"


_Succeeded = dict[tuple[Phase, str | None], list[TaskRecord]]


def _succeeded_by_work(tasks: Iterable[TaskRecord]) -> _Succeeded:
    """The successful tasks with an output by (phase, candidate), each in slot order."""
    found: _Succeeded = {}
    for t in tasks:
        if t.status is TaskStatus.SUCCEEDED and t.output is not None:
            found.setdefault((t.phase, t.candidate_id), []).append(t)
    for listed in found.values():
        listed.sort(key=lambda t: t.slot)
    return found


def _outputs(succeeded: _Succeeded, phase: Phase, candidate_id: str) -> list[Mapping[str, Any]]:
    return [t.output or {} for t in succeeded.get((phase, candidate_id), ())]


def candidate_scores(
    tasks: Sequence[TaskRecord], shortlisted: Iterable[CandidateRecord]
) -> dict[str, CandidateScore]:
    """Each shortlisted candidate's final score, from its verifications and critiques."""
    succeeded = _succeeded_by_work(tasks)
    return {
        c.id: final_score(
            c.shortlist_score or 0.0,
            _outputs(succeeded, Phase.VERIFY, c.id),
            _outputs(succeeded, Phase.CRITIQUE, c.id),
        )
        for c in shortlisted
    }


def candidate_fates(
    candidates: Iterable[CandidateRecord],
    shortlisted: Sequence[CandidateRecord],
    scores: Mapping[str, CandidateScore],
) -> dict[str, CandidateFate]:
    """Every candidate's fate: the shortlisted ranked or eliminated, the others as they were."""
    fates = {c.id: c.fate for c in candidates}
    standing = [c for c in shortlisted if not scores[c.id].eliminated]
    standing.sort(key=lambda c: (-scores[c.id].score, -(c.shortlist_score or 0.0), c.id))
    for rank, candidate in enumerate(standing, start=1):
        fates[candidate.id] = CandidateFate(
            CandidateStatus.RANKED, rank, scores[candidate.id].score, Phase.CRITIQUE.value
        )
    for candidate in shortlisted:
        if scores[candidate.id].eliminated:
            fates[candidate.id] = CandidateFate(
                CandidateStatus.ELIMINATED, None, scores[candidate.id].score, Phase.CRITIQUE.value
            )
    return fates


def _fate_of_work(
    task: TaskRecord,
    output: Mapping[str, Any],
    succeeded: _Succeeded,
    by_source: Mapping[str | None, CandidateFate],
) -> float:
    if task.phase is Phase.SCOUT:
        fate = by_source.get(task.id)
        return outcome(
            task.phase,
            output,
            candidate_status=fate.status if fate else None,
            candidate_score=fate.final_score if fate else None,
        )
    cid = task.candidate_id or ""
    return outcome(
        task.phase,
        output,
        verifications=_outputs(succeeded, Phase.VERIFY, cid),
        critiques=_outputs(succeeded, Phase.CRITIQUE, cid),
    )


def settled_contributions(
    tasks: Sequence[TaskRecord],
    candidates: Iterable[CandidateRecord],
    fates: Mapping[str, CandidateFate],
) -> dict[str, float]:
    """Each successful external task's contribution, now that its work's fate is known."""
    by_source = {c.source_task_id: fates[c.id] for c in candidates}
    succeeded = _succeeded_by_work(tasks)
    settled: dict[str, float] = {}
    for task in tasks:
        output = task.output
        if task.status is not TaskStatus.SUCCEEDED or task.agent_id is None or output is None:
            continue
        deadline_ms = ((task.deadline_at or 0.0) - (task.sent_at or 0.0)) * 1000
        settled[task.id] = contribution(
            task.latency_ms or 0.0,
            deadline_ms,
            structure(task.phase, output),
            _fate_of_work(task, output, succeeded, by_source),
        )
    return settled


def _ref(task: TaskRecord, settled: Mapping[str, float]) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "phase": task.phase.value,
        "slot": task.slot,
        "attempt": task.attempt,
        "executor": task.executor,
        "agent_id": task.agent_id,
        "via": task.via,
        "producer": task.producer,
        "contribution": settled.get(task.id, task.contribution),
        "href": task_href(task.run_id, task.id),
    }


@dataclass(frozen=True, slots=True)
class _Tasks:
    """The tasks by id and by work, and the contributions settled now (over the tasks')."""

    by_id: Mapping[str | None, list[TaskRecord]]
    succeeded: _Succeeded
    settled: Mapping[str, float]

    @classmethod
    def of(cls, tasks: Sequence[TaskRecord], settled: Mapping[str, float]) -> _Tasks:
        by_id: dict[str | None, list[TaskRecord]] = {}
        for task in tasks:
            by_id.setdefault(task.id, []).append(task)
        return cls(by_id, _succeeded_by_work(tasks), settled)


def _contributing(candidate: CandidateRecord, tasks: _Tasks) -> list[dict[str, Any]]:
    found = list(tasks.by_id.get(candidate.source_task_id, ()))
    for phase in _LATER_PHASES:
        found += tasks.succeeded.get((phase, candidate.id), ())
    return [_ref(t, tasks.settled) for t in found]


def _entry(candidate: CandidateRecord, score: CandidateScore, tasks: _Tasks) -> dict[str, Any]:
    return {
        "rank": candidate.rank,
        "candidate_id": candidate.id,
        "title": candidate.title,
        "score": score.score,
        "components": score.components(),
        "target_customer": candidate.scout_output.get("target_customer"),
        "proposed_solution": candidate.scout_output.get("proposed_solution"),
        "tasks": _contributing(candidate, tasks),
    }


def _not_shortlisted(
    candidate: CandidateRecord, merged: Mapping[str, str], tasks: _Tasks
) -> dict[str, Any]:
    return {
        "candidate_id": candidate.id,
        "title": candidate.title,
        "status": candidate.status.value,
        "shortlist_score": candidate.shortlist_score,
        "merged_into": merged.get(candidate.id),
        "tasks": _contributing(candidate, tasks),
    }


def _task_counts(tasks: Sequence[TaskRecord]) -> dict[str, int]:
    counts = {status.value.lower(): 0 for status in TaskStatus}
    for task in tasks:
        counts[task.status.value.lower()] += 1
    return {
        "total": len(tasks),
        **counts,
        "rerouted": sum(1 for t in tasks if t.attempt > 0),
        "house": sum(1 for t in tasks if t.agent_id is None),
    }


def build_report(
    run: RunRecord,
    tasks: Sequence[TaskRecord],
    candidates: Sequence[CandidateRecord],
    shortlisted: Sequence[str],
    scores: Mapping[str, CandidateScore],
) -> dict[str, Any]:
    """The report of a settled run: ``candidates`` with their fates, ``tasks`` with their
    contributions, ``shortlisted`` the shortlist's ids in order, ``scores`` their scores."""
    return _report(run, tasks, candidates, shortlisted, scores, {})


def _report(
    run: RunRecord,
    tasks: Sequence[TaskRecord],
    candidates: Sequence[CandidateRecord],
    shortlisted: Sequence[str],
    scores: Mapping[str, CandidateScore],
    settled: Mapping[str, float],
) -> dict[str, Any]:
    """:func:`build_report`, with the contributions ``settled`` now taken over the tasks'."""
    linked = _Tasks.of(tasks, settled)
    by_id = {c.id: c for c in candidates}
    ranked = sorted(
        (c for c in candidates if c.id in scores and c.rank is not None), key=lambda c: c.rank or 0
    )
    others = [c for c in candidates if c.id not in scores]
    return {
        "goal": run.goal,
        "launchpad": run.launchpad,
        "score_formula": SCORE_FORMULA,
        "ranking": [_entry(c, scores[c.id], linked) for c in ranked],
        "eliminated": [
            _entry(by_id[cid], scores[cid], linked) | {"reason": scores[cid].elimination_reason}
            for cid in shortlisted
            if scores[cid].eliminated
        ],
        "not_shortlisted": [
            _not_shortlisted(c, run.merged, linked)
            for c in sorted(others, key=lambda c: -(c.shortlist_score or 0.0))
        ],
        "tasks": _task_counts(tasks),
    }


def settlement(
    run: RunRecord,
    tasks: Sequence[TaskRecord],
    candidates: Sequence[CandidateRecord],
    shortlisted: Sequence[str],
) -> Settlement:
    """Everything a finished run writes (see the module docstring); ``shortlisted`` are the
    shortlist's candidate ids in shortlist order."""
    by_id = {c.id: c for c in candidates}
    chosen = [by_id[cid] for cid in shortlisted]
    scores = candidate_scores(tasks, chosen)
    fates = candidate_fates(candidates, chosen, scores)
    contributions = settled_contributions(tasks, candidates, fates)
    settled_candidates = [c.settled(fates[c.id]) for c in candidates]
    ended = sorted(
        (t for t in tasks if t.id in contributions), key=lambda t: (t.completed_at or 0.0, t.id)
    )
    return Settlement(
        report=_report(run, tasks, settled_candidates, shortlisted, scores, contributions),
        fates=fates,
        contributions=contributions,
        ended=[(t.agent_id or "", contributions[t.id]) for t in ended],
    )


def reputations_after(
    reputations: Mapping[str, float | None], ended: Iterable[tuple[str, float]]
) -> dict[str, float]:
    """The new reputation of each agent in ``reputations`` (its current one) that ``ended``
    moves, taking the contributions in order; an agent not in ``reputations`` is skipped."""
    moved: dict[str, float] = {}
    for agent_id, score in ended:
        if agent_id in reputations:
            current = moved.get(agent_id, reputations[agent_id] or 0.0)
            moved[agent_id] = updated_reputation(current, score)
    return moved
