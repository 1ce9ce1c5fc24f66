"""The role outputs as JSON Schema: what the local model generates under is valid, and the
rules' own schema accepts exactly what the validators accept."""

from __future__ import annotations

import re
from typing import Any

import jsonschema_rs
import pytest

from palaestra.protocol import Phase, SchemaViolation, validate_output
from palaestra.protocol.output_json_schemas import (
    BRIEF,
    MAX_ITEMS,
    MAX_TEXT_CHARS,
    accepted_output_schema,
    output_json_schema,
)
from tests.unit.test_schemas import DELETE, FIXTURES, edit, paths_of

CANDIDATE = "cand-1"


def smallest(schema: dict[str, Any], text: str = "x") -> Any:
    """The smallest instance of ``schema``: required keys only, minimum items, first choices."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema["type"]
    if kind == "object":
        return {key: smallest(schema["properties"][key], text) for key in schema["required"]}
    if kind == "array":
        return [smallest(schema["items"], text) for _ in range(max(schema["minItems"], 1))]
    if kind == "boolean":
        return False
    assert kind == "string"
    return text


def nodes(schema: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Every schema of type ``kind`` inside ``schema``."""
    found = [schema] if schema.get("type") == kind else []
    children = [*schema.get("properties", {}).values()]
    if "items" in schema:
        children.append(schema["items"])
    for child in children:
        found += nodes(child, kind)
    return found


def texts(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return nodes(schema, "string")


def arrays(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return nodes(schema, "array")


@pytest.mark.parametrize("phase", list(Phase))
def test_the_smallest_answer_of_every_schema_is_valid(phase: Phase) -> None:
    candidate = None if phase is Phase.SCOUT else CANDIDATE
    validate_output(phase, smallest(output_json_schema(phase, candidate)), candidate)


@pytest.mark.parametrize("phase", list(Phase))
def test_a_blank_text_is_outside_the_schema_and_invalid(phase: Phase) -> None:
    candidate = None if phase is Phase.SCOUT else CANDIDATE
    schema = output_json_schema(phase, candidate)
    patterns = {s["pattern"] for s in texts(schema)}
    assert patterns
    for pattern in patterns:
        assert re.fullmatch(pattern, "A plan for bakeries")
        for bad in (" ", "  leading space", "\u00a0x", 'a "quote"', "back\\slash", "line\nbreak"):
            assert not re.fullmatch(pattern, bad), (pattern, bad)
    assert not re.fullmatch(pattern, "x" * (MAX_TEXT_CHARS + 1))
    with pytest.raises(SchemaViolation):
        validate_output(phase, smallest(schema, " "), candidate)


@pytest.mark.parametrize("phase", [Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE])
def test_the_dispatched_candidate_is_fixed_in_the_schema(phase: Phase) -> None:
    assert output_json_schema(phase, CANDIDATE)["properties"]["candidate_id"] == {
        "const": CANDIDATE
    }


# The rules as JSON Schema: accepted by the schema exactly when accepted by the validators.

#: Values put in place of every part of a valid output, and the ways each part can be wrong.
SUBSTITUTES: list[Any] = [
    DELETE,
    "",
    " \t\u3000\u0085",
    "\ufeffx",
    "x",
    "high",
    "pass",
    0,
    -1,
    50,
    100.5,
    2.5,
    True,
    None,
    [],
    ["x"],
    [" "],
    [3],
    [{}],
    [{"title": 1}],
    {},
    {"k": 1},
    {"k": "x"},
]


def valid(phase: Phase, output: Any) -> bool:
    try:
        validate_output(phase, output)
    except SchemaViolation:
        return False
    return True


@pytest.mark.parametrize("phase", list(Phase))
def test_the_rules_schema_accepts_exactly_what_the_validators_accept(phase: Phase) -> None:
    schema = accepted_output_schema(phase)
    accepts = jsonschema_rs.validator_for(schema).is_valid
    good = FIXTURES[phase]()
    variants = [good, {**good, "extra": {"kept": True}}, smallest(output_json_schema(phase))]
    for path in paths_of(good):
        variants += [edit(good, path, value) for value in SUBSTITUTES]
    judged = {True: 0, False: 0}
    for output in variants:
        verdict = valid(phase, output)
        assert accepts(output) is verdict, (output, verdict)
        judged[verdict] += 1
    assert judged[True] > 10  # both sides of the rules are exercised
    assert judged[False] > 100


@pytest.mark.parametrize("phase", list(Phase))
def test_the_rules_schema_reads_the_tables_and_is_the_callers_own(phase: Phase) -> None:
    schema = accepted_output_schema(phase)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "additionalProperties" not in schema  # extra keys are allowed and kept
    schema["properties"].clear()
    assert accepted_output_schema(phase)["properties"]  # a fresh one each call


@pytest.mark.parametrize("phase", list(Phase))
def test_brief_answers_hold_one_item_a_list_and_short_texts_and_stay_valid(phase: Phase) -> None:
    candidate = None if phase is Phase.SCOUT else CANDIDATE
    schema = output_json_schema(phase, candidate, BRIEF)
    assert {a["maxItems"] for a in arrays(schema)} == {1}
    for pattern in {s["pattern"] for s in texts(schema)}:
        assert re.fullmatch(pattern, "x" * min(BRIEF.text_chars, 64))
        assert not re.fullmatch(pattern, "x" * (BRIEF.text_chars + 1))
    longest = "y" * BRIEF.text_chars
    validate_output(phase, smallest(schema, longest), candidate)
    default = output_json_schema(phase, candidate)
    assert {a["maxItems"] for a in arrays(default)} == {MAX_ITEMS}
