"""Whether a house model's answer reads as an answer: the check every model answer passes.

A schema says an answer has the right shape; it does not say that the texts
in it say anything. A small model under a grammar writes answers that parse
and still say nothing: every field "Petroleum", a milestone ``}, {``, a
weakness ``["], "]``, a title copied from the goal. This check reads the
prose fields of a phase output and names each problem, with the field it is
in, so that a writer can redo just that field. Pure: no I/O, no clock reads.

The rules, per prose field:
- enough words (a title two, every other text three);
- no debris: no bracket or brace, at least half of its characters letters,
  not only punctuation and quotes, no word of more than 20 characters, not
  the same few words over and over;
- distinct: no two prose fields of one answer say the same (compared in
  lower case, punctuation and spacing ignored) or nearly the same (three
  quarters of their words shared), and none repeats the title;
- a verify score above 20 has an assessment behind it;
- not copied: a text of four words or more is not a verbatim piece of the
  prompt (the instructions and examples the model was shown), and no text is
  the goal itself.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from palaestra.protocol.constants import Phase

__all__ = ["AnswerProblem", "answer_problems", "normalised", "prose_fields"]

#: The fewest words a prose field needs: a title two, every other text three.
TITLE_WORDS: Final = 2
TEXT_WORDS: Final = 3
#: A text this many words long or longer that appears verbatim in the prompt is a copy.
COPY_WORDS: Final = 4
#: A text of this many words or more in which one word is over a third is a loop.
REPEAT_WORDS: Final = 6
#: Two fields sharing this share of their words (Jaccard) say nearly the same.
ALIKE: Final = 0.75
#: A longer word is words run together (or an id), not prose.
LONGEST_WORD: Final = 20
#: The most a verify score may be with nothing assessed: the baseline's floor for a
#: candidate nobody checked.
UNASSESSED_SCORE: Final = 20

_DEBRIS: Final = re.compile(r"[\[\]{}<>]")
_NOT_WORD: Final = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class AnswerProblem:
    """One problem of an answer: the field it is in (a dotted path) and what is wrong."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


def normalised(text: str) -> str:
    """``text`` in lower case, every run of other characters than letters and digits one
    space: what "says the same" compares."""
    return _NOT_WORD.sub(" ", text.lower()).strip()


def prose_fields(phase: Phase, output: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """The prose fields of a phase output: ``(path, text, fewest words)``, in order."""
    fields: list[tuple[str, str, int]] = []

    def add(path: str, value: Any, words: int = TEXT_WORDS) -> None:
        fields.append((path, value if isinstance(value, str) else "", words))

    if phase is Phase.SCOUT:
        add("candidate_title", output.get("candidate_title"), TITLE_WORDS)
        for key in ("target_customer", "core_problem", "proposed_solution", "why_now"):
            add(key, output.get(key))
    elif phase is Phase.BUILD:
        execution = _mapping(output.get("execution"))
        for key in ("objective", "first_milestone", "success_check"):
            add(f"execution.{key}", execution.get(key))
        for i, step in enumerate(_items(execution.get("phases"))):
            add(f"execution.phases.{i}.title", step.get("title"), TITLE_WORDS)
            add(f"execution.phases.{i}.objective", step.get("objective"))
    elif phase is Phase.VERIFY:
        for i, flag in enumerate(_list(output.get("red_flags"))):
            add(f"red_flags.{i}", flag)
    elif phase is Phase.CRITIQUE:
        for key in ("strengths", "weaknesses"):
            for i, text in enumerate(_list(output.get(key))):
                add(f"{key}.{i}", text)
    return fields


def answer_problems(
    phase: Phase, output: Mapping[str, Any], *, goal: str, prompt: str = ""
) -> tuple[AnswerProblem, ...]:
    """Every problem of ``output``, an answer to a ``phase`` task for ``goal`` written after
    reading ``prompt``; empty when the answer passes."""
    problems: list[AnswerProblem] = []
    fields = prose_fields(phase, output)
    if not fields and phase is not Phase.VERIFY:  # a verify may find no red flag
        problems.append(AnswerProblem(phase.value.lower(), "has no prose to read"))
    seen: dict[str, str] = {}
    title = normalised(str(output.get("candidate_title", ""))) if phase is Phase.SCOUT else ""
    said_goal = normalised(goal)
    said_prompt = f" {normalised(prompt)} "
    for path, text, fewest in fields:
        reason = _shape_problem(text, fewest)
        said = normalised(text)
        if reason is None and said in seen:
            reason = f"says the same as {seen[said]}"
        if reason is None and (alike := _nearly_alike(said, seen)) is not None:
            reason = f"says nearly the same as {alike}"
        if reason is None and title and path != "candidate_title" and said == title:
            reason = "repeats the title"
        if reason is None and said == said_goal:
            reason = "is the goal itself"
        if reason is None and len(said.split()) >= COPY_WORDS and f" {said} " in said_prompt:
            reason = "is copied from the prompt"
        if reason is not None:
            problems.append(AnswerProblem(path, reason))
        seen.setdefault(said, path)
    if phase is Phase.VERIFY:
        problems.extend(_verify_problems(output))
    return tuple(problems)


def _nearly_alike(said: str, seen: Mapping[str, str]) -> str | None:
    """The earlier field whose words are nearly all this one's (Jaccard index at least
    :data:`ALIKE`), if any."""
    words = set(said.split())
    for other, path in seen.items():
        theirs = set(other.split())
        if words and theirs and len(words & theirs) >= ALIKE * len(words | theirs):
            return path
    return None


def _shape_problem(text: str, fewest: int) -> str | None:
    stripped = text.strip()
    if not stripped:
        return "is empty"
    if _DEBRIS.search(stripped):
        return "has brackets or braces in it"
    letters = sum(c.isalpha() for c in stripped)
    if letters * 2 < len(stripped):
        return "is mostly not letters"
    words = normalised(stripped).split()
    if len(words) < fewest:
        return f"has {len(words)} word{'' if len(words) == 1 else 's'}, fewer than {fewest}"
    if len(words) >= REPEAT_WORDS and 3 * Counter(words).most_common(1)[0][1] > len(words):
        return "repeats its words over and over"
    if any(len(word) > LONGEST_WORD for word in words):
        return f"has a word of more than {LONGEST_WORD} characters"
    return None


def _verify_problems(output: Mapping[str, Any]) -> list[AnswerProblem]:
    """A score for evidence or claims above the floor that no assessment stands behind."""
    problems = []
    for score, listing in (
        ("evidence_quality_score", "evidence_assessments"),
        ("claim_coverage_score", "claim_assessments"),
    ):
        value = output.get(score)
        if (
            isinstance(value, int | float)
            and value > UNASSESSED_SCORE
            and not _items(output.get(listing))
        ):
            problems.append(AnswerProblem(score, f"is {value} with no {listing}"))
    return problems


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in _list(value) if isinstance(item, Mapping)]
