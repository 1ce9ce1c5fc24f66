"""Every wire message of edgearena-v1 and cage.v1, parsed from the seeds' own examples."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.errors import ProtocolError
from palaestra.protocol import (
    AnalystSimulation,
    BuildSimulation,
    ChallengeReply,
    ChallengeRequest,
    ChatMessage,
    CompletionBody,
    DispatchPayload,
    DispatchReply,
    HandshakeRequest,
    InvalidMessage,
    Phase,
    ScoutSimulation,
    Side,
    SimulationCandidate,
    TurnReply,
    TurnRequest,
    idempotency_key,
    loads,
    parse_agent_request,
    parse_cage_request,
)
from palaestra.protocol.constants import IDEMPOTENCY_HEADER
from palaestra.protocol.edgearena import HandshakeReply
from palaestra.protocol.models import WireModel
from tests.unit.strategies import json_values as any_json

# The request and reply bodies below are copied from the seed documents.

HANDSHAKE = """{
  "type": "handshake",
  "protocol": "edgearena-v1",
  "request_id": "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
}"""

HANDSHAKE_REPLY = """{ "ok": true, "protocol": "edgearena-v1" }"""

SCOUT_SIMULATION = """{
  "type": "scout_task",
  "protocol": "edgearena-v1",
  "task_id": "<uuidv7>",
  "role": "SCOUT",
  "deadline_ms": 30000,
  "goal": "Find a promising SaaS niche for a solo founder.",
  "launchpad": "make-money",
  "messages": [
    { "role": "system", "content": "<scout system prompt>" },
    { "role": "user", "content": "Find a promising SaaS niche for a solo founder." }
  ]
}"""

BUILD_SIMULATION = """{
  "type": "build_task",
  "protocol": "edgearena-v1",
  "task_id": "<uuidv7>",
  "role": "BUILDER",
  "deadline_ms": 90000,
  "candidate": {
    "id": "<uuidv7>",
    "title": "Automated invoicing for service businesses",
    "target_customer": "Small service businesses (5–20 employees)",
    "core_problem": "Manual invoicing from timesheets costs hours of admin each week",
    "solution_summary": "An opinionated tool that turns timesheets into ready-to-send invoices",
    "why_now": "Small-business accounting APIs stabilized in the last 18 months"
  },
  "messages": [
    { "role": "system", "content": "<builder system prompt>" },
    { "role": "user",   "content": "<builder user prompt>" }
  ]
}"""

ANALYST_SIMULATION = """{
  "type": "analyst_task",
  "protocol": "edgearena-v1",
  "task_id": "<uuidv7>",
  "role": "ANALYST",
  "deadline_ms": 30000,
  "candidate": {
    "id": "<uuidv7>",
    "title": "Automated invoicing for service businesses",
    "solution_summary": "An opinionated tool that turns timesheets into ready-to-send invoices"
  },
  "messages": [
    { "role": "system", "content": "<critic system prompt>" },
    { "role": "user",   "content": "<critic user prompt>" }
  ]
}"""

# The seed gives DispatchPayload, ExternalAgentResponse and the completion body as
# TypeScript interfaces; these are instances of them.

DISPATCH = """{
  "taskId": "0192f4a9-1be4-7123-b21d-0a55f00d4c8e",
  "runId": "0192f4a9-0000-7000-8000-000000000001",
  "phase": "BUILD",
  "role": "BUILD",
  "candidateId": "0192f4a9-0000-7000-8000-0000000000c1",
  "goal": "Find a promising SaaS niche for a solo founder.",
  "launchpadName": "Make Money",
  "messages": [
    { "role": "system", "content": "<builder system prompt>" },
    { "role": "user", "content": "<builder user prompt>" }
  ]
}"""

DISPATCH_SCOUT = """{
  "taskId": "0192f4a9-1be4-7123-b21d-0a55f00d4c8f",
  "runId": "0192f4a9-0000-7000-8000-000000000001",
  "phase": "SCOUT",
  "role": "SCOUT",
  "candidateId": null,
  "goal": "Find a promising SaaS niche for a solo founder.",
  "launchpadName": "Make Money",
  "messages": [{ "role": "system", "content": "<scout system prompt>" }]
}"""

DISPATCH_REPLY = """{
  "output": { "candidate_title": "Invoice autopilot" },
  "promptTokens": 1200,
  "completionTokens": 345,
  "modelId": "gpt-4o-mini"
}"""

COMPLETION = """{
  "taskId": "0192f4a9-1be4-7123-b21d-0a55f00d4c8e",
  "output": { "candidate_title": "Invoice autopilot" },
  "promptTokens": 1200,
  "completionTokens": 345,
  "modelId": "gpt-4o-mini"
}"""

CHALLENGE = """{ "type": "challenge", "nonce": "9f2c..." }"""
CHALLENGE_REPLY = """{ "nonce": "9f2c..." }"""
TURN = """{
  "type": "turn",
  "match_id": "...",
  "turn": 3,
  "your_role": "defender",
  "ruleset": "cage.v1",
  "deadline_ms": 60000,
  "payload": "…the task prompt, including the untrusted opponent block…"
}"""
TURN_REPLY = """{ "message": "…whatever your agent decided to say…" }"""

EXAMPLES: list[tuple[type[WireModel], str]] = [
    (HandshakeRequest, HANDSHAKE),
    (HandshakeReply, HANDSHAKE_REPLY),
    (ScoutSimulation, SCOUT_SIMULATION),
    (BuildSimulation, BUILD_SIMULATION),
    (AnalystSimulation, ANALYST_SIMULATION),
    (DispatchPayload, DISPATCH),
    (DispatchPayload, DISPATCH_SCOUT),
    (DispatchReply, DISPATCH_REPLY),
    (CompletionBody, COMPLETION),
    (ChallengeRequest, CHALLENGE),
    (ChallengeReply, CHALLENGE_REPLY),
    (TurnRequest, TURN),
    (TurnReply, TURN_REPLY),
]
EXAMPLE_IDS = [
    "handshake",
    "handshake-reply",
    "scout-simulation",
    "build-simulation",
    "analyst-simulation",
    "dispatch",
    "dispatch-scout",
    "dispatch-reply",
    "completion",
    "challenge",
    "challenge-reply",
    "turn",
    "turn-reply",
]


def body(text: str) -> dict[str, Any]:
    value = loads(text)
    assert isinstance(value, dict)
    return value


def reason_of(model: type[WireModel], value: Any) -> str:
    with pytest.raises(InvalidMessage) as caught:
        model.parse(value)
    return str(caught.value)


@pytest.mark.parametrize(("model", "text"), EXAMPLES, ids=EXAMPLE_IDS)
def test_seed_example_parses_and_round_trips(model: type[WireModel], text: str) -> None:
    message = model.parse(body(text))
    assert isinstance(message, model)
    assert message.wire() == body(text)


@pytest.mark.parametrize(("model", "text"), EXAMPLES, ids=EXAMPLE_IDS)
def test_extra_keys_are_tolerated_and_kept(model: type[WireModel], text: str) -> None:
    value = {**body(text), "x_trace": {"hops": [1, "two", None]}, "harness": "guard-model"}
    wire = model.parse(value).wire()
    assert wire["x_trace"] == {"hops": [1, "two", None]}
    assert wire["harness"] == "guard-model"
    assert wire == value


def test_handshake_fields() -> None:
    message = HandshakeRequest.parse(body(HANDSHAKE))
    assert (message.type, message.protocol) == ("handshake", "edgearena-v1")
    assert message.request_id == "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
    assert HandshakeRequest(request_id="r-1").wire() == {
        "type": "handshake",
        "protocol": "edgearena-v1",
        "request_id": "r-1",
    }
    assert HandshakeReply().wire() == {"ok": True, "protocol": "edgearena-v1"}


def test_simulation_fields() -> None:
    scout = ScoutSimulation.parse(body(SCOUT_SIMULATION))
    assert (scout.type, scout.role, scout.deadline_ms) == ("scout_task", "SCOUT", 30000)
    assert scout.goal == "Find a promising SaaS niche for a solo founder."
    assert scout.launchpad == "make-money"
    assert scout.messages == [
        ChatMessage(role="system", content="<scout system prompt>"),
        ChatMessage(role="user", content="Find a promising SaaS niche for a solo founder."),
    ]
    build = BuildSimulation.parse(body(BUILD_SIMULATION))
    assert (build.type, build.role, build.deadline_ms) == ("build_task", "BUILDER", 90000)
    assert build.candidate.target_customer == "Small service businesses (5–20 employees)"
    assert (
        build.candidate.why_now == "Small-business accounting APIs stabilized in the last 18 months"
    )
    analyst = AnalystSimulation.parse(body(ANALYST_SIMULATION))
    assert (analyst.type, analyst.role, analyst.deadline_ms) == ("analyst_task", "ANALYST", 30000)
    assert analyst.candidate == SimulationCandidate(
        id="<uuidv7>",
        title="Automated invoicing for service businesses",
        solution_summary="An opinionated tool that turns timesheets into ready-to-send invoices",
    )
    assert analyst.candidate.core_problem is None


def test_dispatch_fields_use_python_names_and_camel_case_on_the_wire() -> None:
    message = DispatchPayload.parse(body(DISPATCH))
    assert message.task_id == "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
    assert message.run_id == "0192f4a9-0000-7000-8000-000000000001"
    assert message.candidate_id == "0192f4a9-0000-7000-8000-0000000000c1"
    assert message.launchpad_name == "Make Money"
    assert message.phase_enum is Phase.BUILD
    assert set(message.wire()) == {
        "taskId",
        "runId",
        "phase",
        "role",
        "candidateId",
        "goal",
        "launchpadName",
        "messages",
    }
    scout = DispatchPayload.parse(body(DISPATCH_SCOUT))
    assert scout.candidate_id is None
    assert scout.wire()["candidateId"] is None


def test_dispatch_reply_and_completion_use_camel_case_on_the_wire() -> None:
    reply = DispatchReply.parse(body(DISPATCH_REPLY))
    assert (reply.prompt_tokens, reply.completion_tokens, reply.model_id) == (
        1200,
        345,
        "gpt-4o-mini",
    )
    assert set(reply.wire()) == {"output", "promptTokens", "completionTokens", "modelId"}
    completion = CompletionBody.parse(body(COMPLETION))
    assert completion.task_id == "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
    assert completion.output == {"candidate_title": "Invoice autopilot"}
    assert set(completion.wire()) == {
        "taskId",
        "output",
        "promptTokens",
        "completionTokens",
        "modelId",
    }


def test_completion_model_id_is_optional() -> None:
    value = body(COMPLETION)
    del value["modelId"]
    completion = CompletionBody.parse(value)
    assert completion.model_id is None
    assert completion.wire() == value
    assert CompletionBody.parse(completion.wire()) == completion


def test_optional_keys_left_empty_are_absent_not_null() -> None:
    # The seed's ANALYST candidate has three keys; the other three are absent, not null.
    brief = SimulationCandidate(id="c-1", title="Invoicing", solution_summary="Timesheets in")
    assert brief.wire() == {"id": "c-1", "title": "Invoicing", "solution_summary": "Timesheets in"}
    analyst = AnalystSimulation(task_id="t-1", deadline_ms=30000, messages=[], candidate=brief)
    assert analyst.wire()["candidate"] == brief.wire()
    completion = CompletionBody(task_id="t-1", output={}, prompt_tokens=1, completion_tokens=2)
    assert "modelId" not in completion.wire()
    # A required key whose value may be null stays, as candidateId does for SCOUT.
    assert DispatchPayload.parse(body(DISPATCH_SCOUT)).wire()["candidateId"] is None


def test_cage_fields() -> None:
    assert ChallengeRequest.parse(body(CHALLENGE)).nonce == "9f2c..."
    assert ChallengeReply(nonce="9f2c...").wire() == {"nonce": "9f2c..."}
    turn = TurnRequest.parse(body(TURN))
    assert (turn.match_id, turn.turn, turn.deadline_ms) == ("...", 3, 60000)
    assert turn.side is Side.DEFENDER
    assert TurnRequest.parse({**body(TURN), "your_role": "attacker"}).side is Side.ATTACKER
    assert TurnReply.parse(body(TURN_REPLY)).message == "…whatever your agent decided to say…"


def test_idempotency_key_is_match_id_colon_turn() -> None:
    assert IDEMPOTENCY_HEADER == "idempotency-key"
    assert idempotency_key("...", 3) == "...:3"
    turn = TurnRequest.parse(body(TURN))
    assert idempotency_key(turn.match_id, turn.turn) == "...:3"
    assert idempotency_key("0192f4a9-aaaa", 12) == "0192f4a9-aaaa:12"


def test_models_are_frozen() -> None:
    turn = TurnRequest.parse(body(TURN))
    with pytest.raises(ValueError, match="frozen"):
        turn.turn = 4  # type: ignore[misc]


# --- strictness --------------------------------------------------------------------------------


def edited(text: str, path: str, value: Any) -> dict[str, Any]:
    """The example with ``path`` (dots, or an int index) replaced; DELETE removes it."""
    doc = copy.deepcopy(body(text))
    parts: list[Any] = [int(p) if p.isdigit() else p for p in path.split(".")]
    target: Any = doc
    for part in parts[:-1]:
        target = target[part]
    if value is DELETE:
        del target[parts[-1]]
    else:
        target[parts[-1]] = value
    return doc


DELETE = object()


@pytest.mark.parametrize(
    ("model", "text", "path", "value", "reason"),
    [
        (
            HandshakeRequest,
            HANDSHAKE,
            "request_id",
            DELETE,
            "Validation failed: Missing request_id",
        ),
        (
            HandshakeRequest,
            HANDSHAKE,
            "request_id",
            1,
            "Validation failed: request_id: Input should be a valid string",
        ),
        (
            HandshakeRequest,
            HANDSHAKE,
            "protocol",
            "edgearena-v2",
            "Validation failed: protocol: Input should be 'edgearena-v1'",
        ),
        (
            HandshakeRequest,
            HANDSHAKE,
            "type",
            "hello",
            "Validation failed: type: Input should be 'handshake'",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "deadline_ms",
            "30000",
            "Validation failed: deadline_ms: Input should be a valid integer",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "deadline_ms",
            30000.0,
            "Validation failed: deadline_ms: Input should be a valid integer",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "deadline_ms",
            True,
            "Validation failed: deadline_ms: Input should be a valid integer",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "deadline_ms",
            -1,
            "Validation failed: deadline_ms: Input should be greater than or equal to 0",
        ),
        (ScoutSimulation, SCOUT_SIMULATION, "goal", DELETE, "Validation failed: Missing goal"),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "launchpad",
            DELETE,
            "Validation failed: Missing launchpad",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "task_id",
            DELETE,
            "Validation failed: Missing task_id",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "role",
            "BUILDER",
            "Validation failed: role: Input should be 'SCOUT'",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "messages.1.role",
            "assistant",
            "Validation failed: messages[1].role: Input should be 'system' or 'user'",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "messages.0.content",
            DELETE,
            "Validation failed: Missing messages[0].content",
        ),
        (
            ScoutSimulation,
            SCOUT_SIMULATION,
            "messages",
            "hello",
            "Validation failed: messages: Input should be a valid list",
        ),
        (
            BuildSimulation,
            BUILD_SIMULATION,
            "candidate.id",
            DELETE,
            "Validation failed: Missing candidate.id",
        ),
        (
            BuildSimulation,
            BUILD_SIMULATION,
            "candidate.title",
            5,
            "Validation failed: candidate.title: Input should be a valid string",
        ),
        (
            BuildSimulation,
            BUILD_SIMULATION,
            "candidate",
            "x",
            "Validation failed: candidate: Input should be a valid dictionary or instance of "
            "SimulationCandidate",
        ),
        (
            AnalystSimulation,
            ANALYST_SIMULATION,
            "candidate",
            DELETE,
            "Validation failed: Missing candidate",
        ),
        (
            AnalystSimulation,
            ANALYST_SIMULATION,
            "role",
            "SCOUT",
            "Validation failed: role: Input should be 'ANALYST'",
        ),
        *[
            (DispatchPayload, DISPATCH, key, DELETE, f"Validation failed: Missing {key}")
            for key in ("taskId", "runId", "phase", "role", "candidateId", "goal")
        ],
        (
            DispatchPayload,
            DISPATCH,
            "launchpadName",
            DELETE,
            "Validation failed: Missing launchpadName",
        ),
        (DispatchPayload, DISPATCH, "messages", DELETE, "Validation failed: Missing messages"),
        (
            DispatchPayload,
            DISPATCH,
            "taskId",
            42,
            "Validation failed: taskId: Input should be a valid string",
        ),
        (
            DispatchPayload,
            DISPATCH,
            "candidateId",
            7,
            "Validation failed: candidateId: Input should be a valid string",
        ),
        (
            DispatchPayload,
            DISPATCH,
            "phase",
            "DEPLOY",
            "Validation failed: phase: Input should be 'SCOUT', 'BUILD', 'VERIFY' or 'CRITIQUE'",
        ),
        (
            DispatchReply,
            DISPATCH_REPLY,
            "promptTokens",
            "1200",
            "Validation failed: promptTokens: expected a number, got string",
        ),
        (
            DispatchReply,
            DISPATCH_REPLY,
            "completionTokens",
            False,
            "Validation failed: completionTokens: expected a number, got boolean",
        ),
        (
            DispatchReply,
            DISPATCH_REPLY,
            "output",
            [],
            "Validation failed: output: Input should be a valid dictionary",
        ),
        (DispatchReply, DISPATCH_REPLY, "modelId", DELETE, "Validation failed: Missing modelId"),
        (CompletionBody, COMPLETION, "taskId", DELETE, "Validation failed: Missing taskId"),
        (CompletionBody, COMPLETION, "output", DELETE, "Validation failed: Missing output"),
        (
            CompletionBody,
            COMPLETION,
            "promptTokens",
            "1200",
            "Validation failed: promptTokens: expected a number, got string",
        ),
        (
            CompletionBody,
            COMPLETION,
            "modelId",
            3,
            "Validation failed: modelId: Input should be a valid string",
        ),
        (ChallengeRequest, CHALLENGE, "nonce", DELETE, "Validation failed: Missing nonce"),
        (
            ChallengeRequest,
            CHALLENGE,
            "nonce",
            5,
            "Validation failed: nonce: Input should be a valid string",
        ),
        (
            ChallengeRequest,
            CHALLENGE,
            "type",
            "turn",
            "Validation failed: type: Input should be 'challenge'",
        ),
        (ChallengeReply, CHALLENGE_REPLY, "nonce", DELETE, "Validation failed: Missing nonce"),
        (
            ChallengeReply,
            CHALLENGE_REPLY,
            "nonce",
            None,
            "Validation failed: nonce: Input should be a valid string",
        ),
        *[
            (TurnRequest, TURN, key, DELETE, f"Validation failed: Missing {key}")
            for key in ("match_id", "turn", "your_role", "deadline_ms", "payload")
        ],
        (
            TurnRequest,
            TURN,
            "turn",
            "3",
            "Validation failed: turn: Input should be a valid integer",
        ),
        (
            TurnRequest,
            TURN,
            "turn",
            3.0,
            "Validation failed: turn: Input should be a valid integer",
        ),
        (
            TurnRequest,
            TURN,
            "turn",
            0,
            "Validation failed: turn: Input should be greater than or equal to 1",
        ),
        (
            TurnRequest,
            TURN,
            "your_role",
            "judge",
            "Validation failed: your_role: Input should be 'attacker' or 'defender'",
        ),
        (
            TurnRequest,
            TURN,
            "ruleset",
            "cage.v2",
            "Validation failed: ruleset: Input should be 'cage.v1'",
        ),
        (
            TurnRequest,
            TURN,
            "deadline_ms",
            "60000",
            "Validation failed: deadline_ms: Input should be a valid integer",
        ),
        (
            TurnRequest,
            TURN,
            "payload",
            ["a"],
            "Validation failed: payload: Input should be a valid string",
        ),
        (TurnReply, TURN_REPLY, "message", DELETE, "Validation failed: Missing message"),
        (
            TurnReply,
            TURN_REPLY,
            "message",
            {"text": "hi"},
            "Validation failed: message: Input should be a valid string",
        ),
    ],
)
def test_strictness(model: type[WireModel], text: str, path: str, value: Any, reason: str) -> None:
    assert reason_of(model, edited(text, path, value)) == reason


@pytest.mark.parametrize(("model", "text"), EXAMPLES, ids=EXAMPLE_IDS)
@pytest.mark.parametrize("value", [None, [], "{}", 3, True])
def test_a_body_that_is_not_an_object_is_refused(
    model: type[WireModel], text: str, value: Any
) -> None:
    expected = f"Input should be a valid dictionary or instance of {model.__name__}"
    assert reason_of(model, value) == f"Validation failed: body: {expected}"


@pytest.mark.parametrize(
    ("model", "text", "field", "expected"),
    [
        (HandshakeRequest, HANDSHAKE, "type", "handshake"),
        (HandshakeRequest, HANDSHAKE, "protocol", "edgearena-v1"),
        (ScoutSimulation, SCOUT_SIMULATION, "type", "scout_task"),
        (ScoutSimulation, SCOUT_SIMULATION, "role", "SCOUT"),
        (BuildSimulation, BUILD_SIMULATION, "protocol", "edgearena-v1"),
        (ChallengeRequest, CHALLENGE, "type", "challenge"),
        (TurnRequest, TURN, "type", "turn"),
        (TurnRequest, TURN, "ruleset", "cage.v1"),
    ],
)
def test_constant_fields_default_when_absent(
    model: type[WireModel], text: str, field: str, expected: str
) -> None:
    assert model.parse(edited(text, field, DELETE)).wire()[field] == expected


# --- telling requests apart --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "model"),
    [
        (HANDSHAKE, HandshakeRequest),
        (SCOUT_SIMULATION, ScoutSimulation),
        (BUILD_SIMULATION, BuildSimulation),
        (ANALYST_SIMULATION, AnalystSimulation),
        (DISPATCH, DispatchPayload),
        (DISPATCH_SCOUT, DispatchPayload),
    ],
)
def test_parse_agent_request_dispatches_by_shape(text: str, model: type[WireModel]) -> None:
    message = parse_agent_request(body(text))
    assert type(message) is model
    assert message.wire() == body(text)


def test_parse_agent_request_prefers_the_type_field() -> None:
    value = {**body(HANDSHAKE), "taskId": "t-1"}
    assert type(parse_agent_request(value)) is HandshakeRequest


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"type": "turn"}, "Validation failed: type: unknown message type 'turn'"),
        (body(CHALLENGE), "Validation failed: type: unknown message type 'challenge'"),
        ({"type": "HANDSHAKE"}, "Validation failed: type: unknown message type 'HANDSHAKE'"),
        ({"type": 5}, "Validation failed: type: unknown message type 5"),
        ({"task_id": "t"}, "Validation failed: type: unknown message type None"),
        ({}, "Validation failed: type: unknown message type None"),
        ([], "Validation failed: body: expected an object"),
        (None, "Validation failed: body: expected an object"),
        ("handshake", "Validation failed: body: expected an object"),
        ({"type": "handshake"}, "Validation failed: Missing request_id"),
        ({"taskId": "t"}, "Validation failed: Missing runId"),
        ({"taskId": 1}, "Validation failed: taskId: Input should be a valid string"),
        (
            {**body(SCOUT_SIMULATION), "deadline_ms": "30000"},
            "Validation failed: deadline_ms: Input should be a valid integer",
        ),
    ],
)
def test_parse_agent_request_refuses(value: Any, reason: str) -> None:
    with pytest.raises(InvalidMessage) as caught:
        parse_agent_request(value)
    assert str(caught.value) == reason


@pytest.mark.parametrize(("text", "model"), [(CHALLENGE, ChallengeRequest), (TURN, TurnRequest)])
def test_parse_cage_request_dispatches_by_type(text: str, model: type[WireModel]) -> None:
    message = parse_cage_request(body(text))
    assert type(message) is model
    assert message.wire() == body(text)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (body(HANDSHAKE), "Validation failed: type: unknown message type 'handshake'"),
        ({"type": "Turn"}, "Validation failed: type: unknown message type 'Turn'"),
        ({"nonce": "9f2c"}, "Validation failed: type: unknown message type None"),
        ([], "Validation failed: type: unknown message type None"),
        (None, "Validation failed: type: unknown message type None"),
        ({"type": ["turn"]}, "Validation failed: type: unknown message type ['turn']"),
        ({"type": "challenge"}, "Validation failed: Missing nonce"),
        ({"type": "turn", "match_id": "m"}, "Validation failed: Missing turn"),
        (
            {**body(TURN), "turn": "3"},
            "Validation failed: turn: Input should be a valid integer",
        ),
    ],
)
def test_parse_cage_request_refuses(value: Any, reason: str) -> None:
    with pytest.raises(InvalidMessage) as caught:
        parse_cage_request(value)
    assert str(caught.value) == reason


def test_invalid_message_is_a_protocol_error() -> None:
    assert issubclass(InvalidMessage, ProtocolError)


# --- properties: any JSON value is parsed or refused with InvalidMessage -----------------------

json_values = any_json(text_size=10, key_size=8, width=4, max_leaves=12)
small_json_values = any_json(text_size=10, key_size=4, width=2, max_leaves=3)
near_misses = st.sampled_from(
    ["", "turn", "challenge", "handshake", "scout_task", "SCOUT", "user", 0, 1, -1, 3.0, True]
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
        return st.one_of(st.lists(items, max_size=3), small_json_values)
    return st.one_of(st.just(value), st.just(value), near_misses, small_json_values)


AGENT_BODIES = st.one_of(
    json_values,
    *(
        perturbed(body(text))
        for text in (HANDSHAKE, SCOUT_SIMULATION, BUILD_SIMULATION, ANALYST_SIMULATION, DISPATCH)
    ),
)
CAGE_BODIES = st.one_of(json_values, perturbed(body(CHALLENGE)), perturbed(body(TURN)))
MODEL_BODIES = {text: st.one_of(json_values, perturbed(body(text))) for _, text in EXAMPLES}


def without_nulls(value: Any) -> Any:
    """An explicit null of an optional key is not sent on (the wire omits unset keys)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def assert_refusal(exc: InvalidMessage) -> None:
    assert isinstance(exc, ProtocolError)
    assert str(exc).startswith("Validation failed: ")


@settings(max_examples=200, deadline=None)
@given(value=AGENT_BODIES)
def test_parse_agent_request_answers_any_json(value: Any) -> None:
    try:
        message = parse_agent_request(value)
    except InvalidMessage as exc:
        assert_refusal(exc)
    else:
        assert isinstance(value, dict)
        wire = message.wire()
        assert all(
            without_nulls(wire.get(key)) == without_nulls(item) for key, item in value.items()
        )


@settings(max_examples=150, deadline=None)
@given(value=CAGE_BODIES)
def test_parse_cage_request_answers_any_json(value: Any) -> None:
    try:
        message = parse_cage_request(value)
    except InvalidMessage as exc:
        assert_refusal(exc)
    else:
        assert isinstance(value, dict)
        assert value["type"] == message.type


@pytest.mark.parametrize(("model", "text"), EXAMPLES, ids=EXAMPLE_IDS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_each_model_answers_any_json(
    model: type[WireModel], text: str, data: st.DataObject
) -> None:
    value = data.draw(MODEL_BODIES[text], label="value")
    try:
        message = model.parse(value)
    except InvalidMessage as exc:
        assert_refusal(exc)
    else:
        assert isinstance(message, model)
        assert model.parse(message.wire()) == message
