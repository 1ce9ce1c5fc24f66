"""The settlement of a finished run: ranking, fates, contributions, the report, reputations."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from palaestra.protocol import Phase
from palaestra.rules.runs.report import (
    SCORE_FORMULA,
    CandidateFate,
    CandidateRecord,
    RunRecord,
    TaskRecord,
    reputations_after,
    settlement,
    task_href,
)
from palaestra.rules.runs.runflow import CandidateStatus, TaskStatus
from palaestra.rules.runs.scoring import contribution, structure

RUN = RunRecord(goal="Find a niche", launchpad="make-money", merged={"m1": "c1"})
SCOUT = {"candidate_title": "Idea", "target_customer": "Owners", "proposed_solution": "App"}
BUILD = {"execution": {"phases": [1, 2]}, "claims": [1]}
PASS = {"verdict": "pass", "fatal_flaw": False, "score_adjustments": {}, "penalty_points": 0}
FATAL = {"verdict": "eliminate", "fatal_flaw": True, "elimination_reason": "no market"}


def verify(evidence: int, coverage: int) -> dict[str, Any]:
    return {
        "evidence_quality_score": evidence,
        "claim_coverage_score": coverage,
        "overall_confidence": "high",
        "red_flags": [],
    }


def task(
    task_id: str,
    phase: Phase,
    candidate_id: str | None = None,
    *,
    agent: str | None = "agent",
    status: TaskStatus = TaskStatus.SUCCEEDED,
    output: dict[str, Any] | None = None,
    attempt: int = 0,
    completed_at: float = 0.0,
    contribution: float | None = None,
) -> TaskRecord:
    return TaskRecord(
        id=task_id,
        run_id="r1",
        phase=phase,
        candidate_id=candidate_id,
        slot=0,
        attempt=attempt,
        status=status,
        executor=agent or "house-baseline",
        agent_id=agent,
        via="sync" if agent else "house",
        output=output if status is TaskStatus.SUCCEEDED else None,
        contribution=contribution,
        latency_ms=1_000.0,
        sent_at=100.0,
        deadline_at=110.0,
        completed_at=completed_at,
        producer="agent" if agent else "house_baseline",
    )


def candidate(
    candidate_id: str, score: float, status: CandidateStatus = CandidateStatus.SHORTLISTED
) -> CandidateRecord:
    return CandidateRecord(
        id=candidate_id,
        title=f"Idea {candidate_id}",
        status=status,
        scout_output=SCOUT | {"target_customer": f"customers of {candidate_id}"},
        shortlist_score=score,
        source_task_id=f"s-{candidate_id}",
        phase=Phase.SCOUT.value,
    )


#: c1 scores 0.4 * 50 + 0.6 * 70 = 62, c2 0.4 * 90 + 0.6 * 40 = 60; a critic kills c3.
CANDIDATES = [
    candidate("c1", 50.0),
    candidate("d1", 30.0, CandidateStatus.DROPPED),
    candidate("c2", 90.0),
    candidate("m1", 45.0, CandidateStatus.MERGED),
    candidate("c3", 70.0),
]
SHORTLISTED = ["c2", "c3", "c1"]  # in shortlist order
TASKS = [
    task("f-c1", Phase.SCOUT, agent="flaky", status=TaskStatus.FAILED, contribution=0.0),
    task("s-c1", Phase.SCOUT, agent="scout-a", output=SCOUT, attempt=1, completed_at=1.0),
    task("s-d1", Phase.SCOUT, agent=None, output=SCOUT, completed_at=2.0),
    task("s-c2", Phase.SCOUT, agent="scout-b", output=SCOUT, completed_at=3.0),
    task("s-m1", Phase.SCOUT, agent="scout-a", output=SCOUT, completed_at=4.0),
    task("s-c3", Phase.SCOUT, agent="scout-b", output=SCOUT, completed_at=4.0),
    *[
        t
        for cid, coverage in [("c1", (80, 60)), ("c2", (40, 40)), ("c3", (80, 60))]
        for t in (
            task(f"b-{cid}", Phase.BUILD, cid, agent="builder", output=BUILD, completed_at=5.0),
            task(f"v-{cid}", Phase.VERIFY, cid, agent="analyst", output=verify(*coverage)),
            task(
                f"k-{cid}",
                Phase.CRITIQUE,
                cid,
                agent=None,
                output=FATAL if cid == "c3" else PASS,
                completed_at=9.0,
            ),
        )
    ],
]


def settle() -> Any:
    return settlement(RUN, TASKS, CANDIDATES, SHORTLISTED)


def test_the_standing_candidates_are_ranked_by_final_score() -> None:
    report = settle().report
    assert [(e["rank"], e["candidate_id"], e["score"]) for e in report["ranking"]] == [
        (1, "c1", 62.0),
        (2, "c2", 60.0),
    ]
    assert report["ranking"][0]["components"] == {
        "scout_quality": 50.0,
        "verification": 70.0,
        "adjustments": 0.0,
        "penalties": 0.0,
    }
    assert report["ranking"][0]["target_customer"] == "customers of c1"


def test_ties_are_broken_by_shortlist_score_then_id() -> None:
    tied = [replace(c, shortlist_score=50.0) for c in CANDIDATES]
    tasks = [replace(t, output=verify(80, 60)) if t.phase is Phase.VERIFY else t for t in TASKS]
    ranking = settlement(RUN, tasks, tied, SHORTLISTED).report["ranking"]
    assert [e["candidate_id"] for e in ranking] == ["c1", "c2"]
    favoured = [replace(c, shortlist_score=50.1) if c.id == "c2" else c for c in tied]
    ranking = settlement(RUN, tasks, favoured, SHORTLISTED).report["ranking"]
    assert [e["candidate_id"] for e in ranking] == ["c2", "c1"]


def test_a_fatal_critique_sets_the_candidate_apart_with_its_reason() -> None:
    [entry] = settle().report["eliminated"]
    assert (entry["candidate_id"], entry["rank"], entry["reason"]) == ("c3", None, "no market")
    assert entry["score"] == 70.0  # scored all the same


@pytest.mark.parametrize(
    ("candidate_id", "fate"),
    [
        ("c1", CandidateFate(CandidateStatus.RANKED, 1, 62.0, "CRITIQUE")),
        ("c2", CandidateFate(CandidateStatus.RANKED, 2, 60.0, "CRITIQUE")),
        ("c3", CandidateFate(CandidateStatus.ELIMINATED, None, 70.0, "CRITIQUE")),
        ("d1", CandidateFate(CandidateStatus.DROPPED, None, None, "SCOUT")),
        ("m1", CandidateFate(CandidateStatus.MERGED, None, None, "SCOUT")),
    ],
)
def test_every_candidate_has_its_fate(candidate_id: str, fate: CandidateFate) -> None:
    fates = settle().fates
    assert list(fates) == [c.id for c in CANDIDATES]
    assert fates[candidate_id] == fate


def test_the_candidates_not_shortlisted_are_listed_by_shortlist_score() -> None:
    listed = settle().report["not_shortlisted"]
    assert [(e["candidate_id"], e["status"], e["merged_into"]) for e in listed] == [
        ("m1", "MERGED", "c1"),
        ("d1", "DROPPED", None),
    ]
    assert [t["task_id"] for t in listed[1]["tasks"]] == ["s-d1"]


@pytest.mark.parametrize(
    ("scout", "fate"),
    [
        ("s-c1", 0.5 + 62.0 / 200),  # its candidate ranked
        ("s-c2", 0.5 + 60.0 / 200),
        ("s-c3", 0.3),  # eliminated
        ("s-m1", 0.1),  # merged into a twin
    ],
)
def test_a_scouts_contribution_follows_its_candidates_fate(scout: str, fate: float) -> None:
    expected = contribution(1_000.0, 10_000.0, structure(Phase.SCOUT, SCOUT), fate)
    assert settle().contributions[scout] == expected


def test_only_successful_external_tasks_are_settled() -> None:
    settled = settle().contributions
    house = {t.id for t in TASKS if t.agent_id is None}
    failed = {t.id for t in TASKS if t.status is not TaskStatus.SUCCEEDED}
    assert set(settled) == {t.id for t in TASKS} - house - failed
    assert all(0.4 <= value <= 1.0 for value in settled.values())


def test_each_entry_links_its_tasks_with_their_settled_contributions() -> None:
    result = settle()
    [first, _] = result.report["ranking"]
    assert [t["task_id"] for t in first["tasks"]] == ["s-c1", "b-c1", "v-c1", "k-c1"]
    # Who wrote each: the house's critique is the canned baseline's, and says so.
    assert [t["producer"] for t in first["tasks"]] == ["agent"] * 3 + ["house_baseline"]
    assert [t["contribution"] for t in first["tasks"]] == [
        result.contributions["s-c1"],
        result.contributions["b-c1"],
        result.contributions["v-c1"],
        None,  # the house's work is not scored
    ]
    assert first["tasks"][0] == {
        "task_id": "s-c1",
        "phase": "SCOUT",
        "slot": 0,
        "attempt": 1,
        "executor": "scout-a",
        "agent_id": "scout-a",
        "via": "sync",
        "producer": "agent",
        "contribution": result.contributions["s-c1"],
        "href": task_href("r1", "s-c1"),
    }


def test_the_report_counts_the_runs_tasks() -> None:
    report = settle().report
    assert (report["goal"], report["launchpad"], report["score_formula"]) == (
        "Find a niche",
        "make-money",
        SCORE_FORMULA,
    )
    assert report["tasks"] == {
        "total": 15,
        "running": 0,
        "succeeded": 14,
        "failed": 1,
        "timeout": 0,
        "voided": 0,
        "rerouted": 1,
        "house": 4,
    }


def test_contributions_reach_reputations_in_the_order_the_tasks_ended() -> None:
    result = settle()
    agent_of = {t.id: t.agent_id for t in TASKS}
    # The verifications ended first (at 0), then the scouts (ties by id), then the builds.
    ended = ["v-c1", "v-c2", "v-c3", "s-c1", "s-c2", "s-c3", "s-m1", "b-c1", "b-c2", "b-c3"]
    assert result.ended == [(agent_of[i], result.contributions[i]) for i in ended]


def test_the_settlement_is_a_function_of_its_arguments() -> None:
    before = (list(TASKS), list(CANDIDATES))
    assert settle() == settle()
    assert before == (TASKS, CANDIDATES)


@pytest.mark.parametrize(
    ("current", "ended", "expected"),
    [
        ({"a": 0.0}, [("a", 1.0)], {"a": 0.2}),
        ({"a": 0.0}, [("a", 1.0), ("a", 0.0)], {"a": -0.04}),  # 0.2 + 0.2 * (-1 - 0.2)
        ({"a": 0.0}, [("a", 0.0), ("a", 1.0)], {"a": 0.04}),  # the order matters
        ({"a": None}, [("a", 1.0)], {"a": 0.2}),  # no reputation yet counts as 0
        ({"a": 0.5}, [("b", 1.0)], {}),  # an agent no longer there is skipped
        ({"a": 0.5, "b": 0.0}, [], {}),
    ],
)
def test_reputations_after(
    current: dict[str, float | None], ended: list[tuple[str, float]], expected: dict[str, float]
) -> None:
    assert reputations_after(current, ended) == pytest.approx(expected)
