"""Every rule of spec/SCHEMAS.md, passing and failing, with the exact first reason line."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.protocol import (
    RESPONSE_CAP_BYTES,
    CompletionBody,
    Envelope,
    InvalidMessage,
    Phase,
    Role,
    SchemaViolation,
    check_required_keys,
    loads,
    schema_checker,
    schema_predicates,
    token_count_warnings,
    validate_envelope,
    validate_output,
)
from palaestra.protocol.violations import Violation
from tests.unit.strategies import json_values as any_json

CANDIDATE = "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
OTHER = "0192f4a9-1be4-7123-b21d-ffffffffffff"


# Minimal valid outputs, one per phase; every call returns a fresh dict.


def scout_output() -> dict[str, Any]:
    return {
        "candidate_title": "Automated invoicing for service businesses",
        "target_customer": "Small service businesses (5-20 employees)",
        "core_problem": "Manual invoicing from timesheets costs hours each week",
        "proposed_solution": "Turn timesheets into ready-to-send invoices",
        "why_now": "Small-business accounting APIs stabilised recently",
        "claims": [{"type": "market", "text": "Most small firms still invoice by hand"}],
        "evidence": [{"kind": "survey", "summary": "Owners report four hours a week"}],
    }


def build_output() -> dict[str, Any]:
    return {
        "candidate_id": CANDIDATE,
        "execution": {
            "objective": "Ship a paid pilot to ten firms",
            "phases": [
                "Interview ten owners",
                {
                    "title": "Pilot",
                    "objective": "Invoices out of real timesheets",
                    "outcome": "Ten paying firms",
                    "reality_check": "Owners may not trust automation",
                    "operator_guidance": "Do the first runs by hand",
                    "steps": ["Recruit firms", "Ship the importer"],
                },
            ],
            "first_milestone": "First invoice sent from a timesheet",
            "success_check": "Five firms renew after a month",
        },
        "claims": [{"type": "feasibility", "text": "The accounting APIs cover invoices"}],
    }


def verify_output() -> dict[str, Any]:
    return {
        "candidate_id": CANDIDATE,
        "evidence_assessments": [
            {
                "kind": "survey",
                "summary": "Owners report four hours a week",
                "reliability": "medium",
                "specificity": "high",
                "note": "Self-reported",
            }
        ],
        "claim_assessments": [
            {
                "type": "market",
                "text": "Most small firms still invoice by hand",
                "supported": True,
                "confidence": "low",
                "note": "One source",
            }
        ],
        "evidence_quality_score": 72,
        "claim_coverage_score": 64.5,
        "overall_confidence": "medium",
        "red_flags": ["Thin evidence"],
    }


def critique_output() -> dict[str, Any]:
    return {
        "candidate_id": CANDIDATE,
        "strengths": ["Clear buyer"],
        "weaknesses": ["Crowded market"],
        "score_adjustments": {"market": -5, "execution": 2.5},
        "penalty_points": 3,
        "verdict": "pass",
        "fatal_flaw": False,
        "elimination_reason": "",
    }


FIXTURES = {
    Phase.SCOUT: scout_output,
    Phase.BUILD: build_output,
    Phase.VERIFY: verify_output,
    Phase.CRITIQUE: critique_output,
}

DELETE = object()


def edit(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with ``path`` (``a.b[1].c``) set to ``value``, or removed by DELETE."""
    doc = copy.deepcopy(doc)
    parts: list[str | int] = [
        int(token[1:-1]) if token.startswith("[") else token
        for token in re.findall(r"\[\d+\]|[^.\[\]]+", path)
    ]
    target: Any = doc
    for part in parts[:-1]:
        target = target[part]
    if value is DELETE:
        del target[parts[-1]]
    else:
        target[parts[-1]] = value
    return doc


def reason_of(phase: Phase, output: Any, candidate_id: str | None = CANDIDATE) -> str:
    with pytest.raises(SchemaViolation) as caught:
        validate_output(phase, output, candidate_id)
    exc = caught.value
    assert exc.message == str(exc) == exc.violations[0].reason
    return exc.message


def passes(phase: Phase, output: dict[str, Any], candidate_id: str | None = CANDIDATE) -> None:
    assert validate_output(phase, output, candidate_id) is output


# Values that are not "text", and the problem each is reported with.
NOT_TEXT = [
    ("", "must not be empty"),
    ("   ", "must not be empty"),
    ("\t\n \r", "must not be empty"),
    (42, "expected a string, got number"),
    (4.5, "expected a string, got number"),
    (True, "expected a string, got boolean"),
    (None, "expected a string, got null"),
    ([], "expected a string, got array"),
    ({"text": "x"}, "expected a string, got object"),
]
NOT_STRING = [(value, problem) for value, problem in NOT_TEXT if problem != "must not be empty"]
NOT_ARRAY = [
    ("x", "expected an array, got string"),
    ({}, "expected an array, got object"),
    (None, "expected an array, got null"),
    (0, "expected an array, got number"),
    (False, "expected an array, got boolean"),
]
NOT_NUMBER = [
    ("80", "expected a number, got string"),
    (True, "expected a number, got boolean"),
    (False, "expected a number, got boolean"),
    (None, "expected a number, got null"),
    ([50], "expected a number, got array"),
]
NOT_OBJECT = [
    ("x", "expected an object, got string"),
    ([], "expected an object, got array"),
    (None, "expected an object, got null"),
    (1, "expected an object, got number"),
    (True, "expected an object, got boolean"),
]
NOT_LEVEL = [
    ("very", 'expected one of high, medium, low, got "very"'),
    ("HIGH", 'expected one of high, medium, low, got "HIGH"'),
    ("", 'expected one of high, medium, low, got ""'),
    (1, "expected one of high, medium, low, got number"),
    (None, "expected one of high, medium, low, got null"),
]


def cases(paths: list[str], bad: list[tuple[Any, str]]) -> list[Any]:
    return [
        pytest.param(path, value, f"Validation failed: {path}: {problem}", id=f"{path}={value!r}")
        for path in paths
        for value, problem in bad
    ]


def missing(paths: list[str]) -> list[Any]:
    return [
        pytest.param(path, DELETE, f"Validation failed: Missing {path}", id=f"missing-{path}")
        for path in paths
    ]


# --- the output object itself ----------------------------------------------------------------


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ([], "Validation failed: output: expected an object, got array"),
        ("{}", "Validation failed: output: expected an object, got string"),
        (None, "Validation failed: output: expected an object, got null"),
        (7, "Validation failed: output: expected an object, got number"),
        (False, "Validation failed: output: expected an object, got boolean"),
    ],
)
def test_output_must_be_an_object(phase: Phase, output: Any, reason: str) -> None:
    assert reason_of(phase, output) == reason


@pytest.mark.parametrize("phase", list(Phase))
def test_each_fixture_is_valid(phase: Phase) -> None:
    passes(phase, FIXTURES[phase]())


@pytest.mark.parametrize("phase", list(Phase))
def test_extra_keys_are_allowed_and_kept(phase: Phase) -> None:
    doc = FIXTURES[phase]()
    doc["rationale"] = {"nested": [1, "two", None]}
    doc["confidence_notes"] = "volunteered"
    result = validate_output(phase, doc, CANDIDATE)
    assert result["rationale"] == {"nested": [1, "two", None]}
    assert result["confidence_notes"] == "volunteered"


@pytest.mark.parametrize("phase", list(Phase))
def test_empty_object_reports_the_first_documented_key(phase: Phase) -> None:
    first = {
        Phase.SCOUT: "candidate_title",
        Phase.BUILD: "candidate_id",
        Phase.VERIFY: "candidate_id",
        Phase.CRITIQUE: "candidate_id",
    }[phase]
    assert reason_of(phase, {}) == f"Validation failed: Missing {first}"


def test_every_violation_is_collected_in_documented_order() -> None:
    doc = edit(edit(scout_output(), "candidate_title", DELETE), "why_now", "  ")
    doc = edit(doc, "evidence[0].summary", 3)
    with pytest.raises(SchemaViolation) as caught:
        validate_output(Phase.SCOUT, doc)
    assert [v.reason for v in caught.value.violations] == [
        "Validation failed: Missing candidate_title",
        "Validation failed: why_now: must not be empty",
        "Validation failed: evidence[0].summary: expected a string, got number",
    ]
    assert caught.value.violations[0] == Violation("candidate_title")


# --- the 262,144-byte cap ----------------------------------------------------------------------


def serialized_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def padded(filler: str, size: int) -> dict[str, Any]:
    """A valid Scout output whose compact UTF-8 serialization is ``size`` bytes."""
    doc = scout_output()
    doc["padding"] = ""
    room = size - serialized_size(doc)
    width = len(filler.encode())
    doc["padding"] = filler * (room // width) + "x" * (room % width)
    assert serialized_size(doc) == size
    return doc


@pytest.mark.parametrize("filler", ["x", "é", "€"])
def test_output_at_the_cap_passes(filler: str) -> None:
    passes(Phase.SCOUT, padded(filler, RESPONSE_CAP_BYTES))


@pytest.mark.parametrize("filler", ["x", "é", "€"])
def test_output_one_byte_over_the_cap_fails(filler: str) -> None:
    assert RESPONSE_CAP_BYTES == 262_144
    doc = padded(filler, RESPONSE_CAP_BYTES + 1)
    assert reason_of(Phase.SCOUT, doc) == "Validation failed: output: exceeds 262144 bytes"


def test_the_cap_counts_bytes_not_characters() -> None:
    doc = padded("é", RESPONSE_CAP_BYTES + 1)
    assert len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False)) < RESPONSE_CAP_BYTES
    assert reason_of(Phase.SCOUT, doc) == "Validation failed: output: exceeds 262144 bytes"


def test_deeply_nested_extra_value_is_a_violation_not_a_crash() -> None:
    # loads() accepts nesting 1024 deep; the output check must still answer in the
    # spec's terms rather than letting a serializer error escape.
    doc = scout_output()
    doc["trace"] = loads(b"[" * 300 + b"]" * 300)
    assert reason_of(Phase.SCOUT, doc) == (
        "Validation failed: output: cannot be serialized: Recursion limit reached"
    )


# --- Scout -------------------------------------------------------------------------------------

SCOUT_TEXT = ["candidate_title", "target_customer", "core_problem", "proposed_solution", "why_now"]


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        *missing([*SCOUT_TEXT, "claims", "evidence"]),
        *missing(["claims[0].type", "claims[0].text", "evidence[0].kind", "evidence[0].summary"]),
        *cases(SCOUT_TEXT, NOT_TEXT),
        *cases(["claims", "evidence"], NOT_ARRAY),
        *cases(["claims[0]", "evidence[0]"], NOT_OBJECT),
        *cases(["claims[0].type", "claims[0].text"], NOT_TEXT),
        *cases(["evidence[0].kind", "evidence[0].summary"], NOT_TEXT),
        (
            "claims",
            [{"type": "market", "text": "ok"}, {"type": "market"}],
            "Validation failed: Missing claims[1].text",
        ),
        (
            "evidence",
            [{"kind": "survey", "summary": "ok"}, "a quote"],
            "Validation failed: evidence[1]: expected an object, got string",
        ),
    ],
)
def test_scout_rejects(path: str, value: Any, reason: str) -> None:
    assert reason_of(Phase.SCOUT, edit(scout_output(), path, value), None) == reason


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("claims", []),
        ("evidence", []),
        ("candidate_title", "  padded but present  "),
        ("core_problem", "Überweisungen dauern zu lange"),
        ("why_now", "x"),
        ("claims[0].source", "extra key inside an item"),
        ("evidence", [{"kind": "a", "summary": "b"}, {"kind": "c", "summary": "d", "url": 1}]),
    ],
)
def test_scout_accepts(path: str, value: Any) -> None:
    passes(Phase.SCOUT, edit(scout_output(), path, value), None)


def test_scout_ignores_candidate_id() -> None:
    passes(Phase.SCOUT, scout_output(), None)
    passes(Phase.SCOUT, scout_output(), OTHER)


# --- candidate_id (Build, Verify, Critique) ----------------------------------------------------

CANDIDATE_PHASES = [Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE]


@pytest.mark.parametrize("phase", CANDIDATE_PHASES)
@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (DELETE, "Validation failed: Missing candidate_id"),
        (
            OTHER,
            f"Validation failed: candidate_id: must equal the dispatched candidate {CANDIDATE}",
        ),
        (
            CANDIDATE.upper(),
            f"Validation failed: candidate_id: must equal the dispatched candidate {CANDIDATE}",
        ),
        (
            f" {CANDIDATE} ",
            f"Validation failed: candidate_id: must equal the dispatched candidate {CANDIDATE}",
        ),
        ("", "Validation failed: candidate_id: must not be empty"),
        ("  ", "Validation failed: candidate_id: must not be empty"),
        (7, "Validation failed: candidate_id: expected a string, got number"),
        (None, "Validation failed: candidate_id: expected a string, got null"),
    ],
)
def test_candidate_id_rejects(phase: Phase, value: Any, reason: str) -> None:
    assert reason_of(phase, edit(FIXTURES[phase](), "candidate_id", value)) == reason


@pytest.mark.parametrize("phase", CANDIDATE_PHASES)
def test_candidate_id_must_equal_the_dispatched_one(phase: Phase) -> None:
    doc = FIXTURES[phase]()
    passes(phase, doc, CANDIDATE)
    assert reason_of(phase, doc, OTHER) == (
        f"Validation failed: candidate_id: must equal the dispatched candidate {OTHER}"
    )


@pytest.mark.parametrize("phase", CANDIDATE_PHASES)
def test_candidate_id_without_a_dispatched_one_is_any_text(phase: Phase) -> None:
    passes(phase, edit(FIXTURES[phase](), "candidate_id", "whatever-the-agent-says"), None)
    assert reason_of(phase, edit(FIXTURES[phase](), "candidate_id", " "), None) == (
        "Validation failed: candidate_id: must not be empty"
    )


# --- Build -------------------------------------------------------------------------------------

PHASE_STRING_KEYS = ["title", "objective", "outcome", "reality_check", "operator_guidance"]


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        ("execution", DELETE, "Validation failed: Missing execution"),
        *missing(
            [
                "execution.objective",
                "execution.phases",
                "execution.first_milestone",
                "execution.success_check",
                "claims",
                "claims[0].type",
                "claims[0].text",
            ]
        ),
        *cases(["execution"], NOT_OBJECT),
        *cases(
            ["execution.objective", "execution.first_milestone", "execution.success_check"],
            NOT_TEXT,
        ),
        *cases(["execution.phases", "claims"], NOT_ARRAY),
        ("execution.phases", [], "Validation failed: execution.phases: must have at least 1 item"),
        ("execution.phases[0]", "", "Validation failed: execution.phases[0]: must not be empty"),
        ("execution.phases[0]", " \n", "Validation failed: execution.phases[0]: must not be empty"),
        (
            "execution.phases[0]",
            3,
            "Validation failed: execution.phases[0]: expected text or an object, got number",
        ),
        (
            "execution.phases[0]",
            None,
            "Validation failed: execution.phases[0]: expected text or an object, got null",
        ),
        (
            "execution.phases[0]",
            ["a"],
            "Validation failed: execution.phases[0]: expected text or an object, got array",
        ),
        (
            "execution.phases[0]",
            True,
            "Validation failed: execution.phases[0]: expected text or an object, got boolean",
        ),
        *cases([f"execution.phases[1].{key}" for key in PHASE_STRING_KEYS], NOT_STRING),
        *cases(["execution.phases[1].steps"], NOT_ARRAY),
        (
            "execution.phases[1].steps[1]",
            2,
            "Validation failed: execution.phases[1].steps[1]: expected a string, got number",
        ),
        (
            "execution.phases[1].steps[0]",
            None,
            "Validation failed: execution.phases[1].steps[0]: expected a string, got null",
        ),
        (
            "execution.phases[1].steps[0]",
            {"step": "x"},
            "Validation failed: execution.phases[1].steps[0]: expected a string, got object",
        ),
        *cases(["claims[0]"], NOT_OBJECT),
        *cases(["claims[0].type", "claims[0].text"], NOT_TEXT),
    ],
)
def test_build_rejects(path: str, value: Any, reason: str) -> None:
    assert reason_of(Phase.BUILD, edit(build_output(), path, value)) == reason


def test_build_missing_first_milestone_reason() -> None:
    doc = edit(build_output(), "execution.first_milestone", DELETE)
    assert reason_of(Phase.BUILD, doc) == "Validation failed: Missing execution.first_milestone"


def test_build_steps_index_reason() -> None:
    doc = edit(build_output(), "execution.phases", [{"steps": ["Recruit", 3]}])
    assert reason_of(Phase.BUILD, doc) == (
        "Validation failed: execution.phases[0].steps[1]: expected a string, got number"
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("execution.phases", ["Only a sentence"]),
        ("execution.phases", [{}]),
        ("execution.phases", [{"steps": []}]),
        ("execution.phases", [{"steps": ["", "  "]}]),
        ("execution.phases", [{"title": "", "outcome": " "}]),
        ("execution.phases", [{"title": "T", "owner": 5, "steps": ["a"]}, "next"]),
        ("execution.phases[1].steps", ["one"]),
        ("execution.budget", 1200),
        ("claims", []),
        ("claims[0].weight", 0.5),
    ],
)
def test_build_accepts(path: str, value: Any) -> None:
    passes(Phase.BUILD, edit(build_output(), path, value))


# --- Verify ------------------------------------------------------------------------------------

EVIDENCE_ITEM = "evidence_assessments[0]"
CLAIM_ITEM = "claim_assessments[0]"
SCORES = ["evidence_quality_score", "claim_coverage_score"]
OUT_OF_RANGE = [
    (-0.1, "must be between 0 and 100"),
    (100.5, "must be between 0 and 100"),
    (-1, "must be between 0 and 100"),
    (101, "must be between 0 and 100"),
    (1e9, "must be between 0 and 100"),
]


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        *missing(
            [
                "evidence_assessments",
                "claim_assessments",
                *SCORES,
                "overall_confidence",
                "red_flags",
            ]
        ),
        *missing([f"{EVIDENCE_ITEM}.{key}" for key in ("kind", "summary")]),
        *missing([f"{EVIDENCE_ITEM}.{key}" for key in ("reliability", "specificity")]),
        *missing([f"{CLAIM_ITEM}.{key}" for key in ("type", "text", "supported", "confidence")]),
        *cases(["evidence_assessments", "claim_assessments", "red_flags"], NOT_ARRAY),
        *cases([EVIDENCE_ITEM, CLAIM_ITEM], NOT_OBJECT),
        *cases([f"{EVIDENCE_ITEM}.kind", f"{EVIDENCE_ITEM}.summary"], NOT_TEXT),
        *cases([f"{CLAIM_ITEM}.type", f"{CLAIM_ITEM}.text"], NOT_TEXT),
        *cases(
            [
                f"{EVIDENCE_ITEM}.reliability",
                f"{EVIDENCE_ITEM}.specificity",
                f"{CLAIM_ITEM}.confidence",
                "overall_confidence",
            ],
            NOT_LEVEL,
        ),
        *cases([f"{EVIDENCE_ITEM}.note", f"{CLAIM_ITEM}.note"], NOT_STRING),
        *cases(
            [f"{CLAIM_ITEM}.supported"],
            [
                ("yes", "expected a boolean, got string"),
                ("true", "expected a boolean, got string"),
                (1, "expected a boolean, got number"),
                (0, "expected a boolean, got number"),
                (None, "expected a boolean, got null"),
            ],
        ),
        *cases(SCORES, NOT_NUMBER + OUT_OF_RANGE),
        ("red_flags", [1], "Validation failed: red_flags[0]: expected a string, got number"),
        ("red_flags", ["ok", None], "Validation failed: red_flags[1]: expected a string, got null"),
    ],
)
def test_verify_rejects(path: str, value: Any, reason: str) -> None:
    assert reason_of(Phase.VERIFY, edit(verify_output(), path, value)) == reason


@pytest.mark.parametrize(
    ("path", "value"),
    [
        *[(score, value) for score in SCORES for value in (0, 100, 0.0, 100.0, 55.5, -0.0)],
        *[(f"{EVIDENCE_ITEM}.reliability", level) for level in ("high", "medium", "low")],
        *[(f"{EVIDENCE_ITEM}.specificity", level) for level in ("high", "medium", "low")],
        *[(f"{CLAIM_ITEM}.confidence", level) for level in ("high", "medium", "low")],
        *[("overall_confidence", level) for level in ("high", "medium", "low")],
        (f"{EVIDENCE_ITEM}.note", DELETE),
        (f"{EVIDENCE_ITEM}.note", ""),
        (f"{CLAIM_ITEM}.note", DELETE),
        (f"{CLAIM_ITEM}.supported", False),
        ("evidence_assessments", []),
        ("claim_assessments", []),
        ("red_flags", []),
        ("red_flags", ["", "  ", "two"]),
        (f"{CLAIM_ITEM}.source_url", "https://example.com"),
    ],
)
def test_verify_accepts(path: str, value: Any) -> None:
    passes(Phase.VERIFY, edit(verify_output(), path, value))


# --- Critique ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        *missing(
            [
                "strengths",
                "weaknesses",
                "score_adjustments",
                "penalty_points",
                "verdict",
                "fatal_flaw",
            ]
        ),
        *cases(["strengths", "weaknesses"], NOT_ARRAY),
        *cases(["strengths[0]", "weaknesses[0]"], NOT_TEXT),
        *cases(["score_adjustments"], NOT_OBJECT),
        *cases(["score_adjustments.market"], NOT_NUMBER),
        *cases(["penalty_points"], NOT_NUMBER),
        ("penalty_points", -1, "Validation failed: penalty_points: must be >= 0"),
        ("penalty_points", -0.5, "Validation failed: penalty_points: must be >= 0"),
        (
            "verdict",
            "maybe",
            'Validation failed: verdict: expected one of pass, eliminate, got "maybe"',
        ),
        (
            "verdict",
            "PASS",
            'Validation failed: verdict: expected one of pass, eliminate, got "PASS"',
        ),
        (
            "verdict",
            True,
            "Validation failed: verdict: expected one of pass, eliminate, got boolean",
        ),
        ("verdict", None, "Validation failed: verdict: expected one of pass, eliminate, got null"),
        ("fatal_flaw", "false", "Validation failed: fatal_flaw: expected a boolean, got string"),
        ("fatal_flaw", 0, "Validation failed: fatal_flaw: expected a boolean, got number"),
        ("fatal_flaw", None, "Validation failed: fatal_flaw: expected a boolean, got null"),
        *cases(["elimination_reason"], NOT_STRING),
        (
            "strengths",
            ["fine", "   "],
            "Validation failed: strengths[1]: must not be empty",
        ),
    ],
)
def test_critique_rejects(path: str, value: Any, reason: str) -> None:
    assert reason_of(Phase.CRITIQUE, edit(critique_output(), path, value)) == reason


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("strengths", []),
        ("weaknesses", []),
        ("score_adjustments", {}),
        ("score_adjustments", {"a": 0, "b": -40, "c": 1.5, "d": 1e6, "": 3}),
        ("penalty_points", 0),
        ("penalty_points", 0.0),
        ("penalty_points", 12.5),
        ("penalty_points", 1e6),
        ("verdict", "eliminate"),
        ("verdict", "pass"),
        ("fatal_flaw", True),
        ("elimination_reason", DELETE),
        ("elimination_reason", "Market too small"),
        ("elimination_reason", ""),
    ],
)
def test_critique_accepts(path: str, value: Any) -> None:
    passes(Phase.CRITIQUE, edit(critique_output(), path, value))


# --- the dispatch envelope ---------------------------------------------------------------------


def envelope(**changes: Any) -> dict[str, Any]:
    """A valid Scout dispatch reply with ``changes`` applied (DELETE removes a key)."""
    body = {
        "output": scout_output(),
        "promptTokens": 1200,
        "completionTokens": 345,
        "modelId": "gpt-4o-mini",
    }
    for key, value in changes.items():
        if value is DELETE:
            del body[key]
        else:
            body[key] = value
    return body


def envelope_reason(body: Any, phase: Phase = Phase.SCOUT, candidate_id: str | None = None) -> str:
    with pytest.raises(SchemaViolation) as caught:
        validate_envelope(body, phase, candidate_id)
    assert str(caught.value) == caught.value.violations[0].reason
    return caught.value.message


def test_envelope_returns_the_output_and_its_cost() -> None:
    body = envelope()
    result = validate_envelope(body, Phase.SCOUT)
    assert result == Envelope(
        output=body["output"], prompt_tokens=1200, completion_tokens=345, model_id="gpt-4o-mini"
    )
    assert result.output is body["output"]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"promptTokens": 0, "completionTokens": 0}, (0, 0, "gpt-4o-mini")),
        ({"promptTokens": 12.0, "completionTokens": 3.0}, (12, 3, "gpt-4o-mini")),
        ({"modelId": ""}, (1200, 345, "")),
        ({"latencyMs": 812, "provider": "x"}, (1200, 345, "gpt-4o-mini")),
    ],
    ids=["zero", "integral-float", "empty-model", "extra-keys"],
)
def test_envelope_accepts(changes: dict[str, Any], expected: tuple[int, int, str]) -> None:
    result = validate_envelope(envelope(**changes), Phase.SCOUT)
    assert (result.prompt_tokens, result.completion_tokens, result.model_id) == expected
    assert type(result.prompt_tokens) is int
    assert type(result.completion_tokens) is int


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "Validation failed: body: expected an object, got array"),
        (None, "Validation failed: body: expected an object, got null"),
        ("ok", "Validation failed: body: expected an object, got string"),
        (3, "Validation failed: body: expected an object, got number"),
    ],
)
def test_envelope_body_must_be_an_object(body: Any, reason: str) -> None:
    assert envelope_reason(body) == reason


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("output", DELETE, "Validation failed: Missing output"),
        ("promptTokens", DELETE, "Validation failed: Missing promptTokens"),
        ("completionTokens", DELETE, "Validation failed: Missing completionTokens"),
        ("modelId", DELETE, "Validation failed: Missing modelId"),
        ("output", [], "Validation failed: output: expected an object, got array"),
        ("output", "{}", "Validation failed: output: expected an object, got string"),
        ("output", False, "Validation failed: output: expected an object, got boolean"),
        ("promptTokens", "12", "Validation failed: promptTokens: expected a number, got string"),
        ("promptTokens", True, "Validation failed: promptTokens: expected a number, got boolean"),
        ("promptTokens", None, "Validation failed: promptTokens: expected a number, got null"),
        (
            "completionTokens",
            [1],
            "Validation failed: completionTokens: expected a number, got array",
        ),
        (
            "completionTokens",
            {},
            "Validation failed: completionTokens: expected a number, got object",
        ),
        ("modelId", 5, "Validation failed: modelId: expected a string, got number"),
        ("modelId", None, "Validation failed: modelId: expected a string, got null"),
    ],
)
def test_envelope_rejects(key: str, value: Any, reason: str) -> None:
    assert envelope_reason(envelope(**{key: value})) == reason


def reply_verdict(body: dict[str, Any]) -> str:
    try:
        validate_envelope(body, Phase.SCOUT)
    except SchemaViolation as exc:
        return exc.message
    return "accepted"


def callback_verdict(body: dict[str, Any]) -> str:
    try:
        CompletionBody.parse({"taskId": CANDIDATE} | body)
    except InvalidMessage as exc:
        return exc.message
    return "accepted"


def test_token_counts_are_judged_alike_on_the_reply_and_the_callback() -> None:
    """The synchronous reply's envelope and the completion callback's body hold token
    counts to one rule, the seed's: any number is one, nothing else is."""
    values = [12, 12.0, 0, -0.0, 1e3, 12.5, 0.25, -1, -3.0, "12", True, None, [1], {}]
    values += [2**31 - 1, float(2**31 - 1), 2**31, 1e300]
    bodies = [
        (k, v, envelope(**{k: v})) for k in ("promptTokens", "completionTokens") for v in values
    ]
    assert [(k, v, callback_verdict(body)) for k, v, body in bodies] == [
        (k, v, reply_verdict(body)) for k, v, body in bodies
    ]
    assert [v for v in values if callback_verdict(envelope(promptTokens=v)) != "accepted"] == [
        "12",
        True,
        None,
        [1],
        {},
    ]


@pytest.mark.parametrize(
    ("sent", "recorded", "warning"),
    [
        (12, 12, None),
        (12.0, 12, None),
        (0, 0, None),
        (2**31 - 1, 2**31 - 1, None),
        (12.5, 13, "expected a whole number, got 12.5 (recorded as 13)"),
        (0.25, 0, "expected a whole number, got 0.25 (recorded as 0)"),
        (-1, 0, "must be >= 0, got -1 (recorded as 0)"),
        (-3.5, 0, "expected a whole number, got -3.5 (recorded as 0)"),
        (2**31, 2**31 - 1, "must be <= 2147483647, got 2.14748e+09 (recorded as 2147483647)"),
        (1e300, 2**31 - 1, "must be <= 2147483647, got 1e+300 (recorded as 2147483647)"),
    ],
)
def test_a_token_count_the_seed_accepts_is_recorded_whole_and_our_rule_only_warns(
    sent: float, recorded: int, warning: str | None
) -> None:
    """Where our rule (a whole number >= 0) is stricter than the seed's ``number``, the
    agent is accepted, its count recorded as the nearest whole number the store holds,
    and our rule's finding is a warning."""
    reply = validate_envelope(envelope(promptTokens=sent), Phase.SCOUT)
    callback = CompletionBody.parse({"taskId": CANDIDATE} | envelope(completionTokens=sent))
    assert (reply.prompt_tokens, callback.completion_tokens) == (recorded, recorded)
    assert type(reply.prompt_tokens) is type(callback.completion_tokens) is int
    expected = [] if warning is None else [f"promptTokens: {warning}"]
    assert token_count_warnings(envelope(promptTokens=sent)) == expected


def test_envelope_keys_are_checked_before_the_output() -> None:
    body = envelope(output={"candidate_title": ""}, promptTokens=DELETE)
    assert envelope_reason(body) == "Validation failed: Missing promptTokens"


@pytest.mark.parametrize(
    ("phase", "output", "candidate_id", "reason"),
    [
        (Phase.SCOUT, {}, None, "Validation failed: Missing candidate_title"),
        (
            Phase.BUILD,
            edit(build_output(), "execution.first_milestone", DELETE),
            CANDIDATE,
            "Validation failed: Missing execution.first_milestone",
        ),
        (
            Phase.VERIFY,
            verify_output(),
            OTHER,
            f"Validation failed: candidate_id: must equal the dispatched candidate {OTHER}",
        ),
        (
            Phase.CRITIQUE,
            edit(critique_output(), "verdict", "maybe"),
            CANDIDATE,
            'Validation failed: verdict: expected one of pass, eliminate, got "maybe"',
        ),
    ],
)
def test_envelope_validates_the_output_for_the_phase(
    phase: Phase, output: dict[str, Any], candidate_id: str | None, reason: str
) -> None:
    assert envelope_reason(envelope(output=output), phase, candidate_id) == reason


@pytest.mark.parametrize("phase", list(Phase))
def test_envelope_accepts_each_phase(phase: Phase) -> None:
    body = envelope(output=FIXTURES[phase]())
    assert validate_envelope(body, phase, CANDIDATE).output is body["output"]


# --- the wizard's required-fields subset -------------------------------------------------------

REQUIRED = {
    Role.SCOUT: ["candidate_title", "target_customer", "core_problem", "proposed_solution"],
    Role.BUILDER: ["candidate_id", "execution", "claims"],
    Role.ANALYST: ["strengths", "weaknesses", "verdict"],
}
ROLE_FIXTURE = {Role.SCOUT: scout_output, Role.BUILDER: build_output, Role.ANALYST: critique_output}


@pytest.mark.parametrize("role", list(Role))
def test_required_keys_pass_on_a_full_output(role: Role) -> None:
    check_required_keys(role, ROLE_FIXTURE[role]())  # returns without raising


@pytest.mark.parametrize("role", list(Role))
def test_required_keys_look_only_at_presence(role: Role) -> None:
    # Only the top-level keys matter here; their values are the full schema's business.
    body = dict.fromkeys(REQUIRED[role])
    check_required_keys(role, body)
    check_required_keys(role, {**body, "extra": [1, 2]})


@pytest.mark.parametrize(
    ("role", "key"),
    [(role, key) for role, keys in REQUIRED.items() for key in keys],
)
def test_required_keys_report_the_missing_key(role: Role, key: str) -> None:
    body = ROLE_FIXTURE[role]()
    del body[key]
    with pytest.raises(SchemaViolation) as caught:
        check_required_keys(role, body)
    assert str(caught.value) == f"Validation failed: Missing {key}"
    assert [v.reason for v in caught.value.violations] == [f"Validation failed: Missing {key}"]


@pytest.mark.parametrize("role", list(Role))
def test_required_keys_report_every_missing_key_in_table_order(role: Role) -> None:
    with pytest.raises(SchemaViolation) as caught:
        check_required_keys(role, {"unrelated": 1})
    assert [v.reason for v in caught.value.violations] == [
        f"Validation failed: Missing {key}" for key in REQUIRED[role]
    ]


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "Validation failed: body: expected an object, got array"),
        (None, "Validation failed: body: expected an object, got null"),
        ("{}", "Validation failed: body: expected an object, got string"),
    ],
)
def test_required_keys_need_an_object(role: Role, body: Any, reason: str) -> None:
    with pytest.raises(SchemaViolation) as caught:
        check_required_keys(role, body)
    assert str(caught.value) == reason


def test_analyst_simulation_does_not_need_critique_only_keys() -> None:
    check_required_keys(Role.ANALYST, {"strengths": [], "weaknesses": [], "verdict": 0})


# --- properties: any JSON value gets an answer in the spec's terms ----------------------------

json_values = any_json(text_size=12, key_size=8, width=4, max_leaves=16)
small_json_values = any_json(text_size=12, key_size=4, width=2, max_leaves=3)
near_misses = st.sampled_from(
    ["", "  ", "high", "low", "pass", "maybe", CANDIDATE, OTHER, 0, 100, -0.1, 100.5, 2.0, True]
)


def perturbed(value: Any) -> st.SearchStrategy[Any]:
    """Values shaped like ``value``: each part kept, dropped or swapped for other JSON."""
    if isinstance(value, dict):
        parts = {key: perturbed(item) for key, item in value.items()}
        kept = st.fixed_dictionaries(parts)
        partial = st.fixed_dictionaries({}, optional=parts)
        return st.one_of(kept, kept, partial, small_json_values)
    if isinstance(value, list) and value:
        items = st.one_of(*(perturbed(item) for item in value))
        return st.one_of(st.lists(items, min_size=1, max_size=3), small_json_values)
    return st.one_of(st.just(value), st.just(value), near_misses, small_json_values)


OUTPUTS = {phase: st.one_of(perturbed(make()), json_values) for phase, make in FIXTURES.items()}
ENVELOPES = {
    phase: st.one_of(
        perturbed({"output": make(), "promptTokens": 10, "completionTokens": 2, "modelId": "m"}),
        json_values,
    )
    for phase, make in FIXTURES.items()
}
SIMULATION_REPLIES = {
    role: st.one_of(perturbed(make()), json_values) for role, make in ROLE_FIXTURE.items()
}


def assert_spec_violation(exc: SchemaViolation) -> None:
    assert exc.violations
    assert str(exc) == exc.message == exc.violations[0].reason
    for violation in exc.violations:
        assert violation.reason.startswith("Validation failed: ")


@pytest.mark.parametrize("phase", list(Phase))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_validate_output_answers_any_json(phase: Phase, data: st.DataObject) -> None:
    output = data.draw(OUTPUTS[phase], label="output")
    candidate_id = data.draw(st.sampled_from([CANDIDATE, OTHER, None]), label="candidate_id")
    try:
        result = validate_output(phase, output, candidate_id)
    except SchemaViolation as exc:
        assert_spec_violation(exc)
    else:
        assert result is output
        if phase is not Phase.VERIFY:
            # The wizard's subset is implied by the full schema.
            check_required_keys(phase.role, output)


@pytest.mark.parametrize("phase", list(Phase))
@settings(max_examples=30, deadline=None)
@given(extra=st.dictionaries(st.text(max_size=8).map(lambda k: f"x-{k}"), json_values, max_size=4))
def test_arbitrary_extra_keys_never_break_a_valid_output(
    phase: Phase, extra: dict[str, Any]
) -> None:
    doc = {**FIXTURES[phase](), **extra}
    assert validate_output(phase, doc, CANDIDATE) == {**FIXTURES[phase](), **extra}


@pytest.mark.parametrize("phase", list(Phase))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_validate_envelope_answers_any_json(phase: Phase, data: st.DataObject) -> None:
    body = data.draw(ENVELOPES[phase], label="body")
    try:
        result = validate_envelope(body, phase, CANDIDATE)
    except SchemaViolation as exc:
        assert_spec_violation(exc)
    else:
        assert result.output is body["output"]
        assert result.prompt_tokens == body["promptTokens"] >= 0
        assert result.completion_tokens == body["completionTokens"] >= 0
        assert result.model_id == body["modelId"]


@pytest.mark.parametrize("role", list(Role))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_check_required_keys_answers_any_json(role: Role, data: st.DataObject) -> None:
    body = data.draw(SIMULATION_REPLIES[role], label="body")
    if not isinstance(body, dict):
        with pytest.raises(
            SchemaViolation, match=r"^Validation failed: body: expected an object, got "
        ):
            check_required_keys(role, body)
        return
    absent = [key for key in REQUIRED[role] if key not in body]
    if not absent:
        check_required_keys(role, body)
        return
    with pytest.raises(SchemaViolation) as caught:
        check_required_keys(role, body)
    assert_spec_violation(caught.value)
    assert [v.reason for v in caught.value.violations] == [
        f"Validation failed: Missing {key}" for key in absent
    ]


# --- The predicate and the checker agree ----------------------------------------------------------


def paths_of(value: Any, base: str = "") -> list[str]:
    """Every path inside ``value`` that ``edit``'s notation can name."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if not re.fullmatch(r"\w+", key):
                continue
            path = f"{base}.{key}" if base else key
            found += [path, *paths_of(child, path)]
    elif isinstance(value, list):
        for index, child in enumerate(value):
            path = f"{base}[{index}]"
            found += [path, *paths_of(child, path)]
    return found


#: Values that the rules tell apart from their neighbours.
EDGES: list[Any] = [
    *(None, True, False, 0, -1, 0.5, 100, 100.5, -0.0, 3.0, 2**64 - 1),
    *(math.nan, math.inf, -math.inf),  # not JSON, but an output built in Python may hold them
    *("", "  ", "x", "high", "pass", "eliminate", CANDIDATE, OTHER),
    *([], {}, ["x"], [""], [" "], [1], [{"type": "t", "text": "x"}], {"a": 1}, {"a": True}),
]


def verdicts(phase: Phase, output: dict[str, Any], candidate_id: str | None) -> tuple[bool, bool]:
    """(the predicate's answer, whether the checker found nothing wrong)."""
    valid = schema_predicates.PHASE_PREDICATES[phase]
    checker = schema_checker.Checker()
    schema_checker.PHASE_CHECKERS[phase](checker, output, candidate_id)
    return valid(output, candidate_id), not checker.violations


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("candidate_id", [CANDIDATE, None])
def test_the_predicate_and_the_checker_agree_on_every_single_edit(
    phase: Phase, candidate_id: str | None
) -> None:
    fixture = FIXTURES[phase]()
    for path in paths_of(fixture):
        for value in [DELETE, *EDGES]:
            fast, checked = verdicts(phase, edit(fixture, path, value), candidate_id)
            assert fast == checked, (path, value)


@pytest.mark.parametrize("phase", list(Phase))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_the_predicate_and_the_checker_agree_after_random_edits(
    phase: Phase, data: st.DataObject
) -> None:
    output = FIXTURES[phase]()
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths_of(output)), label="path")
        value = data.draw(
            st.just(DELETE)
            | st.sampled_from(EDGES)
            | any_json(text_size=4, key_size=4, width=3, max_leaves=6),
            label="value",
        )
        output = edit(output, path, value)
    candidate_id = data.draw(st.sampled_from([CANDIDATE, None]), label="candidate_id")
    fast, checked = verdicts(phase, output, candidate_id)
    assert fast == checked


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    ("phase", "path"),
    [(Phase.CRITIQUE, "penalty_points"), (Phase.VERIFY, "evidence_quality_score")],
)
def test_numbers_that_json_cannot_carry_are_refused(phase: Phase, path: str, value: float) -> None:
    """An output built in Python (a house agent, the SDK) may hold them; none is a number."""
    reason = reason_of(phase, edit(FIXTURES[phase](), path, value))
    assert reason == f"Validation failed: {path}: expected a number, got {value}"
