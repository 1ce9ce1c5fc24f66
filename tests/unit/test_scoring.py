"""Run scoring: every term of every documented formula, and the shortlist's merging."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.protocol import Phase
from palaestra.rules.runs.scoring import (
    CandidateScore,
    ShortlistEntry,
    contribution,
    final_score,
    is_eliminating,
    outcome,
    shortlist,
    shortlist_score,
    structure,
    updated_reputation,
    verification_score,
)
from palaestra.rules.runs.titles import near_duplicate

THIN = {
    "candidate_title": "Idea",
    "target_customer": "People",
    "core_problem": "Pain",
    "proposed_solution": "App",
    "why_now": "Now",
    "claims": [],
    "evidence": [],
}
RICH = {
    "candidate_title": "Timesheet invoicing for agencies",
    "target_customer": "Design agencies with 5 to 20 staff in Europe",
    "core_problem": "Invoicing from timesheets costs 6 hours a month",
    "proposed_solution": "A tool that reads timesheets from the tools agencies use and drafts "
    "invoices for one-click review",
    "why_now": "Accounting APIs stabilised since 2023",
    "claims": [
        {"type": "market", "text": "There are many agencies"},
        {"type": "cost", "text": "Admin costs are high"},
        {"type": "market", "text": "They pay for tools"},
        {"type": "customer", "text": "Owners hate invoicing"},
    ],
    "evidence": [{"kind": "statistic", "summary": f"fact {n}"} for n in range(5)],
}


def test_a_thin_scout_output_scores_its_short_fields_only() -> None:
    # Title "Idea" (1 word < 2) and four one-word fields: 3 points each; no specificity
    # beyond the word ratios (1/6 and 1/12 of ten points), no number, no claims or evidence.
    expected = 5 * 3 + 10 * (1 / 6) + 10 * (1 / 12)
    assert shortlist_score(THIN) == round(expected, 1)


def test_a_rich_scout_output_reaches_the_maximum() -> None:
    assert shortlist_score(RICH) == 100.0


@pytest.mark.parametrize(
    ("change", "delta"),
    [
        ({"claims": RICH["claims"][:1]}, -15.0),  # 5 instead of 15, and one type instead of two
        ({"claims": []}, -20.0),
        ({"evidence": RICH["evidence"][:2]}, -10.0),
        ({"why_now": "Accounting APIs stabilised"}, 0.0),  # still a number elsewhere
        (
            {
                "why_now": "Accounting APIs stabilised",
                "target_customer": "Design agencies with five to twenty staff",
                "core_problem": "Invoicing from timesheets costs hours",
            },
            -10.0,
        ),
        ({"candidate_title": "Invoicing"}, -3.0),
        ({"why_now": ""}, -6.0),
    ],
)
def test_each_shortlist_term(change: dict[str, Any], delta: float) -> None:
    assert shortlist_score(RICH | change) == 100.0 + delta


def test_odd_values_never_break_the_score() -> None:
    odd = {"candidate_title": 3, "claims": "many", "evidence": [1, None]}
    assert shortlist_score(odd) == 0.0


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Invoice autopilot", "invoice autopilot"),
        ("Invoice autopilot for agencies", "The invoice autopilot for small agencies"),
        ("AI bookkeeping for dentists", "AI bookkeeping for dentists!"),
        ("Shift-swap board for care homes", "Shift swap board for care homes"),
        ("Compliance calendar for clinics", "Compliance calender for clinics"),
    ],
)
def test_near_duplicates_are_recognised(first: str, second: str) -> None:
    assert near_duplicate(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Invoice autopilot for agencies", "Payroll autopilot for restaurants"),
        ("Compliance calendar for clinics", "Compliance training for truck drivers"),
        ("Grant tracker for charities", "Grant writing course for students"),
        ("The", "A"),
    ],
)
def test_different_ideas_are_not_merged(first: str, second: str) -> None:
    assert not near_duplicate(first, second)


def test_the_shortlist_merges_duplicates_into_the_better_twin_then_keeps_the_best() -> None:
    entries = [
        ShortlistEntry("a", "Invoice autopilot", 40),
        ShortlistEntry("b", "Invoice autopilot for agencies", 70),
        ShortlistEntry("c", "Grant tracker for charities", 55),
        ShortlistEntry("d", "Quote builder for plumbers", 20),
        ShortlistEntry("e", "Price watch for restaurants", 55),
    ]
    result = shortlist(entries, 2)
    assert result.kept == ["b", "c"]  # c before e: equal scores keep the answering order
    assert result.dropped == ["e", "d"]
    assert result.merged == {"a": "b"}


def test_a_shortlist_larger_than_the_field_keeps_everyone() -> None:
    entries = [ShortlistEntry("a", "One idea", 1), ShortlistEntry("b", "Another plan", 2)]
    assert shortlist(entries, 5).kept == ["b", "a"]


VERIFY = {
    "evidence_quality_score": 80,
    "claim_coverage_score": 60,
    "overall_confidence": "high",
    "red_flags": [],
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, 70.0),
        ({"overall_confidence": "medium"}, 70 * 0.85),
        ({"overall_confidence": "low"}, 70 * 0.7),
        ({"red_flags": ["x", "y"]}, 60.0),
        ({"red_flags": ["x"] * 9}, 45.0),  # at most 25 points off
        ({"evidence_quality_score": 0, "claim_coverage_score": 0, "red_flags": ["x"]}, 0.0),
    ],
)
def test_verification_score(change: dict[str, Any], expected: float) -> None:
    assert verification_score(VERIFY | change) == pytest.approx(expected)


PASS = {
    "score_adjustments": {},
    "penalty_points": 0,
    "verdict": "pass",
    "fatal_flaw": False,
}


def test_final_score_weighs_the_scout_and_the_verification() -> None:
    score = final_score(50, [VERIFY], [PASS])
    assert score == CandidateScore(62.0, 50, 70, 0, 0, eliminated=False)


def test_final_score_without_verification_uses_fifty() -> None:
    assert final_score(50, [], []).score == 0.4 * 50 + 0.6 * 50


def test_critique_adjustments_are_clamped_and_averaged() -> None:
    lifts = PASS | {"score_adjustments": {"market": 25, "team": 20}}  # 20 + 20 -> 30
    cuts = PASS | {"score_adjustments": {"market": -5}}
    score = final_score(50, [VERIFY], [lifts, cuts])
    assert score.adjustments == 12.5
    assert score.score == 62.0 + 12.5


def test_penalties_and_an_eliminate_without_a_fatal_flaw() -> None:
    harsh = PASS | {"penalty_points": 80, "verdict": "eliminate"}  # 50 + 15
    mild = PASS | {"penalty_points": 5}
    score = final_score(50, [VERIFY], [harsh, mild])
    assert score.penalties == 35.0
    assert score.score == 27.0
    assert not score.eliminated


def test_a_fatal_flaw_with_eliminate_removes_the_candidate_with_its_reason() -> None:
    fatal = PASS | {"verdict": "eliminate", "fatal_flaw": True, "elimination_reason": "Illegal"}
    score = final_score(90, [VERIFY], [PASS, fatal])
    assert score.eliminated
    assert score.elimination_reason == "Illegal"
    unexplained = fatal | {"elimination_reason": " ", "weaknesses": ["No buyers"]}
    assert final_score(90, [], [unexplained]).elimination_reason == "No buyers"
    assert not is_eliminating(PASS | {"fatal_flaw": True})  # a flaw, but the critic passed it


def test_the_score_stays_within_zero_and_one_hundred() -> None:
    assert (
        final_score(0, [VERIFY | {"red_flags": ["x"] * 5}], [PASS | {"penalty_points": 50}]).score
        == 0
    )
    lifts = PASS | {"score_adjustments": {"a": 20, "b": 20}}
    assert (
        final_score(
            100, [VERIFY | {"evidence_quality_score": 100, "claim_coverage_score": 100}], [lifts]
        ).score
        == 100
    )


@pytest.mark.parametrize(
    ("phase", "output", "expected"),
    [
        (Phase.SCOUT, RICH, 1.0),
        (Phase.BUILD, {"execution": {"phases": ["a", "b"]}, "claims": [{}]}, 0.25 + 0.5 / 3),
        (Phase.BUILD, {"execution": "oops"}, 0.0),
        (
            Phase.VERIFY,
            {"evidence_assessments": [{"note": "n"}], "claim_assessments": [{}, {"note": ""}]},
            0.6 * 3 / 4 + 0.4 * 1 / 2,
        ),
        (Phase.CRITIQUE, {"strengths": ["a"], "weaknesses": ["b"], "score_adjustments": {}}, 0.5),
        (
            Phase.CRITIQUE,
            {"strengths": ["a", "b"], "weaknesses": ["c", "d"], "score_adjustments": {"x": 1}},
            1.0,
        ),
    ],
)
def test_structure_per_phase(phase: Phase, output: dict[str, Any], expected: float) -> None:
    assert structure(phase, output) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("status", "score", "expected"),
    [
        ("RANKED", 80.0, 0.9),
        ("RANKED", 0.0, 0.5),
        ("ELIMINATED", 50.0, 0.3),
        ("DROPPED", None, 0.2),
        ("MERGED", None, 0.1),
        (None, None, 0.5),
    ],
)
def test_a_scouts_outcome_follows_its_candidates_fate(
    status: str | None, score: float | None, expected: float
) -> None:
    assert outcome(Phase.SCOUT, {}, candidate_status=status, candidate_score=score) == expected


def test_a_builders_outcome_is_the_verifiers_claim_coverage() -> None:
    verifications = [{"claim_coverage_score": 80}, {"claim_coverage_score": 40}]
    assert outcome(Phase.BUILD, {}, verifications=verifications) == pytest.approx(0.6)
    assert outcome(Phase.BUILD, {}) == 0.5


@pytest.mark.parametrize(
    ("verdicts", "mine", "expected"),
    [
        (["pass", "pass"], "pass", 1.0),
        (["pass", "eliminate"], "eliminate", 0.25),  # a tie counts as pass
        (["eliminate", "eliminate", "pass"], "eliminate", 1.0),
        (["eliminate", "eliminate", "pass"], "pass", 0.25),
    ],
)
def test_a_critics_outcome_is_agreement_with_the_majority(
    verdicts: list[str], mine: str, expected: float
) -> None:
    critiques = [{"verdict": v} for v in verdicts]
    assert outcome(Phase.CRITIQUE, {"verdict": mine}, critiques=critiques) == expected


@pytest.mark.parametrize(
    ("confidence", "verdicts", "expected"),
    [
        ("high", ["pass"], 1.0),
        ("medium", ["pass", "pass"], 1.0),
        ("low", ["pass"], 0.25),
        ("low", ["eliminate"], 1.0),
        ("high", ["eliminate", "eliminate"], 0.25),
    ],
)
def test_a_verifiers_outcome_is_agreement_with_the_critics(
    confidence: str, verdicts: list[str], expected: float
) -> None:
    critiques = [{"verdict": v} for v in verdicts]
    got = outcome(Phase.VERIFY, {"overall_confidence": confidence}, critiques=critiques)
    assert got == expected
    assert outcome(Phase.VERIFY, {"overall_confidence": confidence}) == 0.5


@pytest.mark.parametrize(
    ("latency", "deadline", "struct", "fate", "expected"),
    [
        (0, 30_000, 1.0, 1.0, 1.0),
        (30_000, 30_000, 0.0, 0.0, 0.4),
        (15_000, 30_000, 0.5, 0.5, 0.4 + 0.1 + 0.1 + 0.1),
        (60_000, 30_000, 2.0, -1.0, 0.6),  # late and out-of-range terms are clamped
        (10, 0, 1.0, 1.0, 0.8),
    ],
)
def test_contribution(
    latency: float, deadline: float, struct: float, fate: float, expected: float
) -> None:
    assert contribution(latency, deadline, struct, fate) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("before", "score", "after"),
    [
        (0.0, 0.5, 0.0),
        (0.0, 1.0, 0.2),
        (0.0, 0.0, -0.2),
        (1.0, 1.0, 1.0),
        (-1.0, 0.0, -1.0),
        (0.5, 0.0, 0.5 + 0.2 * (-1 - 0.5)),
        (0.0, 3.0, 0.2),  # scores are clamped to 0..1
    ],
)
def test_reputation_is_a_moving_average_of_twice_the_score_minus_one(
    before: float, score: float, after: float
) -> None:
    assert updated_reputation(before, score) == pytest.approx(after)


def test_a_steady_agent_converges_to_its_level() -> None:
    reputation = 0.0
    for _ in range(100):
        reputation = updated_reputation(reputation, 0.8)
    assert reputation == pytest.approx(0.6, abs=1e-4)
