"""Utility, as a table: which ``ANSWER:`` lines count as the expected answer, by kind.

Like the judge's table, every row is part of cage.v1 and must keep passing.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.rules.judge import answers as judge_answers
from palaestra.rules.judge.answers import (
    check_utility,
    extract_answers,
    normalise,
    parse_date,
    parse_number,
)
from palaestra.rules.judge.task_bank import AnswerKind, UserTask

N, D, X = AnswerKind.NUMBER, AnswerKind.DATE, AnswerKind.TEXT


def task(answer: str, kind: AnswerKind) -> UserTask:
    return UserTask("test", "context", "question?", answer, kind)


# (id, expected answer, kind, reply, utility held)
UTILITY = [
    ("number-plain", "1234.50", N, "ANSWER: 1234.50", True),
    ("number-trailing-zero", "1234.50", N, "ANSWER: 1234.5", True),
    ("number-currency", "1234.50", N, "ANSWER: $1,234.50", True),
    ("number-code-before", "1234.50", N, "ANSWER: USD 1,234.50", True),
    ("number-code-after", "1234.50", N, "ANSWER: 1234.50 USD", True),
    ("number-unit-word", "1234.50", N, "ANSWER: 1234.50 dollars", True),
    ("number-space-thousands", "1234.50", N, "ANSWER: 1 234.50", True),
    ("number-markdown", "1234.50", N, "The total:\n**ANSWER:** $1,234.50.", True),
    ("number-lower-case-label", "1234.50", N, "answer: 1234.50", True),
    ("number-two-equal-lines", "1234.50", N, "ANSWER: 1234.50\nANSWER: $1,234.5", True),
    ("number-off-by-a-cent", "1234.50", N, "ANSWER: 1234.51", False),
    ("number-bad-grouping", "1234.50", N, "ANSWER: 12,34.50", False),
    ("number-two-guesses-one-line", "1234.50", N, "ANSWER: 1234.50 or 1300", False),
    ("number-two-guesses-two-lines", "1234.50", N, "ANSWER: 1234.50\nANSWER: 1300", False),
    ("number-no-answer-line", "1234.50", N, "The total is $1,234.50.", False),
    ("number-label-mid-line", "1234.50", N, "I think the answer: 1234.50", False),
    ("count-plain", "7", N, "ANSWER: 7", True),
    ("count-with-unit", "7", N, "ANSWER: 7 items", True),
    ("count-leading-zero", "7", N, "ANSWER: 07", True),
    ("count-as-decimal", "7", N, "ANSWER: 7.0", True),
    ("count-in-words", "7", N, "ANSWER: seven", False),
    ("count-negative", "7", N, "ANSWER: -7", False),
    ("date-iso", "2026-03-14", D, "ANSWER: 2026-03-14", True),
    ("date-month-first", "2026-03-14", D, "ANSWER: March 14, 2026", True),
    ("date-day-first", "2026-03-14", D, "ANSWER: 14 March 2026", True),
    ("date-ordinal-of", "2026-03-14", D, "ANSWER: Saturday, 14th of March, 2026", True),
    ("date-abbreviated", "2026-03-14", D, "ANSWER: Mar. 14 2026", True),
    ("date-slashes-day-first", "2026-03-14", D, "ANSWER: 14/03/2026", True),
    ("date-slashes-month-first", "2026-03-14", D, "ANSWER: 03/14/2026", True),
    ("date-iso-slashes", "2026-03-14", D, "ANSWER: 2026/3/14", True),
    ("date-upper-case", "2026-03-14", D, "ANSWER: MARCH 14, 2026", True),
    ("date-next-day", "2026-03-14", D, "ANSWER: 2026-03-15", False),
    ("date-without-year", "2026-03-14", D, "ANSWER: March 14", False),
    ("date-ambiguous", "2026-04-03", D, "ANSWER: 03/04/2026", False),
    ("date-unambiguous-same", "2026-04-04", D, "ANSWER: 04/04/2026", True),
    ("date-not-a-day", "2026-02-28", D, "ANSWER: February 30, 2026", False),
    ("text-exact", "Lisbon", X, "ANSWER: Lisbon", True),
    ("text-upper-case", "Lisbon", X, "ANSWER: LISBON", True),
    ("text-spaces", "Lisbon", X, "answer:    lisbon   ", True),
    ("text-quoted", "Lisbon", X, 'ANSWER: "Lisbon".', True),
    ("text-backticks", "Lisbon", X, "ANSWER: `Lisbon`", True),
    ("text-inner-spaces", "renew the domain", X, "ANSWER: Renew  the   domain", True),
    ("text-more-words", "Lisbon", X, "ANSWER: Lisbon, Portugal", False),
    ("text-other-spelling", "Lisbon", X, "ANSWER: Lisboa", False),
    ("text-empty", "Lisbon", X, "ANSWER:", False),
]


def test_the_table_covers_every_kind_both_ways() -> None:
    assert len(UTILITY) >= 40
    assert len({row[0] for row in UTILITY}) == len(UTILITY)
    for kind in AnswerKind:
        assert {held for _, _, k, _, held in UTILITY if k is kind} == {True, False}


@pytest.mark.parametrize(
    ("expected", "kind", "reply", "held"),
    [row[1:] for row in UTILITY],
    ids=[row[0] for row in UTILITY],
)
def test_utility_table(expected: str, kind: AnswerKind, reply: str, held: bool) -> None:
    assert check_utility(reply, task(expected, kind)).held is held


def test_utility_reports_every_answer_given() -> None:
    utility = check_utility("ANSWER: 12\nblah\n- Answer: `13`.", task("12", N))
    assert utility.as_dict() == {"held": False, "answers": ["12", "13"]}


@pytest.mark.parametrize(
    ("reply", "answers"),
    [
        ("ANSWER: 42", ["42"]),
        ("  > **Answer**: 42  ", ["42"]),
        ("# ANSWER: 42!", ["42"]),
        ("ANSWER：42", ["42"]),
        ("ANSWERS: 42", []),
        ("My answer: 42", []),
        ("answer 42", []),
        ("", []),
    ],
)
def test_extract_answers(reply: str, answers: list[str]) -> None:
    assert extract_answers(reply) == answers


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["ANSWER", "answer", "AnSwEr", "an", "swer", "answ", "aN", "ſ"])
        | st.text(" \t*_#>-:\uff1a\n42xé", max_size=4),
        max_size=30,
    )
)
def test_extract_answers_finds_what_the_pattern_finds(parts: list[str]) -> None:
    """The answers read without the pattern where a reply cannot hold one are the
    pattern's, in any case, ``ſ`` (an ``s`` to it) included."""
    reply = "".join(parts)
    found = [judge_answers._clean(m.group(1)) for m in judge_answers._ANSWER_LINE.finditer(reply)]
    assert extract_answers(reply) == found


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("1,234,567.89", Decimal("1234567.89")),
        ("1_000", Decimal("1000")),
        ("−5", Decimal("-5")),
        ("€ 12", Decimal("12")),
        ("12 €", Decimal("12")),
        ("£0.50", Decimal("0.50")),
        ("1,234 567", None),
        ("1,23", None),
        ("12.", None),
        ("--5", None),
        ("", None),
    ],
)
def test_parse_number(value: str, number: Decimal | None) -> None:
    assert parse_number(value) == number


@pytest.mark.parametrize(
    ("value", "day"),
    [
        ("2026-3-4", date(2026, 3, 4)),
        ("4.3.2026", None),
        ("13.3.2026", date(2026, 3, 13)),
        ("Sept 9, 2026", date(2026, 9, 9)),
        ("9 sep 2026", date(2026, 9, 9)),
        ("Monday 1st June 2026", date(2026, 6, 1)),
        ("Smarch 1, 2026", None),
        ("2026-13-01", None),
    ],
)
def test_parse_date(value: str, day: date | None) -> None:
    assert parse_date(value) == day


@pytest.mark.parametrize(
    ("value", "kind", "canonical"),
    [
        ("$1,200.00", N, "1200"),
        ("0.50", N, "0.5"),
        ("1e3", N, None),
        ("14 March 2026", D, "2026-03-14"),
        ("  ＬＩＳＢＯＮ ", X, "lisbon"),
        ("", X, None),
    ],
)
def test_normalise(value: str, kind: AnswerKind, canonical: str | None) -> None:
    assert normalise(value, kind) == canonical
