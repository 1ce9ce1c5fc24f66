"""The role output schemas of edgearena-v1 and their exact failure lines.

Every rule of ``spec/SCHEMAS.md`` is written here, each phase's twice over the
same tables of keys: as a checker that walks the value in the documented key
order and collects every violation, the first one being the task's failure
reason (``Validation failed: Missing execution.first_milestone``), and as a
predicate that only says whether the value is valid. Every dispatch runs the
predicate; only a value it refuses is walked by the checker, to say why. The
two accept exactly the same values (a property test holds them to it). Extra
keys are always allowed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import orjson

from palaestra.errors import ProtocolError
from palaestra.protocol.constants import RESPONSE_CAP_BYTES, Phase, Role

__all__ = [
    "LEVELS",
    "MAX_TOKEN_COUNT",
    "SIMULATION_REQUIRED_KEYS",
    "Envelope",
    "SchemaViolation",
    "Violation",
    "check_required_keys",
    "count_problem",
    "json_type",
    "validate_envelope",
    "validate_output",
]

LEVELS: Final = ("high", "medium", "low")
#: The largest token count taken: what the store's INTEGER columns hold (32-bit on PostgreSQL).
MAX_TOKEN_COUNT: Final = 2**31 - 1
VERDICTS: Final = ("pass", "eliminate")
_PHASE_STEP_KEYS: Final = ("title", "objective", "outcome", "reality_check", "operator_guidance")

SIMULATION_REQUIRED_KEYS: Final[Mapping[Role, tuple[str, ...]]] = {
    Role.SCOUT: ("candidate_title", "target_customer", "core_problem", "proposed_solution"),
    Role.BUILDER: ("candidate_id", "execution", "claims"),
    Role.ANALYST: ("strengths", "weaknesses", "verdict"),
}


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


class _Missing:
    pass


_MISSING: Final = _Missing()


class _Checker:
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
        return _MISSING

    def is_object(self, value: Any, path: str) -> bool:
        if isinstance(value, dict):
            return True
        self.fail(path, f"expected an object, got {json_type(value)}")
        return False

    def is_array(self, value: Any, path: str, *, min_items: int = 0) -> bool:
        if not isinstance(value, list):
            self.fail(path, f"expected an array, got {json_type(value)}")
            return False
        if len(value) < min_items:
            self.fail(path, f"must have at least {min_items} item")
            return False
        return True

    def is_string(self, value: Any, path: str) -> bool:
        if isinstance(value, str):
            return True
        self.fail(path, f"expected a string, got {json_type(value)}")
        return False

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
            self.fail(path, f"expected a number, got {json_type(value)}")
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
        if isinstance(value, bool):
            return True
        self.fail(path, f"expected a boolean, got {json_type(value)}")
        return False

    def is_choice(self, value: Any, path: str, choices: Sequence[str]) -> bool:
        if isinstance(value, str) and value in choices:
            return True
        shown = f'"{value}"' if isinstance(value, str) else json_type(value)
        self.fail(path, f"expected one of {', '.join(choices)}, got {shown}")
        return False

    # Composite rules, named after the spec's vocabulary.

    def text(self, obj: Mapping[str, Any], key: str, base: str = "") -> None:
        value = self.get(obj, key, _join(base, key))
        if value is not _MISSING:
            self.is_text(value, _join(base, key))

    def candidate_id(self, obj: Mapping[str, Any], expected: str | None) -> None:
        value = self.get(obj, "candidate_id", "candidate_id")
        if value is _MISSING or not self.is_text(value, "candidate_id"):
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
        if value is _MISSING or not self.is_array(value, path, min_items=min_items):
            return
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]")

    def record(self, value: Any, path: str, rules: Sequence[tuple[str, str]]) -> None:
        """An object whose keys follow ``rules``: (key, kind) with kind text/string?/level/bool."""
        if not self.is_object(value, path):
            return
        for key, kind in rules:
            optional = kind.endswith("?")
            field = self.get(value, key, _join(path, key), optional=optional)
            if field is _MISSING:
                continue
            where = _join(path, key)
            match kind.rstrip("?"):
                case "text":
                    self.is_text(field, where)
                case "string":
                    self.is_string(field, where)
                case "level":
                    self.is_choice(field, where, LEVELS)
                case "bool":
                    self.is_boolean(field, where)
                case other:  # pragma: no cover - a programming error in a rule table
                    raise AssertionError(other)


def _join(base: str, key: str) -> str:
    return f"{base}.{key}" if base else key


_CLAIM: Final = (("type", "text"), ("text", "text"))
_EVIDENCE: Final = (("kind", "text"), ("summary", "text"))
_EVIDENCE_ASSESSMENT: Final = (
    ("kind", "text"),
    ("summary", "text"),
    ("reliability", "level"),
    ("specificity", "level"),
    ("note", "string?"),
)
_CLAIM_ASSESSMENT: Final = (
    ("type", "text"),
    ("text", "text"),
    ("supported", "bool"),
    ("confidence", "level"),
    ("note", "string?"),
)


_SCOUT_TEXT: Final = (
    "candidate_title",
    "target_customer",
    "core_problem",
    "proposed_solution",
    "why_now",
)
_EXECUTION_TEXT: Final = ("objective", "first_milestone", "success_check")
_SCORES: Final = ("evidence_quality_score", "claim_coverage_score")


# The predicates: whether a value is valid, and nothing else (no paths, no messages).


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_level(value: Any) -> bool:
    return isinstance(value, str) and value in LEVELS


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[float]:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


def _is_score(value: Any) -> bool:
    return _is_number(value) and 0 <= value <= 100


def _is_verdict(value: Any) -> bool:
    return isinstance(value, str) and value in VERDICTS


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


def _is_count(value: Any) -> bool:  # count_problem(value) is None, on the fast path
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return integral and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT


_KIND_TESTS: Final[Mapping[str, Callable[[Any], bool]]] = {
    "text": _is_text,
    "string": _is_string,
    "level": _is_level,
    "bool": _is_boolean,
}


_Tests = tuple[tuple[str, Callable[[Any], bool], bool], ...]  # (key, test, optional)


def _record_tests(rules: Sequence[tuple[str, str]]) -> _Tests:
    return tuple((key, _KIND_TESTS[kind.rstrip("?")], kind.endswith("?")) for key, kind in rules)


_CLAIM_TESTS: Final = _record_tests(_CLAIM)
_EVIDENCE_TESTS: Final = _record_tests(_EVIDENCE)
_EVIDENCE_ASSESSMENT_TESTS: Final = _record_tests(_EVIDENCE_ASSESSMENT)
_CLAIM_ASSESSMENT_TESTS: Final = _record_tests(_CLAIM_ASSESSMENT)


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
    if not all(_is_string(value[key]) for key in _PHASE_STEP_KEYS if key in value):
        return False
    return "steps" not in value or _all(value["steps"], _is_string)


def _scout_ok(out: Mapping[str, Any], _candidate_id: str | None) -> bool:
    return (
        all(_is_text(out.get(key)) for key in _SCOUT_TEXT)
        and _records(out.get("claims"), _CLAIM_TESTS)
        and _records(out.get("evidence"), _EVIDENCE_TESTS)
    )


def _build_ok(out: Mapping[str, Any], candidate_id: str | None) -> bool:
    execution = out.get("execution")
    if not _candidate_ok(out, candidate_id) or not isinstance(execution, dict):
        return False
    phases = execution.get("phases")
    return (
        all(_is_text(execution.get(key)) for key in _EXECUTION_TEXT)
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
        and all(_is_score(out.get(key)) for key in _SCORES)
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


# The checkers: every violation, where it is, and what is wrong.


def _scout(c: _Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    for key in _SCOUT_TEXT:
        c.text(out, key)
    c.array_of(out, "claims", lambda v, p: c.record(v, p, _CLAIM))
    c.array_of(out, "evidence", lambda v, p: c.record(v, p, _EVIDENCE))


def _execution_phase(c: _Checker, value: Any, path: str) -> None:
    if isinstance(value, str):
        c.is_text(value, path)
        return
    if not isinstance(value, dict):
        c.fail(path, f"expected text or an object, got {json_type(value)}")
        return
    for key in _PHASE_STEP_KEYS:
        if key in value:
            c.is_string(value[key], _join(path, key))
    if "steps" in value:
        steps_path = _join(path, "steps")
        if c.is_array(value["steps"], steps_path):
            for index, step in enumerate(value["steps"]):
                c.is_string(step, f"{steps_path}[{index}]")


def _build(c: _Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    c.candidate_id(out, candidate_id)
    execution = c.get(out, "execution", "execution")
    if execution is not _MISSING and c.is_object(execution, "execution"):
        objective, *rest = _EXECUTION_TEXT
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
    c.array_of(out, "claims", lambda v, p: c.record(v, p, _CLAIM))


def _verify(c: _Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    c.candidate_id(out, candidate_id)
    c.array_of(out, "evidence_assessments", lambda v, p: c.record(v, p, _EVIDENCE_ASSESSMENT))
    c.array_of(out, "claim_assessments", lambda v, p: c.record(v, p, _CLAIM_ASSESSMENT))
    for key in _SCORES:
        value = c.get(out, key, key)
        if value is not _MISSING:
            c.is_number(value, key, low=0, high=100)
    level = c.get(out, "overall_confidence", "overall_confidence")
    if level is not _MISSING:
        c.is_choice(level, "overall_confidence", LEVELS)
    c.array_of(out, "red_flags", c.is_string)


def _critique(c: _Checker, out: Mapping[str, Any], candidate_id: str | None) -> None:
    c.candidate_id(out, candidate_id)
    c.array_of(out, "strengths", c.is_text)
    c.array_of(out, "weaknesses", c.is_text)
    adjustments = c.get(out, "score_adjustments", "score_adjustments")
    if adjustments is not _MISSING and c.is_object(adjustments, "score_adjustments"):
        for name, value in adjustments.items():
            c.is_number(value, f"score_adjustments.{name}")
    penalty = c.get(out, "penalty_points", "penalty_points")
    if penalty is not _MISSING:
        c.is_number(penalty, "penalty_points", low=0)
    verdict = c.get(out, "verdict", "verdict")
    if verdict is not _MISSING:
        c.is_choice(verdict, "verdict", VERDICTS)
    fatal = c.get(out, "fatal_flaw", "fatal_flaw")
    if fatal is not _MISSING:
        c.is_boolean(fatal, "fatal_flaw")
    reason = c.get(out, "elimination_reason", "elimination_reason", optional=True)
    if reason is not _MISSING:
        c.is_string(reason, "elimination_reason")


_PHASE_RULES: Final = {
    Phase.SCOUT: (_scout_ok, _scout),
    Phase.BUILD: (_build_ok, _build),
    Phase.VERIFY: (_verify_ok, _verify),
    Phase.CRITIQUE: (_critique_ok, _critique),
}


def validate_output(phase: Phase, output: Any, candidate_id: str | None = None) -> dict[str, Any]:
    """Check a phase's ``output``; return it, or raise :class:`SchemaViolation`.

    ``candidate_id`` is the candidate the platform dispatched (``None`` for SCOUT).
    """
    if not isinstance(output, dict):
        raise SchemaViolation([Violation("output", f"expected an object, got {json_type(output)}")])
    try:
        size = len(orjson.dumps(output))
    except orjson.JSONEncodeError as exc:  # e.g. nested deeper than orjson writes
        raise SchemaViolation([Violation("output", f"cannot be serialized: {exc}")]) from None
    if size > RESPONSE_CAP_BYTES:
        raise SchemaViolation([Violation("output", f"exceeds {RESPONSE_CAP_BYTES} bytes")])
    valid, rules = _PHASE_RULES[phase]
    if valid(output, candidate_id):
        return output
    c = _Checker()
    rules(c, output, candidate_id)
    if c.violations:
        raise SchemaViolation(c.violations)
    return output


def check_required_keys(role: Role, body: Any) -> None:
    """The wizard's ``required-fields`` check on a bare simulation reply."""
    c = _Checker()
    if not c.is_object(body, "body"):
        raise SchemaViolation(c.violations)
    for key in SIMULATION_REQUIRED_KEYS[role]:
        c.get(body, key, key)
    if c.violations:
        raise SchemaViolation(c.violations)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A synchronous dispatch reply: the output and what it cost."""

    output: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    model_id: str


def validate_envelope(body: Any, phase: Phase, candidate_id: str | None = None) -> Envelope:
    """Check a dispatch reply's envelope and its output; raise :class:`SchemaViolation`."""
    if (
        isinstance(body, dict)
        and "output" in body
        and _is_count(body.get("promptTokens"))
        and _is_count(body.get("completionTokens"))
        and isinstance(body.get("modelId"), str)
    ):
        return Envelope(
            output=validate_output(phase, body["output"], candidate_id),
            prompt_tokens=int(body["promptTokens"]),
            completion_tokens=int(body["completionTokens"]),
            model_id=body["modelId"],
        )
    c = _Checker()
    if not c.is_object(body, "body"):
        raise SchemaViolation(c.violations)
    output = c.get(body, "output", "output")
    for key in ("promptTokens", "completionTokens"):
        value = c.get(body, key, key)
        if value is not _MISSING:
            c.is_count(value, key)
    model_id = c.get(body, "modelId", "modelId")
    if model_id is not _MISSING:
        c.is_string(model_id, "modelId")
    if c.violations:
        raise SchemaViolation(c.violations)
    return Envelope(
        output=validate_output(phase, output, candidate_id),
        prompt_tokens=int(body["promptTokens"]),
        completion_tokens=int(body["completionTokens"]),
        model_id=model_id,
    )
