"""The answer check: every house model answer reads as an answer, or says why not.

A table of answers the local model really gave (the noise that reached the run
pages) and near-misses the check must let through, phase by phase.
"""

from __future__ import annotations

import re
from typing import Any, Final

import pytest

from palaestra.protocol import Phase
from palaestra.rules.runs.answer_check import answer_problems, normalised, prose_fields
from palaestra.rules.runs.house_answers import HouseTask, baseline_output
from palaestra.rules.runs.house_fields import (
    BANK,
    FIELDS,
    bank_text,
    examples_for,
    field_grammar,
    field_prompt,
)

GOAL: Final = "Help dentists fill cancelled appointments"

GOOD_SCOUT: Final = {
    "candidate_title": "Last-minute appointment waitlist for dental clinics",
    "target_customer": "Dentists running small clinics with two or three chairs",
    "core_problem": "Cancelled appointments leave chairs empty and cost hundreds a day",
    "proposed_solution": "A waitlist that texts patients when a slot opens up",
    "why_now": "Patients now expect to book and rebook from their phones",
    "claims": [],
    "evidence": [],
}


def scout(**fields: str) -> dict[str, Any]:
    return GOOD_SCOUT | fields


# (answer, the problems expected as "field: reason", goal, prompt)
SCOUT_CASES: Final = [
    ("good", scout(), []),
    (
        "every field one word",
        scout(
            candidate_title="Petroleum industry",
            target_customer="Petroleum",
            core_problem="Petroleum",
            proposed_solution="Petroleum",
            why_now="Petroleum",
        ),
        [
            "target_customer: has 1 word, fewer than 3",
            "core_problem: has 1 word, fewer than 3",
            "proposed_solution: has 1 word, fewer than 3",
            "why_now: has 1 word, fewer than 3",
        ],
    ),
    (
        "a one-word title",
        scout(candidate_title="Software"),
        ["candidate_title: has 1 word, fewer than 2"],
    ),
    ("an empty field", scout(why_now="   "), ["why_now: is empty"]),
    (
        "braces",
        scout(core_problem="}, { the problem is here"),
        ["core_problem: has brackets or braces in it"],
    ),
    (
        "brackets",
        scout(why_now='["], "] and more words'),
        ["why_now: has brackets or braces in it"],
    ),
    ("quotes and commas only", scout(why_now='", ", ", "'), ["why_now: is mostly not letters"]),
    (
        "two fields alike",
        scout(core_problem="Invoicing eats hours", proposed_solution="invoicing  eats hours."),
        ["proposed_solution: says the same as core_problem"],
    ),
    (
        "a field repeating the title",
        scout(proposed_solution="Last-minute appointment waitlist for dental clinics!"),
        ["proposed_solution: says the same as candidate_title"],
    ),
    (
        "two fields nearly alike",
        scout(
            core_problem="Dentists can't fill all of their chairs",
            proposed_solution="Dentists who can't fill all of their chairs",
        ),
        ["proposed_solution: says nearly the same as core_problem"],
    ),
    ("the goal as a field", scout(target_customer=GOAL), ["target_customer: is the goal itself"]),
    (
        "a bank example copied",
        scout(why_now=BANK[0].fields["why_now"]),
        ["why_now: is copied from the prompt"],
    ),
    (
        "a loop",
        scout(target_customer="Dentist and patient who are's's's's's's's'"),
        ["target_customer: repeats its words over and over"],
    ),
    (
        "words run together",
        scout(why_now="Students are notallowedtousethecanteen now"),
        ["why_now: has a word of more than 20 characters"],
    ),
    # Near-misses that pass: the goal's words carried into a field, a short piece of the
    # prompt, two fields sharing words but not saying the same.
    ("the goal's words carried", scout(target_customer="Dentists with cancelled appointments"), []),
    ("a three-word piece of the prompt", scout(why_now="Shoppers now buy"), []),
    ("shared words", scout(core_problem="Cancelled appointments cost dentists money daily"), []),
]


@pytest.mark.parametrize(
    ("output", "expected"), [c[1:] for c in SCOUT_CASES], ids=[c[0] for c in SCOUT_CASES]
)
def test_scout_answers(output: dict[str, Any], expected: list[str]) -> None:
    problems = answer_problems(Phase.SCOUT, output, goal=GOAL, prompt=bank_text())
    assert [str(p) for p in problems] == expected


def build(**execution: Any) -> dict[str, Any]:
    base = baseline_output(
        HouseTask(Phase.BUILD, GOAL, (), 90.0, candidate_id="c1", scout=GOOD_SCOUT)
    )
    base["execution"] = base["execution"] | execution
    return base


def critique(strengths: list[str], weaknesses: list[str]) -> dict[str, Any]:
    base = baseline_output(HouseTask(Phase.CRITIQUE, GOAL, (), 30.0, candidate_id="c1"))
    return base | {"strengths": strengths, "weaknesses": weaknesses}


def verify(**fields: Any) -> dict[str, Any]:
    base = baseline_output(
        HouseTask(Phase.VERIFY, GOAL, (), 30.0, candidate_id="c1", scout=GOOD_SCOUT)
    )
    return base | fields


OTHER_CASES: Final = [
    ("build: baseline", Phase.BUILD, build(), []),
    (
        "build: objective 1, milestone debris, check 0",
        Phase.BUILD,
        build(objective="1", first_milestone="}, {", success_check="0"),
        [
            "execution.objective: is mostly not letters",
            "execution.first_milestone: has brackets or braces in it",
            "execution.success_check: is mostly not letters",
        ],
    ),
    (
        "critique: strength and weakness alike",
        Phase.CRITIQUE,
        critique(["Invoicing eats hours"], ["Invoicing eats hours"]),
        ["weaknesses.0: says the same as strengths.0"],
    ),
    (
        "critique: bracket debris",
        Phase.CRITIQUE,
        critique(["A real paying customer"], ['["], "]']),
        ["weaknesses.0: has brackets or braces in it"],
    ),
    (
        "critique: no prose at all",
        Phase.CRITIQUE,
        critique([], []),
        ["critique: has no prose to read"],
    ),
    (
        "critique: baseline",
        Phase.CRITIQUE,
        critique(["Names a paying customer"], ["No evidence that they pay yet"]),
        [],
    ),
    ("verify: baseline", Phase.VERIFY, verify(), []),
    (
        "verify: a high score with no assessment",
        Phase.VERIFY,
        verify(evidence_quality_score=80, evidence_assessments=[]),
        ["evidence_quality_score: is 80 with no evidence_assessments"],
    ),
    (
        "verify: the baseline's floor with nothing assessed",
        Phase.VERIFY,
        verify(evidence_quality_score=20, evidence_assessments=[]),
        [],
    ),
]


@pytest.mark.parametrize(
    ("phase", "output", "expected"), [c[1:] for c in OTHER_CASES], ids=[c[0] for c in OTHER_CASES]
)
def test_other_phases(phase: Phase, output: dict[str, Any], expected: list[str]) -> None:
    assert [str(p) for p in answer_problems(phase, output, goal=GOAL)] == expected


@pytest.mark.parametrize("phase", list(Phase))
def test_the_baseline_passes_the_check_for_every_phase(phase: Phase) -> None:
    task = HouseTask(
        phase, GOAL, (), 30.0, candidate_id=None if phase is Phase.SCOUT else "c1", scout=GOOD_SCOUT
    )
    assert answer_problems(phase, baseline_output(task), goal=GOAL) == ()


def test_normalised_ignores_case_punctuation_and_spacing() -> None:
    assert (
        normalised("  Invoicing, EATS hours! ")
        == normalised("invoicing eats-hours")
        == "invoicing eats hours"
    )


def test_every_field_the_writer_fills_is_one_the_check_reads() -> None:
    for phase, jobs in FIELDS.items():
        task = HouseTask(
            phase,
            GOAL,
            (),
            30.0,
            candidate_id=None if phase is Phase.SCOUT else "c1",
            scout=GOOD_SCOUT,
        )
        read = {path for path, _text, _words in prose_fields(phase, baseline_output(task))}
        assert {job.path for job in jobs} <= read, phase
        assert all(job.fewest >= 3 for job in jobs)  # above every minimum of the check


def test_the_bank_passes_its_own_check_and_has_every_field() -> None:
    keys = {job.key for jobs in FIELDS.values() for job in jobs}
    for example in BANK:
        assert set(example.fields) == keys
        fields = example.fields
        answer = scout(
            candidate_title=fields["title"],
            target_customer=fields["customer"],
            core_problem=fields["problem"],
            proposed_solution=fields["solution"],
            why_now=fields["why_now"],
        )
        assert answer_problems(Phase.SCOUT, answer, goal=example.goal) == ()


def test_a_field_prompt_shows_two_examples_and_the_lines_so_far() -> None:
    job = FIELDS[Phase.SCOUT][2]  # the problem, after the title and the customer
    written = {"title": "Dental waitlist", "customer": "Dentists with empty chairs"}
    prompt = field_prompt(Phase.SCOUT, job, GOAL, written)
    assert prompt.count("Goal: ") == 3
    assert prompt.count("Why now: ") == 2  # the examples are shown whole
    assert prompt.endswith(
        f"Goal: {GOAL}\nIdea: Dental waitlist\nCustomer: Dentists with empty chairs\nProblem:"
    )


def test_the_fields_of_one_answer_share_the_prompts_start() -> None:
    jobs = FIELDS[Phase.BUILD]
    first = field_prompt(Phase.BUILD, jobs[0], GOAL, {})
    last = field_prompt(Phase.BUILD, jobs[-1], GOAL, {"objective": "x", "milestone": "y"})
    start = first.rsplit("\n\n", 1)[0]
    assert last.startswith(start)
    assert "Success check: " in start  # the examples show the phase's fields too


def test_a_retry_shows_other_examples_and_never_the_goals_own() -> None:
    first, retry = examples_for(GOAL, 0), examples_for(GOAL, 1)
    assert {e.goal for e in first}.isdisjoint(e.goal for e in retry)
    own = BANK[0].goal
    assert all(e.goal != own for attempt in range(4) for e in examples_for(own, attempt))


def test_a_field_grammar_bounds_the_words_and_allows_no_bracket() -> None:
    grammar = field_grammar(FIELDS[Phase.SCOUT][0])
    assert '" "? word (","? " " word){2,8} "."? "\\n"' in grammar
    classes = re.findall(r"\[([^\]]*)\]", grammar.split("word ::=")[1])
    assert classes
    assert not any(c in "".join(classes) for c in '[]{}"<>')
