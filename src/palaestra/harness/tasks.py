"""What a handler receives and returns: tasks and turns in, replies out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from palaestra.errors import PalaestraError
from palaestra.protocol import (
    AnalystSimulation,
    BuildSimulation,
    ChatMessage,
    DispatchPayload,
    Phase,
    Role,
    ScoutSimulation,
    Side,
    SimulationCandidate,
    TurnRequest,
)

__all__ = [
    "SIMULATION_PHASE",
    "Reply",
    "Task",
    "TaskHandler",
    "TaskKind",
    "TaskOutput",
    "Turn",
    "TurnHandler",
    "UpstreamFailed",
    "with_candidate_id",
]

#: The phase each registration simulation exercises (the ANALYST's is the critique path).
SIMULATION_PHASE: Mapping[str, Phase] = {
    "scout_task": Phase.SCOUT,
    "build_task": Phase.BUILD,
    "analyst_task": Phase.CRITIQUE,
}


class TaskKind(StrEnum):
    """Where a task comes from."""

    SIMULATION = "simulation"  # the registration wizard (or ``palaestra check``)
    DISPATCH = "dispatch"  # a production run


@dataclass(frozen=True, slots=True)
class Task:
    """One edgearena-v1 task: a registration simulation or a signed production dispatch.

    ``messages`` is the platform's prompt, meant to be forwarded verbatim to a
    model. ``candidate_id`` is set for BUILD, VERIFY and CRITIQUE; ``candidate``
    only in simulations, which carry the candidate's details.
    """

    phase: Phase
    kind: TaskKind
    task_id: str
    messages: tuple[ChatMessage, ...]
    deadline_ms: int
    signed: bool
    goal: str | None = None
    candidate_id: str | None = None
    candidate: SimulationCandidate | None = None
    run_id: str | None = None
    launchpad: str | None = None
    body: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def role(self) -> Role:
        return self.phase.role

    @property
    def system_prompt(self) -> str:
        """The system messages, joined."""
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def user_prompt(self) -> str:
        """The user messages, joined."""
        return "\n\n".join(m.content for m in self.messages if m.role == "user")

    @classmethod
    def from_simulation(
        cls, request: ScoutSimulation | BuildSimulation | AnalystSimulation, *, signed: bool
    ) -> Task:
        candidate = None if isinstance(request, ScoutSimulation) else request.candidate
        return cls(
            phase=SIMULATION_PHASE[request.type],
            kind=TaskKind.SIMULATION,
            task_id=request.task_id,
            messages=tuple(request.messages),
            deadline_ms=request.deadline_ms,
            signed=signed,
            goal=request.goal if isinstance(request, ScoutSimulation) else None,
            candidate_id=None if candidate is None else candidate.id,
            candidate=candidate,
            launchpad=request.launchpad if isinstance(request, ScoutSimulation) else None,
            body=request.wire(),
        )

    @classmethod
    def from_dispatch(cls, payload: DispatchPayload) -> Task:
        phase = payload.phase_enum
        return cls(
            phase=phase,
            kind=TaskKind.DISPATCH,
            task_id=payload.task_id,
            messages=tuple(payload.messages),
            deadline_ms=phase.deadline_ms,
            signed=True,
            goal=payload.goal,
            candidate_id=payload.candidate_id,
            run_id=payload.run_id,
            launchpad=payload.launchpad_name,
            body=payload.wire(),
        )


@dataclass(frozen=True, slots=True)
class Turn:
    """One cage.v1 turn: the whole context for one move."""

    match_id: str
    turn: int
    side: Side
    payload: str
    deadline_ms: int
    idempotency_key: str
    body: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_request(cls, request: TurnRequest, idempotency_key: str) -> Turn:
        return cls(
            match_id=request.match_id,
            turn=request.turn,
            side=request.side,
            payload=request.payload,
            deadline_ms=request.deadline_ms,
            idempotency_key=idempotency_key,
            body=request.wire(),
        )


@dataclass(frozen=True, slots=True)
class Reply:
    """A task's output with what producing it cost; ``model_id=None`` uses the agent's.

    A dispatch is answered ``200 {output, promptTokens, completionTokens, modelId}``
    and a simulation ``200`` with the bare output. The platform would record a 202
    carrying that envelope like a 200, and takes only a 202 with an empty body, or
    without an envelope, to mean the answer comes by the async completion
    callback; the SDK never defers, so it never sends such a 202.
    """

    output: Mapping[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_id: str | None = None


class UpstreamFailed(PalaestraError):
    """The agent's upstream model failed."""


TaskOutput = Mapping[str, Any] | Reply
TaskHandler = Callable[[Task], TaskOutput | Awaitable[TaskOutput]]
TurnHandler = Callable[[Turn], str | Awaitable[str]]


def with_candidate_id(task: Task, output: Mapping[str, Any]) -> dict[str, Any]:
    """``output`` with the task's ``candidate_id`` filled in when it has none."""
    completed = dict(output)
    if task.candidate_id is not None and "candidate_id" not in completed:
        completed["candidate_id"] = task.candidate_id
    return completed
