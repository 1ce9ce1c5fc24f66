"""Whether an output is valid, and nothing else: the fast path every dispatch takes.

One predicate per phase over the tables of :mod:`~palaestra.protocol.schema_tables`,
with no paths and no messages. Only an output a predicate refuses is walked
by :mod:`~palaestra.protocol.schema_checker` to say why; the two accept
exactly the same values (a property test holds them to it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeGuard

from palaestra.protocol import schema_tables as tables
from palaestra.protocol.constants import Phase

__all__ = ["PHASE_PREDICATES", "OutputPredicate", "is_count"]

#: Whether a phase's output is valid, given the dispatched candidate (None for SCOUT).
OutputPredicate = Callable[[Mapping[str, Any], str | None], bool]


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_level(value: Any) -> bool:
    return isinstance(value, str) and value in tables.LEVELS


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[float]:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


def _is_score(value: Any) -> bool:
    return _is_number(value) and 0 <= value <= 100


def _is_verdict(value: Any) -> bool:
    return isinstance(value, str) and value in tables.VERDICTS


def is_count(value: Any) -> bool:
    """``count_problem(value) is None``, on the fast path: any JSON number, as the seed says."""
    return isinstance(value, int | float) and not isinstance(value, bool)


_KIND_TESTS: Final[Mapping[str, Callable[[Any], bool]]] = {
    "text": _is_text,
    "string": _is_string,
    "level": _is_level,
    "bool": _is_boolean,
}


_Tests = tuple[tuple[str, Callable[[Any], bool], bool], ...]  # (key, test, optional)


def _record_tests(rules: tables.RecordRules) -> _Tests:
    return tuple((key, _KIND_TESTS[kind.rstrip("?")], kind.endswith("?")) for key, kind in rules)


_CLAIM_TESTS: Final = _record_tests(tables.CLAIM)
_EVIDENCE_TESTS: Final = _record_tests(tables.EVIDENCE)
_EVIDENCE_ASSESSMENT_TESTS: Final = _record_tests(tables.EVIDENCE_ASSESSMENT)
_CLAIM_ASSESSMENT_TESTS: Final = _record_tests(tables.CLAIM_ASSESSMENT)


def _all(value: Any, test: Callable[[Any], bool]) -> bool:
    return isinstance(value, list) and all(test(item) for item in value)


def _records(value: Any, tests: _Tests) -> bool:
    if not isinstance(value, list):
        return False
    for item in value:
        if not isinstance(item, dict):
            return False
        for key, test, optional in tests:
            if key in item:
                if not test(item[key]):
                    return False
            elif not optional:
                return False
    return True


def _candidate_ok(out: Mapping[str, Any], expected: str | None) -> bool:
    value = out.get("candidate_id")
    return _is_text(value) and (expected is None or value == expected)


def _execution_phase_ok(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if not isinstance(value, dict):
        return False
    if not all(_is_string(value[key]) for key in tables.PHASE_STEP_KEYS if key in value):
        return False
    return "steps" not in value or _all(value["steps"], _is_string)


def _scout_ok(out: Mapping[str, Any], _candidate_id: str | None) -> bool:
    return (
        all(_is_text(out.get(key)) for key in tables.SCOUT_TEXT)
        and _records(out.get("claims"), _CLAIM_TESTS)
        and _records(out.get("evidence"), _EVIDENCE_TESTS)
    )


def _build_ok(out: Mapping[str, Any], candidate_id: str | None) -> bool:
    execution = out.get("execution")
    if not _candidate_ok(out, candidate_id) or not isinstance(execution, dict):
        return False
    phases = execution.get("phases")
    return (
        all(_is_text(execution.get(key)) for key in tables.EXECUTION_TEXT)
        and isinstance(phases, list)
        and len(phases) >= 1
        and all(_execution_phase_ok(phase) for phase in phases)
        and _records(out.get("claims"), _CLAIM_TESTS)
    )


def _verify_ok(out: Mapping[str, Any], candidate_id: str | None) -> bool:
    return (
        _candidate_ok(out, candidate_id)
        and _records(out.get("evidence_assessments"), _EVIDENCE_ASSESSMENT_TESTS)
        and _records(out.get("claim_assessments"), _CLAIM_ASSESSMENT_TESTS)
        and all(_is_score(out.get(key)) for key in tables.SCORES)
        and _is_level(out.get("overall_confidence"))
        and _all(out.get("red_flags"), _is_string)
    )


def _critique_ok(out: Mapping[str, Any], candidate_id: str | None) -> bool:
    adjustments, penalty = out.get("score_adjustments"), out.get("penalty_points")
    return (
        _candidate_ok(out, candidate_id)
        and _all(out.get("strengths"), _is_text)
        and _all(out.get("weaknesses"), _is_text)
        and isinstance(adjustments, dict)
        and all(_is_number(value) for value in adjustments.values())
        and _is_number(penalty)
        and penalty >= 0
        and _is_verdict(out.get("verdict"))
        and _is_boolean(out.get("fatal_flaw"))
        and ("elimination_reason" not in out or _is_string(out["elimination_reason"]))
    )


PHASE_PREDICATES: Final[Mapping[Phase, OutputPredicate]] = {
    Phase.SCOUT: _scout_ok,
    Phase.BUILD: _build_ok,
    Phase.VERIFY: _verify_ok,
    Phase.CRITIQUE: _critique_ok,
}
