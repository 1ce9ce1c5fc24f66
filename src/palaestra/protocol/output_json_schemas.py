"""The role output schemas as JSON Schema: for generating answers that pass them by construction.

The arena's own model (the house) writes its answers under a grammar derived
from these schemas (llama.cpp's JSON-schema grammar), so every answer parses
and passes :func:`~palaestra.protocol.schemas.validate_output`. They are
built from the same tables as the validators and are narrower than the
rules: every text starts with a character that is not whitespace (the rules'
"not empty after trimming"), numbers are whole and within their range, and
strings and arrays are short, which bounds how many tokens an answer costs.
Everything a schema accepts the validators accept; ``tests/unit`` checks it.

:func:`accepted_output_schema` is the other reading of the same tables: the rules
themselves as JSON Schema, open to extra keys and unbounded, accepting exactly
what the validators accept (but for ``candidate_id`` equal to the dispatched
one, which depends on the task). The reference pages of the docs render both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from palaestra.protocol import schema_tables as tables
from palaestra.protocol.constants import Phase

__all__ = [
    "BRIEF",
    "FULL",
    "MAX_ITEMS",
    "MAX_TEXT_CHARS",
    "Bounds",
    "accepted_output_schema",
    "output_json_schema",
]

#: The longest text a generated answer holds, in characters.
MAX_TEXT_CHARS: Final = 100
#: The most items a generated array holds.
MAX_ITEMS: Final = 2


@dataclass(frozen=True, slots=True)
class Bounds:
    """How long a generated answer may be: its texts' characters, its lists' items."""

    text_chars: int = MAX_TEXT_CHARS
    items: int = MAX_ITEMS


#: The answers the house generates: up to two items a list, 100 characters a text.
FULL: Final = Bounds()
#: Short answers (one item per list, 60 characters a text): about half the tokens, for a
#: model that has to answer on a busy machine within a phase's deadline.
BRIEF: Final = Bounds(text_chars=60, items=1)
#: Aspects a generated critique may adjust the score for (each -20 to 20).
_ASPECTS: Final = ("market", "feasibility", "founder_fit")

JsonSchema = dict[str, Any]

# Character classes of the text pattern, written for llama.cpp's grammar (GBNF) escapes.
_RAW: Final = r'"\\\x7F\x00-\x1F'
_BLANK: Final = r" \x85\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF"


def _text(max_chars: int = MAX_TEXT_CHARS) -> JsonSchema:
    # No quote, backslash or control character (always valid JSON string content), and a
    # first character that is not whitespace either, so the text is never blank.
    return {"type": "string", "pattern": f"^[^{_BLANK}{_RAW}][^{_RAW}]{{0,{max_chars - 1}}}$"}


def _whole(low: int, high: int) -> JsonSchema:
    return {"enum": list(range(low, high + 1))}


def _object(properties: Mapping[str, JsonSchema], optional: tuple[str, ...] = ()) -> JsonSchema:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": [key for key in properties if key not in optional],
        "additionalProperties": False,
    }


def _array(items: JsonSchema, bounds: Bounds, min_items: int = 0) -> JsonSchema:
    return {"type": "array", "items": items, "minItems": min_items, "maxItems": bounds.items}


def _kind(kind: str, bounds: Bounds) -> JsonSchema:
    if kind in ("text", "string"):
        return _text(bounds.text_chars)
    if kind == "level":
        return {"enum": list(tables.LEVELS)}
    return {"type": "boolean"}  # "bool"


def _record(rules: tables.RecordRules, bounds: Bounds) -> JsonSchema:
    # Optional keys (a note) are left out: the answer is shorter and still valid.
    return _object({key: _kind(kind, bounds) for key, kind in rules if not kind.endswith("?")})


def _candidate(candidate_id: str | None) -> JsonSchema:
    return {"const": candidate_id} if candidate_id is not None else _text(64)


def _scout(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    text = _text(bounds.text_chars)
    return _object(
        dict.fromkeys(tables.SCOUT_TEXT, text)
        | {
            "claims": _array(_record(tables.CLAIM, bounds), bounds),
            "evidence": _array(_record(tables.EVIDENCE, bounds), bounds),
        }
    )


def _build(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    text = _text(bounds.text_chars)
    title = _text(min(80, bounds.text_chars))
    phase = _object(
        {"title": title, "objective": text, "steps": _array(text, bounds, 1), "outcome": text}
    )
    objective, milestone, check = tables.EXECUTION_TEXT
    execution = _object(
        {objective: text, "phases": _array(phase, bounds, 1), milestone: text, check: text}
    )
    return _object(
        {
            "candidate_id": _candidate(candidate_id),
            "execution": execution,
            "claims": _array(_record(tables.CLAIM, bounds), bounds),
        }
    )


def _verify(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    return _object(
        {
            "candidate_id": _candidate(candidate_id),
            "evidence_assessments": _array(_record(tables.EVIDENCE_ASSESSMENT, bounds), bounds),
            "claim_assessments": _array(_record(tables.CLAIM_ASSESSMENT, bounds), bounds),
        }
        | {key: _whole(0, 100) for key in tables.SCORES}
        | {
            "overall_confidence": {"enum": list(tables.LEVELS)},
            "red_flags": _array(_text(bounds.text_chars), bounds),
        }
    )


def _critique(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    adjustments = _object({aspect: _whole(-20, 20) for aspect in _ASPECTS}, optional=_ASPECTS)
    text = _text(bounds.text_chars)
    return _object(
        {
            "candidate_id": _candidate(candidate_id),
            "strengths": _array(text, bounds),
            "weaknesses": _array(text, bounds),
            "score_adjustments": adjustments,
            "penalty_points": _whole(0, 50),
            "verdict": {"enum": list(tables.VERDICTS)},
            "fatal_flaw": {"type": "boolean"},
        }
    )


_BY_PHASE: Final[Mapping[Phase, Callable[[str | None, Bounds], JsonSchema]]] = {
    Phase.SCOUT: _scout,
    Phase.BUILD: _build,
    Phase.VERIFY: _verify,
    Phase.CRITIQUE: _critique,
}


def output_json_schema(
    phase: Phase, candidate_id: str | None = None, bounds: Bounds = FULL
) -> JsonSchema:
    """The JSON Schema a generated ``phase`` output follows; ``candidate_id`` is fixed in it."""
    return _BY_PHASE[phase](candidate_id, bounds)


# -- the rules as JSON Schema ------------------------------------------------------------

#: A character that ``str.strip`` keeps: "text" is a string with one (not empty once trimmed).
_SOLID: Final = (
    "[^\\u0009-\\u000D\\u001C-\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A"
    "\\u2028\\u2029\\u202F\\u205F\\u3000]"
)
_STRING: Final[JsonSchema] = {"type": "string"}
_NUMBER: Final[JsonSchema] = {"type": "number"}
_RULE_KINDS: Final[Mapping[str, JsonSchema]] = {
    "text": {"type": "string", "pattern": _SOLID},
    "string": _STRING,
    "level": {"enum": list(tables.LEVELS)},
    "bool": {"type": "boolean"},
}
_TEXT_RULE: Final = _RULE_KINDS["text"]


def _open(properties: Mapping[str, JsonSchema], optional: tuple[str, ...] = ()) -> JsonSchema:
    # Extra keys are always allowed and kept (spec/SCHEMAS.md, general rules).
    return {
        "type": "object",
        "properties": dict(properties),
        "required": [key for key in properties if key not in optional],
    }


def _rules_record(rules: tables.RecordRules) -> JsonSchema:
    kinds = {key: _RULE_KINDS[kind.rstrip("?")] for key, kind in rules}
    return _open(kinds, tuple(key for key, kind in rules if kind.endswith("?")))


def _list(items: JsonSchema, min_items: int = 0) -> JsonSchema:
    return {"type": "array", "items": items} | ({"minItems": min_items} if min_items else {})


_CANDIDATE_RULE: Final = _TEXT_RULE | {"description": "Equals the dispatched candidateId."}


def _scout_rules() -> JsonSchema:
    return _open(
        dict.fromkeys(tables.SCOUT_TEXT, _TEXT_RULE)
        | {
            "claims": _list(_rules_record(tables.CLAIM)),
            "evidence": _list(_rules_record(tables.EVIDENCE)),
        }
    )


def _build_rules() -> JsonSchema:
    step = _open(
        dict.fromkeys(tables.PHASE_STEP_KEYS, _STRING) | {"steps": _list(_STRING)},
        optional=(*tables.PHASE_STEP_KEYS, "steps"),
    )
    objective, milestone, check = tables.EXECUTION_TEXT
    phases = _list({"anyOf": [_TEXT_RULE, step]}, 1)
    execution = _open(
        {objective: _TEXT_RULE, "phases": phases, milestone: _TEXT_RULE, check: _TEXT_RULE}
    )
    return _open(
        {
            "candidate_id": _CANDIDATE_RULE,
            "execution": execution,
            "claims": _list(_rules_record(tables.CLAIM)),
        }
    )


def _verify_rules() -> JsonSchema:
    return _open(
        {
            "candidate_id": _CANDIDATE_RULE,
            "evidence_assessments": _list(_rules_record(tables.EVIDENCE_ASSESSMENT)),
            "claim_assessments": _list(_rules_record(tables.CLAIM_ASSESSMENT)),
        }
        | {key: _NUMBER | {"minimum": 0, "maximum": 100} for key in tables.SCORES}
        | {"overall_confidence": _RULE_KINDS["level"], "red_flags": _list(_STRING)}
    )


def _critique_rules() -> JsonSchema:
    return _open(
        {
            "candidate_id": _CANDIDATE_RULE,
            "strengths": _list(_TEXT_RULE),
            "weaknesses": _list(_TEXT_RULE),
            "score_adjustments": {"type": "object", "additionalProperties": _NUMBER},
            "penalty_points": _NUMBER | {"minimum": 0},
            "verdict": {"enum": list(tables.VERDICTS)},
            "fatal_flaw": {"type": "boolean"},
            "elimination_reason": _STRING,
        },
        optional=("elimination_reason",),
    )


_RULES_BY_PHASE: Final[Mapping[Phase, Callable[[], JsonSchema]]] = {
    Phase.SCOUT: _scout_rules,
    Phase.BUILD: _build_rules,
    Phase.VERIFY: _verify_rules,
    Phase.CRITIQUE: _critique_rules,
}


def accepted_output_schema(phase: Phase) -> JsonSchema:
    """The JSON Schema of what the validators accept as a ``phase`` output (extra keys allowed)."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema"} | _RULES_BY_PHASE[phase]()
    return copy.deepcopy(schema)  # the parts are shared constants: the caller gets its own
