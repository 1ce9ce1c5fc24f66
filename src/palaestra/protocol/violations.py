"""What is wrong with a value, and where: the words of every validation failure line.

A :class:`Violation` is one broken rule at one place; its ``reason`` is the
line an agent author reads (``Validation failed: Missing execution.first_milestone``).
:func:`json_type` names a value's type as that author would, and
:func:`count_problem` says why a value is not a token count. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from palaestra.errors import ProtocolError

__all__ = ["MAX_TOKEN_COUNT", "SchemaViolation", "Violation", "count_problem", "json_type"]

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
    """Why ``value`` is not a token count (a whole number from 0 to :data:`MAX_TOKEN_COUNT`),
    or None if it is.

    A whole number written as a float (``12.0``) is one: JavaScript has a single
    number type and some encoders write it so. The dispatch reply's envelope and
    the completion callback's body are both held to this rule, with these lines.
    """
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral:
        shown = json_type(value) if not isinstance(value, float) else f"{value:g}"
        return f"expected an integer, got {shown}"
    if value < 0:
        return "must be >= 0"
    if value > MAX_TOKEN_COUNT:
        return f"must be <= {MAX_TOKEN_COUNT}"
    return None
