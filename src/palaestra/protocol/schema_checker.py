"""Every violation of an output, where it is and what is wrong: the slow path, to say why.

:class:`Checker` walks a value in the documented key order over the tables
of :mod:`~palaestra.protocol.schema_tables` and collects every
:class:`~palaestra.protocol.violations.Violation`; the first one is the
task's failure reason. It runs only on a value the phase's predicate
(:mod:`~palaestra.protocol.schema_predicates`) refused, and accepts exactly
what the predicate accepts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from palaestra.protocol import schema_tables as tables
from palaestra.protocol.constants import Phase
from palaestra.protocol.violations import Violation, count_problem, json_type

__all__ = ["MISSING", "PHASE_CHECKERS", "Checker", "OutputChecker"]


class _Missing:
    pass


#: What :meth:`Checker.get` gives for an absent key (``None`` is a JSON value).
MISSING: Final = _Missing()


class Checker:
    """Collects violations while walking a value."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def fail(self, path: str, problem: str | None = None) -> None:
        self.violations.append(Violation(path, problem))

    def get(self, obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False) -> Any:
        if key in obj:
            return obj[key]
        if not optional:
            self.fail(path)
        return MISSING

    def holds(self, ok: bool, path: str, problem: str) -> bool:
        """``ok``; when false, the problem is recorded at ``path``."""
        if not ok:
            self.fail(path, problem)
        return ok

    def is_object(self, value: Any, path: str) -> bool:
        return self.holds(isinstance(value, dict), path, _expected("an object", value))

    def is_array(self, value: Any, path: str, *, min_items: int = 0) -> bool:
        if not isinstance(value, list):
            self.fail(path, _expected("an array", value))
            return False
        if len(value) < min_items:
            self.fail(path, f"must have at least {min_items} item")
            return False
        return True

    def is_string(self, value: Any, path: str) -> bool:
        return self.holds(isinstance(value, str), path, _expected("a string", value))

    def is_text(self, value: Any, path: str) -> bool:
        if not self.is_string(value, path):
            return False
        if not value.strip():
            self.fail(path, "must not be empty")
            return False
        return True

    def is_number(
        self, value: Any, path: str, *, low: float | None = None, high: float | None = None
    ) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(path, _expected("a number", value))
            return False
        if isinstance(value, float) and not math.isfinite(value):
            # JSON has no NaN or infinity; an output built in Python might.
            self.fail(path, f"expected a number, got {value}")
            return False
        if low is not None and high is not None and not low <= value <= high:
            self.fail(path, f"must be between {low:g} and {high:g}")
            return False
        if low is not None and value < low:
            self.fail(path, f"must be >= {low:g}")
            return False
        return True

    def is_count(self, value: Any, path: str) -> bool:
        problem = count_problem(value)
        if problem is not None:
            self.fail(path, problem)
            return False
        return True

    def is_boolean(self, value: Any, path: str) -> bool:
        return self.holds(isinstance(value, bool), path, _expected("a boolean", value))

    def is_choice(self, value: Any, path: str, choices: Sequence[str]) -> bool:
        if isinstance(value, str) and value in choices:
            return True
        shown = f'"{value}"' if isinstance(value, str) else json_type(value)
        self.fail(path, f"expected one of {', '.join(choices)}, got {shown}")
        return False

    # Composite rules, named after the spec's vocabulary.

    def text(self, obj: Mapping[str, Any], key: str, base: str = "") -> None:
        value = self.get(obj, key, _join(base, key))
        if value is not MISSING:
            self.is_text(value, _join(base, key))

    def candidate_id(self, obj: Mapping[str, Any], expected: str | None) -> None:
        value = self.get(obj, "candidate_id", "candidate_id")
        if value is MISSING or not self.is_text(value, "candidate_id"):
            return
        if expected is not None and value != expected:
            self.fail("candidate_id", f"must equal the dispatched candidate {expected}")

    def array_of(
        self,
        obj: Mapping[str, Any],
        key: str,
        item: Callable[[Any, str], object],
        *,
        base: str = "",
        min_items: int = 0,
    ) -> None:
        path = _join(base, key)
        value = self.get(obj, key, path)
        if value is MISSING or not self.is_array(value, path, min_items=min_items):
            return
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]")

    def record(self, value: Any, path: str, rules: tables.RecordRules) -> None:
        """An object whose keys follow ``rules``: (key, kind) with kind text/string?/level/bool."""
        if not self.is_object(value, path):
            return
        for key, kind in rules:
            optional = kind.endswith("?")
            field = self.get(value, key, _join(path, key), optional=optional)
            if field is MISSING:
                continue
            where = _join(path, key)
            match kind.rstrip("?"):
                case "text":
                    self.is_text(field, where)
                case "string":
                    self.is_string(field, where)
                case "level":
                    self.is_choice(field, where, tables.LEVELS)
                case "bool":
                    self.is_boolean(field, where)
                case other:  # pragma: no cover - a programming error in a rule table
                    raise AssertionError(other)


def _expected(what: str, value: Any) -> str:
    return f"expected {what}, got {json_type(value)}"


def _join(base: str, key: str) -> str:
    return f"{base}.{key}" if base else key


def _scout(c: Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    for key in tables.SCOUT_TEXT:
        c.text(out, key)
    c.array_of(out, "claims", lambda v, p: c.record(v, p, tables.CLAIM))
    c.array_of(out, "evidence", lambda v, p: c.record(v, p, tables.EVIDENCE))


def _execution_phase(c: Checker, value: Any, path: str) -> None:
    if isinstance(value, str):
        c.is_text(value, path)
        return
    if not isinstance(value, dict):
        c.fail(path, f"expected text or an object, got {json_type(value)}")
        return
    for key in tables.PHASE_STEP_KEYS:
        if key in value:
            c.is_string(value[key], _join(path, key))
    if "steps" in value:
        steps_path = _join(path, "steps")
        if c.is_array(value["steps"], steps_path):
            for index, step in enumerate(value["steps"]):
                c.is_string(step, f"{steps_path}[{index}]")


def _build(c: Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    c.candidate_id(out, candidate_id)
    execution = c.get(out, "execution", "execution")
    if execution is not MISSING and c.is_object(execution, "execution"):
        objective, *rest = tables.EXECUTION_TEXT
        c.text(execution, objective, "execution")
        c.array_of(
            execution,
            "phases",
            lambda v, p: _execution_phase(c, v, p),
            base="execution",
            min_items=1,
        )
        for key in rest:
            c.text(execution, key, "execution")
    c.array_of(out, "claims", lambda v, p: c.record(v, p, tables.CLAIM))


def _verify(c: Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    c.candidate_id(out, candidate_id)
    c.array_of(out, "evidence_assessments", lambda v, p: c.record(v, p, tables.EVIDENCE_ASSESSMENT))
    c.array_of(out, "claim_assessments", lambda v, p: c.record(v, p, tables.CLAIM_ASSESSMENT))
    for key in tables.SCORES:
        value = c.get(out, key, key)
        if value is not MISSING:
            c.is_number(value, key, low=0, high=100)
    level = c.get(out, "overall_confidence", "overall_confidence")
    if level is not MISSING:
        c.is_choice(level, "overall_confidence", tables.LEVELS)
    c.array_of(out, "red_flags", c.is_string)


def _critique(c: Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    c.candidate_id(out, candidate_id)
    c.array_of(out, "strengths", c.is_text)
    c.array_of(out, "weaknesses", c.is_text)
    adjustments = c.get(out, "score_adjustments", "score_adjustments")
    if adjustments is not MISSING and c.is_object(adjustments, "score_adjustments"):
        for name, value in adjustments.items():
            c.is_number(value, f"score_adjustments.{name}")
    penalty = c.get(out, "penalty_points", "penalty_points")
    if penalty is not MISSING:
        c.is_number(penalty, "penalty_points", low=0)
    verdict = c.get(out, "verdict", "verdict")
    if verdict is not MISSING:
        c.is_choice(verdict, "verdict", tables.VERDICTS)
    fatal = c.get(out, "fatal_flaw", "fatal_flaw")
    if fatal is not MISSING:
        c.is_boolean(fatal, "fatal_flaw")
    reason = c.get(out, "elimination_reason", "elimination_reason", optional=True)
    if reason is not MISSING:
        c.is_string(reason, "elimination_reason")


#: Collects the violations of a phase's output, given the dispatched candidate.
OutputChecker = Callable[[Checker, Mapping[str, Any], str | None], None]

PHASE_CHECKERS: Final[Mapping[Phase, OutputChecker]] = {
    Phase.SCOUT: _scout,
    Phase.BUILD: _build,
    Phase.VERIFY: _verify,
    Phase.CRITIQUE: _critique,
}
