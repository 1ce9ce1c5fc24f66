"""Judging cage.v1 replies: the nonce echo and the turn's message."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.protocol import challenge_problem, turn_problem


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"nonce": "9f2c"}, None),
        ({"nonce": "9f2c", "extra": 1}, None),
        ({"nonce": "9F2C"}, "Challenge failed: the reply did not echo the nonce"),
        ({"nonce": "9f2c "}, "Challenge failed: the reply did not echo the nonce"),
        ({"nonce": None}, "Challenge failed: the reply did not echo the nonce"),
        ({}, "Validation failed: Missing nonce"),
        ([], "Validation failed: body: expected an object, got array"),
        ("9f2c", "Validation failed: body: expected an object, got string"),
        (None, "Validation failed: body: expected an object, got null"),
    ],
)
def test_challenge_problem(reply: Any, problem: str | None) -> None:
    assert challenge_problem(reply, "9f2c") == problem


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"message": "hello"}, None),
        ({"message": ""}, None),
        ({"message": "x", "note": 1}, None),
        ({}, "Validation failed: Missing message"),
        ({"message": None}, "Validation failed: message: expected a string, got null"),
        ({"message": 3}, "Validation failed: message: expected a string, got number"),
        ({"message": ["a"]}, "Validation failed: message: expected a string, got array"),
        ([{"message": "x"}], "Validation failed: body: expected an object, got array"),
        (True, "Validation failed: body: expected an object, got boolean"),
    ],
)
def test_turn_problem(reply: Any, problem: str | None) -> None:
    assert turn_problem(reply) == problem
