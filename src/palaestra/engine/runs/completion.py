"""The async completion callback: ``POST /api/agent-tasks/{taskId}/complete``.

An agent that answered a dispatch with 202 delivers its output here, signed
with its own key over ``${timestamp}\\n${host+pathname}\\n${rawBody}``, where
host+pathname are those of the platform's public URL (``PALAESTRA_PUBLIC_URL``)
and not of whatever Host header the request came with.

The checks run in the order of the seed's table of errors, each with its message:

0. a body over :data:`COMPLETION_BODY_CAP_BYTES` (1 MiB) is refused while it
   streams in, before this module sees it: 413 ``Request body exceeds 1048576
   bytes`` (the route's own transport cap, whatever the API's general one);
1. the body parses as the seed's completion body (400 with the parse or
   ``Validation failed: ...`` line; a UTF-8 byte order mark before it is skipped);
2. ``taskId in body must match path parameter`` (400);
3. ``output exceeds 262144 byte limit`` (400; the size of ``output`` as compact
   JSON, however the agent spaced or escaped it);
4. ``Task <id> not found`` (400);
5. ``Task <id> is not in RUNNING state`` (400; also for a completion that arrives
   after the task's deadline, ended by a step yet or not, unless the platform's
   completion endpoint was down while it was due: then it may have refused the
   agent's first tries, and the answer is taken while the task is RUNNING, by
   the rule a step ends the task with, ``rules.runs.runplan.callback_void_at``).
   Except that a (taskId, signature) pair accepted before is told
   ``Task completion already submitted (replay rejected)`` (401), as the seed's
   page on retries says of a replayed completion;
6. ``Task <id> was not dispatched to an external agent`` (400: the house's);
7. ``Agent not found for this task`` (400: the agent it was sent to is gone);
8. ``Invalid or missing X-EdgeArena-Timestamp header`` (401), then
   ``Signature timestamp outside ±300s replay window (skew=<n>s)`` (401), then
   ``Invalid task completion signature`` (401), against the key of the agent
   the task was dispatched to;
9. the output must pass the phase schema: else 400 with the ``Validation
   failed: ...`` line, and the task is FAILED against the agent as a
   synchronous schema failure would be (its cooldown included);
10. accepted: ``200 {"accepted": true}``; the task SUCCEEDED via callback,
    the agent's success recorded, and the run advanced.

Why this order: it is the seed's, so an agent gets the answer Edge Arena gives,
the first that applies. Steps 4-7 tell a caller without the key whether a task
id exists and what state it is in; task ids are UUIDv7s with 74 random bits, so
that costs no enumeration, and the seed gives these answers. Steps 9-10 happen
in one transaction with a conditional update RUNNING -> SUCCEEDED (or FAILED),
so of two concurrent submissions exactly one is recorded: the other is told it
is a replay (same signature) or that the task is no longer RUNNING.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from sqlalchemy import select

from palaestra.engine.batcher import Batcher
from palaestra.engine.runs.endpoint import read_endpoint
from palaestra.engine.runs.recorder import Finish, Recorder, Recording
from palaestra.errors import PalaestraError
from palaestra.platform import Platform
from palaestra.protocol import (
    CompletionBody,
    InvalidJson,
    InvalidMessage,
    SchemaViolation,
    VerificationFailed,
    dumps,
    loads,
    signature_target,
    validate_output,
    verify,
)
from palaestra.protocol.constants import RESPONSE_CAP_BYTES, Phase
from palaestra.protocol.failures import CallFailure
from palaestra.protocol.signing import SignatureProblem, normalized_signature
from palaestra.rules.producers import Producer
from palaestra.rules.runs.house_answers import HOUSE_EXECUTORS
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.rules.runs.runplan import callback_void_at
from palaestra.store.models import Agent, CompletionReceipt, Task

__all__ = [
    "COMPLETION_BODY_CAP_BYTES",
    "CompletionDesk",
    "CompletionRejected",
    "complete_task",
    "completion_url",
]

#: The completion route's transport cap (see the module docstring, step 0).
COMPLETION_BODY_CAP_BYTES: Final = 4 * RESPONSE_CAP_BYTES
_OVERSIZED: Final = f"output exceeds {RESPONSE_CAP_BYTES} byte limit"
_BAD_SIGNATURE: Final = "Invalid task completion signature"
_REPLAY: Final = "Task completion already submitted (replay rejected)"


class CompletionRejected(PalaestraError):
    """The completion was refused."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _bad(message: str, code: str = "bad-request") -> CompletionRejected:
    return CompletionRejected(400, message, code)


def _denied(message: str, code: str = "unauthorized") -> CompletionRejected:
    return CompletionRejected(401, message, code)


def completion_url(public_url: str, task_id: str) -> str:
    """Where agents post the completion of ``task_id`` (what they sign over)."""
    return f"{public_url.rstrip('/')}/api/agent-tasks/{task_id}/complete"


@dataclass(frozen=True, slots=True)
class _Task:
    """What a completion needs of its task (never its payload or output)."""

    id: str
    run_id: str
    phase: str
    candidate_id: str | None
    agent_id: str | None
    executor: str
    status: str
    sent_at: float | None
    deadline_at: float | None
    key_sealed: str | None  # the agent's, None when it has no agent (any more)


async def _read_tasks(platform: Platform, ids: list[str]) -> list[_Task | None]:
    """The tasks ``ids`` (None for one that does not exist), in one query: the completions
    that arrive while one look-up runs are all answered by the next (see :class:`Batcher`)."""
    query = (
        select(
            Task.id,
            Task.run_id,
            Task.phase,
            Task.candidate_id,
            Task.agent_id,
            Task.executor,
            Task.status,
            Task.sent_at,
            Task.deadline_at,
            Agent.key_sealed,
        )
        .outerjoin(Agent, Agent.id == Task.agent_id)
        .where(Task.id.in_(list(dict.fromkeys(ids))))
    )
    async with platform.db.read() as connection:
        rows = (await connection.execute(query)).all()
    found = {row.id: _Task(**row._mapping) for row in rows}
    return [found.get(task_id) for task_id in ids]


class CompletionDesk:
    """Receives async completions: checks each (see the module docstring) and records it."""

    def __init__(
        self,
        platform: Platform,
        recorder: Recorder,
        *,
        kick: Callable[[str], None] | None = None,
    ) -> None:
        self.platform = platform
        self.recorder = recorder
        self.kick = kick
        self._lookups: Batcher[str, _Task | None] = Batcher(partial(_read_tasks, platform))

    async def complete(
        self, task_id: str, raw: bytes, signature: str | None, timestamp: str | None
    ) -> None:
        """Check and record one completion; raise :class:`CompletionRejected`."""
        platform = self.platform
        arrived = platform.clock.now()
        try:
            body = CompletionBody.parse(loads(raw))
        except (InvalidJson, InvalidMessage) as exc:
            raise _bad(exc.message, "invalid-body") from None
        if body.task_id != task_id:
            raise _bad("taskId in body must match path parameter", "task-id-mismatch")
        if len(dumps(body.output)) > RESPONSE_CAP_BYTES:
            raise _bad(_OVERSIZED, "output-too-large")
        task, key = await self._task(task_id, signature, arrived)
        self._verify(key, task_id, raw, signature, timestamp)
        assert signature is not None  # verified
        phase = Phase(task.phase)
        now = platform.clock.now()
        common: dict[str, Any] = {
            "task_id": task_id,
            "run_id": task.run_id,
            "phase": phase,
            "via": "callback",
            "executor": task.executor,
            "agent_id": task.agent_id,
            "producer": Producer.AGENT,
            "latency_ms": max(0.0, (now - (task.sent_at or now)) * 1000),
            "signature": normalized_signature(signature),  # one digest, whatever its capitals
            "prompt_tokens": body.prompt_tokens,
            "completion_tokens": body.completion_tokens,
            "model_id": (body.model_id or "")[:200],
            "late": False,  # a late one was refused above (the recorder checks again)
        }
        problem = None
        try:
            output = validate_output(phase, body.output, task.candidate_id)
        except SchemaViolation as exc:
            problem = exc.message
            end = Finish(status=TaskStatus.FAILED, reason=problem, **common)
        else:
            end = Finish(status=TaskStatus.SUCCEEDED, output=output, **common)
        verdict = await self.recorder.finish(end)
        if verdict is Recording.REPLAY:
            raise _denied(_REPLAY, "replay")
        if verdict is Recording.NOT_RUNNING:
            raise _bad(f"Task {task_id} is not in RUNNING state", "not-running")
        if self.kick is not None:
            self.kick(task.run_id)
        if problem is not None:
            platform.metrics.call_failures.labels(CallFailure.SCHEMA).inc()
            raise _bad(problem, "validation-failed")

    async def _task(self, task_id: str, signature: str | None, arrived: float) -> tuple[_Task, str]:
        """Steps 4-7: the task, RUNNING and on time, sent to an agent that still exists;
        and that agent's key."""
        task = await self._lookups.submit(task_id)
        if task is None:
            raise _bad(f"Task {task_id} not found", "task-not-found")
        if task.status != TaskStatus.RUNNING or await self._late(task, arrived):
            if signature is not None and await self._seen(task_id, signature):
                raise _denied(_REPLAY, "replay")
            raise _bad(f"Task {task_id} is not in RUNNING state", "not-running")
        if task.agent_id is None and task.executor in HOUSE_EXECUTORS:
            raise _bad(f"Task {task_id} was not dispatched to an external agent", "not-external")
        if task.key_sealed is None:  # its agent was removed (the task keeps its name)
            raise _bad("Agent not found for this task", "agent-not-found")
        return task, self.platform.vault.open(task.key_sealed)

    async def _seen(self, task_id: str, signature: str) -> bool:
        """Whether this (taskId, signature) pair was accepted before: a replay."""
        receipts = CompletionReceipt.__table__.c
        query = select(receipts.task_id).where(
            receipts.task_id == task_id, receipts.signature == normalized_signature(signature)
        )
        async with self.platform.db.read() as connection:
            return (await connection.scalar(query)) is not None

    async def _late(self, task: _Task, arrived: float) -> bool:
        """Whether a completion that ``arrived`` then is too late: past its deadline, with
        the completion endpoint up from the send to the deadline. A step's delay in ending
        the task must not let a late answer win (the step ends it by the same rule)."""
        sent, due = task.sent_at, task.deadline_at
        if sent is None or due is None or arrived <= due:
            return False
        async with self.platform.db.read() as connection:
            endpoint = await connection.run_sync(read_endpoint)
        return callback_void_at(endpoint, sent, due) is None

    def _verify(
        self, key: str, task_id: str, raw: bytes, signature: str | None, timestamp: str | None
    ) -> None:
        """Check the signature over the platform's public URL; 401 with the seed's message."""
        platform = self.platform
        target = signature_target(completion_url(platform.settings.public_url, task_id))
        try:
            verify(key, target, raw, signature, timestamp, platform.clock.now())
        except VerificationFailed as exc:
            if exc.problem in (
                SignatureProblem.MISSING_TIMESTAMP,
                SignatureProblem.STALE_TIMESTAMP,
            ):
                raise _denied(exc.message, "invalid-timestamp") from None
            platform.metrics.call_failures.labels(CallFailure.SIGNATURE).inc()
            raise _denied(_BAD_SIGNATURE, "invalid-signature") from None


async def complete_task(
    platform: Platform,
    recorder: Recorder,
    task_id: str,
    raw: bytes,
    signature: str | None,
    timestamp: str | None,
    *,
    kick: Callable[[str], None] | None = None,
) -> None:
    """One completion through a desk of its own (tests, scripts); the API keeps one desk."""
    desk = CompletionDesk(platform, recorder, kick=kick)
    await desk.complete(task_id, raw, signature, timestamp)
