"""What is wrong with a value, and where: the words of every validation failure line.

A :class:`Violation` is one broken rule at one place; its ``reason`` is the
line an agent author reads (``Validation failed: Missing execution.first_milestone``).
:func:`json_type` names a value's type as that author would,
:func:`count_problem` says why a value is not a token count, :func:`count_warning` what
our stricter rule finds in one, and :func:`recorded_count` what the store keeps. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from palaestra.errors import ProtocolError

__all__ = [
    "MAX_TOKEN_COUNT",
    "SchemaViolation",
    "Violation",
    "count_problem",
    "count_warning",
    "json_type",
    "recorded_count",
]

#: The largest token count taken: what the store's INTEGER columns hold (32-bit on PostgreSQL).
MAX_TOKEN_COUNT: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule at one place in the value."""

    path: str
    problem: str | None = None  # None: the key is missing

    @property
    def reason(self) -> str:
        if self.problem is None:
            return f"Validation failed: Missing {self.path}"
        return f"Validation failed: {self.path}: {self.problem}"


class SchemaViolation(ProtocolError):
    """Validation failed"""

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = tuple(violations)
        super().__init__(self.violations[0].reason)


def json_type(value: object) -> str:
    """The JSON type name of a parsed value, as an agent author would say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def count_problem(value: Any) -> str | None:
    """Why ``value`` is not a token count, or None if it is.

    The seed types ``promptTokens`` and ``completionTokens`` as ``number``: any JSON
    number is one (a boolean is not). The dispatch reply's envelope and the completion
    callback's body are both held to this rule, with this line.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected a number, got {json_type(value)}"
    return None


def count_warning(value: Any) -> str | None:
    """What our stricter rule (a whole number from 0 to :data:`MAX_TOKEN_COUNT`) finds in
    a token count the seed accepts, or None: a warning, never a refusal.

    A whole number written as a float (``12.0``) is whole: JavaScript has a single
    number type and some encoders write it so.
    """
    if count_problem(value) is not None:
        return None
    if not math.isfinite(value) or value != math.floor(value):
        return f"expected a whole number, got {value:g} (recorded as {recorded_count(value)})"
    if value < 0:
        return f"must be >= 0, got {value:g} (recorded as 0)"
    if value > MAX_TOKEN_COUNT:
        return f"must be <= {MAX_TOKEN_COUNT}, got {value:g} (recorded as {MAX_TOKEN_COUNT})"
    return None


def recorded_count(value: int | float) -> int:
    """The whole number the store keeps for a token count: the nearest (halves up),
    within 0 and :data:`MAX_TOKEN_COUNT` (what its INTEGER columns hold)."""
    if value != value:  # NaN: no JSON parser here gives one, but no number is safer
        return 0
    if value >= MAX_TOKEN_COUNT:
        return MAX_TOKEN_COUNT
    if value <= 0:
        return 0
    return min(MAX_TOKEN_COUNT, math.floor(value + 0.5))
