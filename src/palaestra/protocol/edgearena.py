"""edgearena-v1 messages, both directions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from palaestra.protocol.constants import PROTOCOL, Phase
from palaestra.protocol.models import InvalidMessage, WireModel
from palaestra.protocol.violations import count_problem, recorded_count

__all__ = [
    "AgentRequest",
    "AnalystSimulation",
    "BuildSimulation",
    "ChatMessage",
    "CompletionBody",
    "DispatchPayload",
    "DispatchReply",
    "HandshakeReply",
    "HandshakeRequest",
    "ScoutSimulation",
    "SimulationCandidate",
    "SimulationRequest",
    "answers_later",
    "parse_agent_request",
]

NonNegative = Annotated[int, Field(ge=0)]
PhaseName = Literal["SCOUT", "BUILD", "VERIFY", "CRITIQUE"]


def _token_count(value: Any) -> int:
    problem = count_problem(value)
    if problem is not None:
        raise PydanticCustomError("token_count", "{problem}", {"problem": problem})
    return recorded_count(value)


#: A token count, judged as the dispatch envelope judges it: any number, as the seed types
#: it, recorded as the nearest whole number the store holds (``12.5`` is recorded as 13).
TokenCount = Annotated[
    int,
    PlainValidator(_token_count),
    WithJsonSchema(
        {
            "type": "number",
            "description": "Tokens the model reported: any number; recorded as the nearest "
            "whole number from 0 to 2147483647 (a whole number >= 0 is expected).",
        }
    ),
]


class ChatMessage(WireModel):
    """One prompt message; agents forward these verbatim to their model."""

    role: Literal["system", "user"]
    content: str


class HandshakeRequest(WireModel):
    """Step 3 of the wizard: proves the endpoint speaks JSON over HTTP."""

    type: Literal["handshake"] = "handshake"
    protocol: Literal["edgearena-v1"] = "edgearena-v1"
    request_id: str


class HandshakeReply(WireModel):
    """Any JSON object passes; echoing the handshake is customary."""

    ok: bool = True
    protocol: str = PROTOCOL


class SimulationCandidate(WireModel):
    """The candidate a BUILDER or ANALYST simulation works on."""

    id: str
    title: str
    target_customer: str | None = None
    core_problem: str | None = None
    solution_summary: str | None = None
    why_now: str | None = None


class _Simulation(WireModel):
    protocol: Literal["edgearena-v1"] = "edgearena-v1"
    task_id: str
    deadline_ms: NonNegative
    messages: list[ChatMessage]


class ScoutSimulation(_Simulation):
    """Step 4 of the wizard for a SCOUT."""

    type: Literal["scout_task"] = "scout_task"
    role: Literal["SCOUT"] = "SCOUT"
    goal: str
    launchpad: str


class BuildSimulation(_Simulation):
    """Step 4 of the wizard for a BUILDER."""

    type: Literal["build_task"] = "build_task"
    role: Literal["BUILDER"] = "BUILDER"
    candidate: SimulationCandidate


class AnalystSimulation(_Simulation):
    """Step 4 of the wizard for an ANALYST (the critique path)."""

    type: Literal["analyst_task"] = "analyst_task"
    role: Literal["ANALYST"] = "ANALYST"
    candidate: SimulationCandidate


SimulationRequest = ScoutSimulation | BuildSimulation | AnalystSimulation


class DispatchPayload(WireModel):
    """A production task, signed, for one phase of one run."""

    task_id: str = Field(alias="taskId")
    run_id: str = Field(alias="runId")
    phase: PhaseName
    role: PhaseName
    candidate_id: str | None = Field(alias="candidateId")
    goal: str
    launchpad_name: str = Field(alias="launchpadName")
    messages: list[ChatMessage]

    @property
    def phase_enum(self) -> Phase:
        return Phase(self.phase)


class DispatchReply(WireModel):
    """The envelope of a synchronous reply (its output is checked by the phase schema)."""

    output: dict[str, Any]
    prompt_tokens: TokenCount = Field(alias="promptTokens")
    completion_tokens: TokenCount = Field(alias="completionTokens")
    model_id: str = Field(alias="modelId")


class CompletionBody(WireModel):
    """The body of an async completion callback."""

    task_id: str = Field(
        alias="taskId",
        description="Must equal the path's task_id (400 taskId in body must match path "
        "parameter otherwise).",
    )
    output: dict[str, Any]
    prompt_tokens: TokenCount = Field(alias="promptTokens")
    completion_tokens: TokenCount = Field(alias="completionTokens")
    model_id: str | None = Field(default=None, alias="modelId")


AgentRequest = HandshakeRequest | SimulationRequest | DispatchPayload

_BY_TYPE: dict[str, type[WireModel]] = {
    "handshake": HandshakeRequest,
    "scout_task": ScoutSimulation,
    "build_task": BuildSimulation,
    "analyst_task": AnalystSimulation,
}


def parse_agent_request(body: Any) -> AgentRequest:
    """Tell an agent-bound POST body apart by shape and validate it."""
    if not isinstance(body, dict):
        raise InvalidMessage("Validation failed: body: expected an object")
    kind = body.get("type")
    if kind is None and "taskId" in body:
        return DispatchPayload.parse(body)
    model = _BY_TYPE.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InvalidMessage(f"Validation failed: type: unknown message type {kind!r}")
    return model.parse(body)  # type: ignore[return-value]


def answers_later(status: int | None, reply: Any) -> bool:
    """Whether a dispatch's answer comes by the async completion callback.

    Only a 202 without a reply envelope says so: an empty body, a body that is
    not JSON, or JSON without ``output``. A 202 that carries an envelope is a
    result, recorded (and validated) exactly like a 200.
    """
    return status == 202 and not (isinstance(reply, dict) and "output" in reply)
