"""Judging cage.v1 replies: the nonce echo and the turn's message."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.protocol import challenge_problem, turn_message, turn_problem, turn_warning


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
        # The seed fails only "a missing message": any value the key holds is a message
        # (our rule, a string, only warns), null included.
        ({"message": None}, None),
        ({"message": 3}, None),
        ({"message": ["a"]}, None),
        ({"message": False}, None),
        ([{"message": "x"}], "Validation failed: body: expected an object, got array"),
        (True, "Validation failed: body: expected an object, got boolean"),
    ],
)
def test_turn_problem(reply: Any, problem: str | None) -> None:
    assert turn_problem(reply) == problem


@pytest.mark.parametrize(
    ("message", "text", "warning"),
    [
        ("hello", "hello", None),
        ("", "", None),
        (None, "", "message: expected a string, got null (taken as an empty message)"),
        (3, "3", "message: expected a string, got number (taken as its JSON text)"),
        (["a"], '["a"]', "message: expected a string, got array (taken as its JSON text)"),
        ({"x": 1}, '{"x":1}', "message: expected a string, got object (taken as its JSON text)"),
        (False, "false", "message: expected a string, got boolean (taken as its JSON text)"),
    ],
)
def test_a_message_the_seed_takes_is_read_as_text_and_our_rule_only_warns(
    message: Any, text: str, warning: str | None
) -> None:
    reply = {"message": message}
    assert (turn_message(reply), turn_warning(reply)) == (text, warning)


@pytest.mark.parametrize("reply", [{}, {"note": "no message"}, [], None])
def test_a_failed_move_has_no_warning(reply: Any) -> None:
    assert turn_warning(reply) is None
