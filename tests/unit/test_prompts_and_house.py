"""The production prompts name everything a model must return; the house baseline passes."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.engine.runs.house import HouseAgent
from palaestra.protocol import Phase, validate_output
from palaestra.rules.runs.house_answers import BASELINE, HouseTask, baseline_output
from palaestra.rules.runs.prompts import (
    CONTEXT_LIMIT_CHARS,
    DEFAULT_LAUNCHPAD,
    LAUNCHPADS,
    messages_for,
    system_prompt,
)
from palaestra.rules.runs.titles import near_duplicate

#: Every key of every schema in spec/SCHEMAS.md, nested ones included.
SCHEMA_KEYS = {
    Phase.SCOUT: [
        "candidate_title",
        "target_customer",
        "core_problem",
        "proposed_solution",
        "why_now",
        "claims",
        "evidence",
        '"type"',
        '"text"',
        '"kind"',
        '"summary"',
    ],
    Phase.BUILD: [
        "candidate_id",
        "execution",
        "objective",
        "phases",
        "title",
        "steps",
        "outcome",
        "reality_check",
        "operator_guidance",
        "first_milestone",
        "success_check",
        "claims",
    ],
    Phase.VERIFY: [
        "candidate_id",
        "evidence_assessments",
        "reliability",
        "specificity",
        "note",
        "claim_assessments",
        "supported",
        "confidence",
        "evidence_quality_score",
        "claim_coverage_score",
        "overall_confidence",
        "red_flags",
        '"high" | "medium" | "low"',
    ],
    Phase.CRITIQUE: [
        "candidate_id",
        "strengths",
        "weaknesses",
        "score_adjustments",
        "penalty_points",
        "verdict",
        '"pass" | "eliminate"',
        "fatal_flaw",
        "elimination_reason",
    ],
}
LAUNCHPAD = LAUNCHPADS[DEFAULT_LAUNCHPAD]
CANDIDATE = "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
SCOUT = {
    "candidate_title": "Invoice autopilot",
    "target_customer": "Small agencies",
    "core_problem": "Invoicing eats hours",
    "proposed_solution": "Timesheets in, invoices out",
    "why_now": "APIs matured",
    "claims": [{"type": "market", "text": "Agencies hate invoicing"}],
    "evidence": [{"kind": "survey", "summary": "7 of 10 owners said so"}],
}
BUILD = {"candidate_id": CANDIDATE, "claims": [{"type": "cost", "text": "Cheap to run"}]}


@pytest.mark.parametrize("phase", list(Phase))
def test_each_system_prompt_names_every_key_and_asks_for_one_json_object(phase: Phase) -> None:
    prompt = system_prompt(phase)
    missing = [key for key in SCHEMA_KEYS[phase] if key not in prompt]
    assert missing == []
    assert "Return only one JSON object" in prompt
    assert phase.role.value in prompt
    assert "scor" in prompt.lower()  # scoring guidance


@pytest.mark.parametrize("phase", [Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE])
def test_candidate_prompts_carry_the_id_and_ask_for_it_back(phase: Phase) -> None:
    messages = messages_for(
        phase,
        LAUNCHPAD,
        "Make money from software",
        candidate_id=CANDIDATE,
        scout=SCOUT,
        builds=[BUILD],
        verifications=[{"red_flags": ["thin evidence"]}],
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert f'The candidate id is {CANDIDATE}. Return it verbatim as "candidate_id"' in user
    assert "Make money from software" in user
    assert "Invoice autopilot" in user
    assert "7 of 10 owners said so" in user  # the scout's evidence reaches every later phase
    if phase is not Phase.BUILD:
        assert "Cheap to run" in user  # the builder's claims reach VERIFY and CRITIQUE
    if phase is Phase.CRITIQUE:
        assert "thin evidence" in user  # and CRITIQUE sees the verification


def test_scout_prompts_carry_the_goal_and_a_different_angle_per_slot() -> None:
    users = [
        messages_for(Phase.SCOUT, LAUNCHPAD, "A goal", slot=slot)[1]["content"]
        for slot in range(len(LAUNCHPAD.angles))
    ]
    assert all("Goal: A goal" in user and LAUNCHPAD.title in user for user in users)
    assert len(set(users)) == len(LAUNCHPAD.angles)


def test_candidate_prompts_need_the_candidate() -> None:
    with pytest.raises(ValueError, match="candidate"):
        messages_for(Phase.BUILD, LAUNCHPAD, "goal")


def test_long_earlier_outputs_are_cut() -> None:
    scout = SCOUT | {"evidence": [{"kind": "x", "summary": "y" * 50_000}]}
    user = messages_for(Phase.BUILD, LAUNCHPAD, "g", candidate_id=CANDIDATE, scout=scout)[1]
    assert "[truncated]" in user["content"]
    assert len(user["content"]) < 4 * CONTEXT_LIMIT_CHARS


def house_task(phase: Phase, slot: int = 0, **kw: Any) -> HouseTask:
    return HouseTask(
        phase=phase,
        goal="Make money",
        messages=[],
        deadline_s=30,
        slot=slot,
        candidate_id=None if phase is Phase.SCOUT else CANDIDATE,
        scout=None if phase is Phase.SCOUT else SCOUT,
        builds=[BUILD],
        **kw,
    )


@pytest.mark.parametrize("phase", list(Phase))
def test_the_baseline_passes_every_schema_deterministically(phase: Phase) -> None:
    output = baseline_output(house_task(phase))
    validate_output(phase, output, None if phase is Phase.SCOUT else CANDIDATE)
    assert baseline_output(house_task(phase)) == output


def test_the_baseline_says_it_researched_and_checked_nothing() -> None:
    scout = baseline_output(house_task(Phase.SCOUT))
    assert scout["claims"][0]["type"] == "assumption"
    assert "nothing was researched" in scout["claims"][0]["text"]
    verify = baseline_output(house_task(Phase.VERIFY))
    assert verify["overall_confidence"] == "low"
    assert any("house baseline" in flag for flag in verify["red_flags"])
    assert all(not c["supported"] for c in verify["claim_assessments"])
    assert len(verify["claim_assessments"]) == 2  # the scout's claim and the builder's
    critique = baseline_output(house_task(Phase.CRITIQUE))
    assert any("house baseline" in w for w in critique["weaknesses"])


def test_baseline_scouts_propose_distinct_ideas_per_slot() -> None:
    titles = [
        baseline_output(house_task(Phase.SCOUT, slot))["candidate_title"] for slot in range(5)
    ]
    assert all(not near_duplicate(a, b) for i, a in enumerate(titles) for b in titles[i + 1 :])


@pytest.mark.asyncio
async def test_without_a_model_the_house_answers_with_the_baseline() -> None:
    answer = await HouseAgent(None).answer(house_task(Phase.CRITIQUE))
    assert (answer.executor, answer.model_id, answer.note) == (BASELINE, BASELINE, None)
    assert answer.output["candidate_id"] == CANDIDATE
