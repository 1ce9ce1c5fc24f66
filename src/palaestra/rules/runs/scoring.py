"""Run scoring, pure: the shortlist, the final candidate score, contributions, reputation.

Every formula the report and the agents' reputations rest on is here, and
written out in the docstrings, because owners and agent authors read them.

Shortlist score of a scout output, 0..100 (:func:`shortlist_score`):

- structure, 30: 6 per text field (title, customer, problem, solution, why
  now) with at least three words (a title: two), 3 if shorter;
- specificity, 30: up to 10 for a target customer described in six words or
  more, 10 when the customer, problem or why-now carries a number (a size, a
  price, a date), up to 10 for a solution described in twelve words or more;
- claims, 20: 5 per claim up to three, 5 more when they have two types or more;
- evidence, 20: 5 per evidence item up to four.

Final candidate score, 0..100 (:func:`final_score`):
``clamp(0.4 * S + 0.6 * V + A - P, 0, 100)`` where S is the shortlist score;
V the mean over the verifications of ``(evidence_quality_score +
claim_coverage_score) / 2`` times the confidence weight (high 1.0, medium
0.85, low 0.7) minus 5 per red flag (at most 25), or 50 without any
verification; A the mean over the critiques of their summed
``score_adjustments`` (each clamped to +-20, the sum to +-30); P the mean over
the critiques of ``penalty_points`` (at most 50) plus 15 when the verdict is
``eliminate`` without a fatal flaw. A critique with verdict ``eliminate`` and
``fatal_flaw: true`` removes the candidate from the ranking.

Contribution of a successful task, 0..1 (:func:`contribution`):
``0.4 * validity + 0.2 * timeliness + 0.2 * structure + 0.2 * outcome``:
validity is 1 (the output passed its schema); timeliness ``1 - latency /
deadline``; structure the phase's richness (:func:`structure`); outcome how
the work fared later in the run (:func:`outcome`; 0.5 until it is known).
A failed task scores 0.

Reputation, in -1..1 with 0 for a newcomer (:func:`updated_reputation`): an
exponential moving average of ``2 * score - 1`` over the agent's tasks,
``reputation += 0.2 * ((2 * score - 1) - reputation)``; a failure pulls it
toward -1, a perfect task toward +1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from palaestra.protocol.constants import Phase
from palaestra.rules.runs.runflow import CandidateStatus
from palaestra.rules.runs.titles import near, title

__all__ = [
    "CONFIDENCE_WEIGHT",
    "REPUTATION_ALPHA",
    "CandidateScore",
    "Shortlist",
    "ShortlistEntry",
    "contribution",
    "final_score",
    "is_eliminating",
    "outcome",
    "shortlist",
    "shortlist_score",
    "structure",
    "updated_reputation",
    "verification_score",
]

CONFIDENCE_WEIGHT: Final = {"high": 1.0, "medium": 0.85, "low": 0.7}
REPUTATION_ALPHA: Final = 0.2

_TEXT_FIELDS: Final = (
    "candidate_title",
    "target_customer",
    "core_problem",
    "proposed_solution",
    "why_now",
)
_DIGIT = re.compile(r"\d")


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def _words(value: Any) -> int:
    return len(value.split()) if isinstance(value, str) else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


# The shortlist.


def shortlist_score(output: Mapping[str, Any]) -> float:
    """A scout output's quality, 0..100 (see the module docstring)."""
    structure_points = 0.0
    for key in _TEXT_FIELDS:
        enough = 2 if key == "candidate_title" else 3
        count = _words(output.get(key))
        structure_points += 6 if count >= enough else (3 if count else 0)
    specific = 10 * min(1.0, _words(output.get("target_customer")) / 6)
    specific += 10 * min(1.0, _words(output.get("proposed_solution")) / 12)
    if any(
        _DIGIT.search(str(output.get(key, "")))
        for key in ("target_customer", "core_problem", "why_now")
    ):
        specific += 10
    claims = [c for c in _list(output.get("claims")) if isinstance(c, dict)]
    claim_points = 5 * min(len(claims), 3)
    if len({c.get("type") for c in claims}) >= 2:
        claim_points += 5
    evidence = [e for e in _list(output.get("evidence")) if isinstance(e, dict)]
    evidence_points = 5 * min(len(evidence), 4)
    return round(structure_points + specific + claim_points + evidence_points, 1)


@dataclass(frozen=True, slots=True)
class ShortlistEntry:
    candidate_id: str
    title: str
    score: float


@dataclass(frozen=True, slots=True)
class Shortlist:
    kept: list[str]  # in rank order
    dropped: list[str]
    merged: dict[str, str] = field(default_factory=dict)  # duplicate -> the candidate kept


def shortlist(entries: Sequence[ShortlistEntry], size: int) -> Shortlist:
    """Merge near-duplicates into their best-scored twin, then keep the ``size`` best.

    Ties keep the order of ``entries`` (the order the scouts answered in).
    """
    order = sorted(range(len(entries)), key=lambda i: (-entries[i].score, i))
    titles = [title(entry.title) for entry in entries]  # each title read once
    survivors: list[int] = []
    merged: dict[str, str] = {}
    for index in order:
        twin = next((s for s in survivors if near(titles[s], titles[index])), None)
        if twin is None:
            survivors.append(index)
        else:
            merged[entries[index].candidate_id] = entries[twin].candidate_id
    kept = [entries[s].candidate_id for s in survivors[:size]]
    dropped = [entries[s].candidate_id for s in survivors[size:]]
    return Shortlist(kept, dropped, merged)


# The final score.


def verification_score(output: Mapping[str, Any]) -> float:
    """One verification's view of a candidate, 0..100."""
    base = (
        _number(output.get("evidence_quality_score")) + _number(output.get("claim_coverage_score"))
    ) / 2
    weight = CONFIDENCE_WEIGHT.get(str(output.get("overall_confidence")), CONFIDENCE_WEIGHT["low"])
    flags = min(len(_list(output.get("red_flags"))), 5)
    return _clamp(base * weight - 5 * flags, 0, 100)


def is_eliminating(critique: Mapping[str, Any]) -> bool:
    return critique.get("verdict") == "eliminate" and critique.get("fatal_flaw") is True


def _adjustment(critique: Mapping[str, Any]) -> float:
    adjustments = critique.get("score_adjustments")
    if not isinstance(adjustments, dict):
        return 0.0
    return _clamp(sum(_clamp(_number(v), -20, 20) for v in adjustments.values()), -30, 30)


def _penalty(critique: Mapping[str, Any]) -> float:
    points = _clamp(_number(critique.get("penalty_points")), 0, 50)
    if critique.get("verdict") == "eliminate" and critique.get("fatal_flaw") is not True:
        points += 15
    return points


@dataclass(frozen=True, slots=True)
class CandidateScore:
    """A candidate's final score and how it was made."""

    score: float
    scout_quality: float
    verification: float
    adjustments: float
    penalties: float
    eliminated: bool
    elimination_reason: str | None = None

    def components(self) -> dict[str, float]:
        return {
            "scout_quality": self.scout_quality,
            "verification": self.verification,
            "adjustments": self.adjustments,
            "penalties": self.penalties,
        }


def _mean(values: Sequence[float], default: float) -> float:
    return sum(values) / len(values) if values else default


def final_score(
    scout_quality: float,
    verifications: Sequence[Mapping[str, Any]],
    critiques: Sequence[Mapping[str, Any]],
) -> CandidateScore:
    """The candidate's final score (see the module docstring)."""
    verification = _mean([verification_score(v) for v in verifications], 50.0)
    adjustments = _mean([_adjustment(c) for c in critiques], 0.0)
    penalties = _mean([_penalty(c) for c in critiques], 0.0)
    score = _clamp(0.4 * scout_quality + 0.6 * verification + adjustments - penalties, 0, 100)
    fatal = next((c for c in critiques if is_eliminating(c)), None)
    reason = None
    if fatal is not None:
        given = fatal.get("elimination_reason")
        weaknesses = [w for w in _list(fatal.get("weaknesses")) if isinstance(w, str)]
        reason = given if isinstance(given, str) and given.strip() else None
        reason = reason or (weaknesses[0] if weaknesses else "a critic found a fatal flaw")
    return CandidateScore(
        score=round(score, 1),
        scout_quality=round(scout_quality, 1),
        verification=round(verification, 1),
        adjustments=round(adjustments, 1),
        penalties=round(penalties, 1),
        eliminated=fatal is not None,
        elimination_reason=reason,
    )


# Contributions and reputation.


def structure(phase: Phase, output: Mapping[str, Any]) -> float:
    """How much usable substance an output carries beyond its schema's minimum, 0..1."""
    match phase:
        case Phase.SCOUT:
            return shortlist_score(output) / 100
        case Phase.BUILD:
            execution = output.get("execution")
            phases = _list(execution.get("phases")) if isinstance(execution, dict) else []
            claims = _list(output.get("claims"))
            return 0.5 * min(1.0, len(phases) / 4) + 0.5 * min(1.0, len(claims) / 3)
        case Phase.VERIFY:
            assessments = _list(output.get("evidence_assessments")) + _list(
                output.get("claim_assessments")
            )
            notes = sum(1 for a in assessments if isinstance(a, dict) and a.get("note"))
            return 0.6 * min(1.0, len(assessments) / 4) + 0.4 * min(1.0, notes / 2)
        case Phase.CRITIQUE:
            points = len(_list(output.get("strengths"))) + len(_list(output.get("weaknesses")))
            adjusted = isinstance(output.get("score_adjustments"), dict) and bool(
                output["score_adjustments"]
            )
            return (
                0.5 * min(1.0, points / 4)
                + 0.25 * adjusted
                + 0.25 * bool(_list(output.get("weaknesses")))
            )


_SCOUT_FATE: Final[Mapping[str, float]] = {
    CandidateStatus.ELIMINATED: 0.3,
    CandidateStatus.DROPPED: 0.2,
    CandidateStatus.MERGED: 0.1,
}


def outcome(
    phase: Phase,
    output: Mapping[str, Any],
    *,
    candidate_status: str | None = None,
    candidate_score: float | None = None,
    verifications: Sequence[Mapping[str, Any]] = (),
    critiques: Sequence[Mapping[str, Any]] = (),
) -> float:
    """How a task's work fared later in the run, 0..1.

    SCOUT: its candidate ranked: ``0.5 + score / 200``; eliminated 0.3, below
    the shortlist 0.2, merged into a twin 0.1. BUILD: the verifiers' mean
    claim coverage. VERIFY: 1 when its confidence (high or medium: positive)
    agrees with the critics' majority verdict, 0.25 when not. CRITIQUE: 1 when
    its verdict is the majority's (ties count as pass), 0.25 when not. 0.5 when
    there is nothing to judge by.
    """
    match phase:
        case Phase.SCOUT:
            if candidate_status == CandidateStatus.RANKED and candidate_score is not None:
                return 0.5 + candidate_score / 200
            return _SCOUT_FATE.get(candidate_status or "", 0.5)
        case Phase.BUILD:
            if not verifications:
                return 0.5
            return _mean([_number(v.get("claim_coverage_score")) / 100 for v in verifications], 0.5)
        case Phase.VERIFY | Phase.CRITIQUE:
            if not critiques:
                return 0.5
            eliminate = sum(1 for c in critiques if c.get("verdict") == "eliminate")
            majority_pass = eliminate * 2 <= len(critiques)
            if phase is Phase.VERIFY:
                positive = output.get("overall_confidence") in ("high", "medium")
                return 1.0 if positive == majority_pass else 0.25
            return 1.0 if (output.get("verdict") != "eliminate") == majority_pass else 0.25


def contribution(
    latency_ms: float, deadline_ms: float, structure_score: float, outcome_score: float = 0.5
) -> float:
    """A successful task's contribution, 0..1 (see the module docstring)."""
    timeliness = 1 - _clamp(latency_ms / deadline_ms, 0, 1) if deadline_ms > 0 else 0.0
    value = (
        0.4
        + 0.2 * timeliness
        + 0.2 * _clamp(structure_score, 0, 1)
        + 0.2 * _clamp(outcome_score, 0, 1)
    )
    return round(value, 4)


def updated_reputation(reputation: float, score: float, alpha: float = REPUTATION_ALPHA) -> float:
    """The reputation after one task that scored ``score`` (0 for a failure)."""
    target = 2 * _clamp(score, 0, 1) - 1
    return round(_clamp(reputation + alpha * (target - reputation), -1, 1), 6)
