"""The role output schemas of edgearena-v1 and the dispatch reply's envelope: the entry points.

Every rule of ``spec/SCHEMAS.md`` is written over the same tables of keys
(:mod:`~palaestra.protocol.schema_tables`) twice: as a predicate that only
says whether a value is valid (:mod:`~palaestra.protocol.schema_predicates`),
and as a checker that walks the value in the documented key order and
collects every violation (:mod:`~palaestra.protocol.schema_checker`), the
first one being the task's failure reason
(``Validation failed: Missing execution.first_milestone``). Every dispatch
runs the predicate; only a value it refuses is walked by the checker, to say
why. Extra keys are always allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from palaestra.protocol.constants import RESPONSE_CAP_BYTES, Phase, Role
from palaestra.protocol.schema_checker import MISSING, PHASE_CHECKERS, Checker
from palaestra.protocol.schema_predicates import PHASE_PREDICATES, is_count
from palaestra.protocol.schema_tables import SIMULATION_REQUIRED_KEYS
from palaestra.protocol.violations import (
    SchemaViolation,
    Violation,
    count_warning,
    json_type,
    recorded_count,
)

__all__ = [
    "Envelope",
    "check_required_keys",
    "token_count_warnings",
    "validate_envelope",
    "validate_output",
]


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
    if PHASE_PREDICATES[phase](output, candidate_id):
        return output
    c = Checker()
    PHASE_CHECKERS[phase](c, output, candidate_id)
    if c.violations:
        raise SchemaViolation(c.violations)
    return output


def check_required_keys(role: Role, body: Any) -> None:
    """The wizard's ``required-fields`` check on a bare simulation reply."""
    c = Checker()
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
        and is_count(body.get("promptTokens"))
        and is_count(body.get("completionTokens"))
        and isinstance(body.get("modelId"), str)
    ):
        return Envelope(
            output=validate_output(phase, body["output"], candidate_id),
            prompt_tokens=recorded_count(body["promptTokens"]),
            completion_tokens=recorded_count(body["completionTokens"]),
            model_id=body["modelId"],
        )
    c = Checker()
    if not c.is_object(body, "body"):
        raise SchemaViolation(c.violations)
    output = c.get(body, "output", "output")
    for key in ("promptTokens", "completionTokens"):
        value = c.get(body, key, key)
        if value is not MISSING:
            c.is_count(value, key)
    model_id = c.get(body, "modelId", "modelId")
    if model_id is not MISSING:
        c.is_string(model_id, "modelId")
    if c.violations:
        raise SchemaViolation(c.violations)
    return Envelope(
        output=validate_output(phase, output, candidate_id),
        prompt_tokens=recorded_count(body["promptTokens"]),
        completion_tokens=recorded_count(body["completionTokens"]),
        model_id=model_id,
    )


def token_count_warnings(body: Any) -> list[str]:
    """What our stricter rule finds in a reply's token counts that the seed accepts
    (``promptTokens: expected a whole number, got 12.5 (recorded as 13)``): warnings."""
    if not isinstance(body, dict):
        return []
    found = []
    for key in ("promptTokens", "completionTokens"):
        warning = count_warning(body.get(key))
        if warning is not None:
            found.append(f"{key}: {warning}")
    return found
