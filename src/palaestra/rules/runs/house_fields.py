"""Jobs of a small model's size: a house answer's prose, one field at a time.

A 270M model cannot write a whole business plan as JSON, but it can write one
line of one when shown two finished examples and the lines written so far.
For each phase this module names the fields the model writes (the rest of
the answer is the baseline's structure), the label and one instruction for
each, a small curated bank of worked examples, the prompt for one field and
the GBNF grammar its answer is generated under: words only, between a
fewest and a most, so no bracket, brace, quote or empty value can come out.
Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from palaestra.protocol.constants import Phase

__all__ = [
    "BANK",
    "FIELDS",
    "Example",
    "FieldJob",
    "bank_text",
    "examples_for",
    "field_grammar",
    "field_prompt",
]


@dataclass(frozen=True, slots=True)
class FieldJob:
    """One field the model writes: where it goes, its label in the prompt, what to write."""

    path: str  # dotted, as the answer check names it
    key: str  # the example bank's key
    label: str
    fewest: int
    most: int


@dataclass(frozen=True, slots=True)
class Example:
    """One worked example: a goal and every field written for it."""

    goal: str
    fields: Mapping[str, str]


_LABELS: Final = {
    "title": "Idea",
    "customer": "Customer",
    "problem": "Problem",
    "solution": "Solution",
    "why_now": "Why now",
    "objective": "Plan objective",
    "milestone": "First milestone",
    "success": "Success check",
    "risk": "Biggest unchecked risk",
    "strength": "Strength",
    "weakness": "Weakness",
}


def _job(path: str, key: str, fewest: int = 5, most: int = 16) -> FieldJob:
    return FieldJob(path, key, _LABELS[key], fewest, most)


#: What the model writes for each phase, in order: each field sees the ones before it.
FIELDS: Final[Mapping[Phase, tuple[FieldJob, ...]]] = {
    Phase.SCOUT: (
        _job("candidate_title", "title", 3, 9),
        _job("target_customer", "customer", 4, 14),
        _job("core_problem", "problem"),
        _job("proposed_solution", "solution"),
        _job("why_now", "why_now"),
    ),
    Phase.BUILD: (
        _job("execution.objective", "objective"),
        _job("execution.first_milestone", "milestone"),
        _job("execution.success_check", "success"),
    ),
    Phase.VERIFY: (_job("red_flags.0", "risk"),),
    Phase.CRITIQUE: (
        _job("strengths.0", "strength"),
        _job("weaknesses.0", "weakness"),
    ),
}

#: The curated examples the prompts show, two at a time.
BANK: Final = (
    Example(
        "Help independent bakeries waste less bread",
        {
            "title": "Evening surplus bread boxes for independent bakeries",
            "customer": "Owners of independent bakeries selling 200 loaves a day",
            "problem": "A fifth of the bread baked each day is thrown away unsold",
            "solution": "An app that sells the leftover loaves as discounted boxes at closing",
            "why_now": "Shoppers now buy discounted surplus food through phone apps",
            "objective": "Prove that ten bakeries will pay a monthly fee to sell leftovers",
            "milestone": "Ten bakeries selling surplus boxes every evening within 60 days",
            "success": "Each bakery throws away at least half as much bread after 90 days",
            "risk": "That shoppers will collect boxes late in the evening",
            "strength": "Bakeries already lose money on every unsold loaf",
            "weakness": "Surplus apps for restaurants already reach the same shoppers",
        },
    ),
    Example(
        "Help dog owners find trusted walkers nearby",
        {
            "title": "Vetted neighbourhood dog walker matching",
            "customer": "Dog owners working full time in city flats",
            "problem": "Owners cannot tell which local walkers are reliable with their dog",
            "solution": "A service that checks walkers' references and tracks each walk by GPS",
            "why_now": "More people own dogs since the pandemic and are back in the office",
            "objective": "Show that owners pay a premium for walkers who were checked",
            "milestone": "Fifty paid walks booked by 20 owners in one district",
            "success": "Most owners book a second week of walks at the full price",
            "risk": "That owners trust a stranger more because of a reference check",
            "strength": "Owners already pay for walks every week, so revenue recurs",
            "weakness": "Large walking apps could copy the reference check quickly",
        },
    ),
    Example(
        "Make invoicing painless for freelance translators",
        {
            "title": "Word-count invoicing assistant for freelance translators",
            "customer": "Freelance translators billing agencies by the word",
            "problem": "Counting words and chasing late agency payments eats hours each month",
            "solution": "A tool that counts delivered words and sends invoices with reminders",
            "why_now": "Agencies moved to online portals that export every job as a file",
            "objective": "Find out whether translators will pay to stop invoicing by hand",
            "milestone": "Twenty translators sending their invoices through the tool",
            "success": "Translators report paid invoices arriving two weeks sooner",
            "risk": "That late payments come from missing invoices rather than slow agencies",
            "strength": "The pain is monthly and easy for a translator to measure",
            "weakness": "Translators earn little and may not pay for another tool",
        },
    ),
    Example(
        "Help small farms sell vegetables directly to restaurants",
        {
            "title": "Weekly farm-to-kitchen vegetable ordering",
            "customer": "Chefs of independent restaurants buying fresh vegetables weekly",
            "problem": "Small farms cannot reach chefs and chefs cannot see what is in season",
            "solution": "A weekly order sheet that lists each farm's harvest for nearby chefs",
            "why_now": "Diners ask where their food comes from and chefs want local produce",
            "objective": "Prove that chefs order from small farms every week through one sheet",
            "milestone": "Five farms supplying twelve restaurants within two months",
            "success": "Restaurants keep ordering weekly after the first month",
            "risk": "That farms can deliver to restaurants at a price chefs accept",
            "strength": "Both sides gain: farms earn more and chefs get fresher produce",
            "weakness": "Delivery costs may eat the margin of small orders",
        },
    ),
)


def examples_for(goal: str, attempt: int) -> tuple[Example, Example]:
    """The two examples shown for ``goal``: another pair on a retry, never the goal's own."""
    usable = [e for e in BANK if e.goal.lower() != goal.strip().lower()]
    start = hashlib.sha256(goal.encode()).digest()[0] + 2 * attempt
    return usable[start % len(usable)], usable[(start + 1) % len(usable)]


def _lines(goal: str, fields: Mapping[str, str], jobs: Sequence[FieldJob]) -> list[str]:
    lines = [f"Goal: {goal}"]
    lines += [f"{job.label}: {fields[job.key]}" for job in jobs if job.key in fields]
    return lines


def field_prompt(
    phase: Phase, job: FieldJob, goal: str, written: Mapping[str, str], attempt: int = 0
) -> str:
    """The text the model continues to write ``job``: a heading, two worked examples in
    full, then the goal and the lines written so far (``written`` by bank key, the scout's
    included for a later phase), ending in the field's label.

    The examples come first and whole, so every field of one answer shares the prompt's
    start and the model evaluates it once."""
    shown = _shown(phase)
    blocks = [_HEADING]
    blocks += ["\n".join(_lines(e.goal, e.fields, shown)) for e in examples_for(goal, attempt)]
    before = shown[: shown.index(job)]
    blocks.append("\n".join([*_lines(goal, written, before), f"{job.label}:"]))
    return "\n\n".join(blocks)


_HEADING: Final = "Business ideas, one for each goal, each line in plain words of its own."


def _shown(phase: Phase) -> tuple[FieldJob, ...]:
    """The fields an example shows for ``phase``: the scout's, then the phase's own."""
    return FIELDS[Phase.SCOUT] + (() if phase is Phase.SCOUT else FIELDS[phase])


def field_grammar(job: FieldJob) -> str:
    """GBNF for ``job``'s answer: ``fewest`` to ``most`` words of letters and digits (one
    ``'s`` or ``n't`` ending each at most), an optional comma between words, an optional full
    stop, and the line's end, where a model that follows the examples' pattern stops."""
    return (
        f'root ::= " "? word (","? " " word){{{job.fewest - 1},{job.most - 1}}} "."? "\\n"\n'
        'word ::= [A-Za-z0-9] [A-Za-z0-9%&$]{0,13} ("\'" [a-z]{1,2})?\n'
    )


def bank_text() -> str:
    """Every text of the bank, as the answer check reads the prompt: a field copied from an
    example is a copy."""
    return "\n".join("\n".join([example.goal, *example.fields.values()]) for example in BANK)
