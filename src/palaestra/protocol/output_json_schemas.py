"""The role output schemas as JSON Schema: for generating answers that pass them by construction.

The arena's own model (the house) writes its answers under a grammar derived
from these schemas (llama.cpp's JSON-schema grammar), so every answer parses
and passes :func:`~palaestra.protocol.schemas.validate_output`. They are
built from the same tables as the validators and are narrower than the
rules: every text starts with a character that is not whitespace (the rules'
"not empty after trimming"), numbers are whole and within their range, and
strings and arrays are short, which bounds how many tokens an answer costs.
Everything a schema accepts the validators accept; ``tests/unit`` checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from palaestra.protocol.constants import Phase
from palaestra.protocol.schema_tables import (
    CLAIM,
    CLAIM_ASSESSMENT,
    EVIDENCE,
    EVIDENCE_ASSESSMENT,
    EXECUTION_TEXT,
    LEVELS,
    SCORES,
    SCOUT_TEXT,
    VERDICTS,
    RecordRules,
)

__all__ = ["BRIEF", "FULL", "MAX_ITEMS", "MAX_TEXT_CHARS", "Bounds", "output_json_schema"]

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
        return {"enum": list(LEVELS)}
    return {"type": "boolean"}  # "bool"


def _record(rules: RecordRules, bounds: Bounds) -> JsonSchema:
    # Optional keys (a note) are left out: the answer is shorter and still valid.
    return _object({key: _kind(kind, bounds) for key, kind in rules if not kind.endswith("?")})


def _candidate(candidate_id: str | None) -> JsonSchema:
    return {"const": candidate_id} if candidate_id is not None else _text(64)


def _scout(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    text = _text(bounds.text_chars)
    return _object(
        dict.fromkeys(SCOUT_TEXT, text)
        | {
            "claims": _array(_record(CLAIM, bounds), bounds),
            "evidence": _array(_record(EVIDENCE, bounds), bounds),
        }
    )


def _build(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    text = _text(bounds.text_chars)
    title = _text(min(80, bounds.text_chars))
    phase = _object(
        {"title": title, "objective": text, "steps": _array(text, bounds, 1), "outcome": text}
    )
    objective, milestone, check = EXECUTION_TEXT
    execution = _object(
        {objective: text, "phases": _array(phase, bounds, 1), milestone: text, check: text}
    )
    return _object(
        {
            "candidate_id": _candidate(candidate_id),
            "execution": execution,
            "claims": _array(_record(CLAIM, bounds), bounds),
        }
    )


def _verify(candidate_id: str | None, bounds: Bounds) -> JsonSchema:
    return _object(
        {
            "candidate_id": _candidate(candidate_id),
            "evidence_assessments": _array(_record(EVIDENCE_ASSESSMENT, bounds), bounds),
            "claim_assessments": _array(_record(CLAIM_ASSESSMENT, bounds), bounds),
        }
        | {key: _whole(0, 100) for key in SCORES}
        | {
            "overall_confidence": {"enum": list(LEVELS)},
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
            "verdict": {"enum": list(VERDICTS)},
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
