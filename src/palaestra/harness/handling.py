"""What the agent does with one POST: verify, route, call the handler, check its answer.

Transport-free: the ASGI layer (``asgi.py``) reads the request and sends the
:class:`HttpReply` this module returns. Signed requests are verified over the
raw body before it is parsed, and no handler runs for a request that fails.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from palaestra.clock import Clock
from palaestra.protocol import (
    RESPONSE_CAP_BYTES,
    SIGNATURE_HEADER,
    TASK_ID_HEADER,
    TIMESTAMP_HEADER,
    AnalystSimulation,
    BuildSimulation,
    ChallengeRequest,
    DispatchPayload,
    HandshakeRequest,
    InvalidJson,
    InvalidMessage,
    Phase,
    SchemaViolation,
    ScoutSimulation,
    Side,
    TurnRequest,
    UserAgent,
    VerificationFailed,
    check_required_keys,
    dumps,
    loads,
    token_count_warnings,
    validate_envelope,
    verify,
)
from palaestra.protocol.constants import IDEMPOTENCY_HEADER
from palaestra.protocol.edgearena import HandshakeReply
from palaestra.protocol.violations import json_type

from .replies import HttpReply, ReplyStore, error_reply, json_reply
from .tasks import (
    Reply,
    Task,
    TaskHandler,
    TaskKind,
    Turn,
    TurnHandler,
    UpstreamFailed,
    with_candidate_id,
)

__all__ = ["AgentRequest", "RequestHandler"]

log = logging.getLogger("palaestra.harness")

_SIMULATIONS: Mapping[str, type[ScoutSimulation | BuildSimulation | AnalystSimulation]] = {
    "scout_task": ScoutSimulation,
    "build_task": BuildSimulation,
    "analyst_task": AnalystSimulation,
}

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """One POST as the agent received it. ``headers`` names are lower case."""

    body: bytes
    headers: Mapping[str, str]
    target: str | None  # host+pathname the signature covers; None if it cannot be told

    @property
    def carries_signature(self) -> bool:
        return (
            SIGNATURE_HEADER in self.headers
            or TIMESTAMP_HEADER in self.headers
            or self.headers.get("user-agent") == UserAgent.VERIFY_DISPATCH
        )


class RequestHandler:
    """Answers POSTs for one agent: its handlers, key, clock and store of first answers."""

    def __init__(
        self,
        *,
        tasks: Mapping[Phase, TaskHandler],
        turns: Mapping[Side, TurnHandler],
        key: str | None,
        clock: Clock,
        store: ReplyStore,
        model_id: str,
    ) -> None:
        self.tasks = dict(tasks)
        self.turns = dict(turns)
        self.key = key
        self.clock = clock
        self.store = store
        self.model_id = model_id
        self._pending: dict[str, asyncio.Future[HttpReply]] = {}

    async def post(self, request: AgentRequest) -> HttpReply:
        signed = request.carries_signature
        if signed:
            refusal = self._verify(request)
            if refusal is not None:
                return refusal
        try:
            body = loads(request.body)
        except InvalidJson as exc:
            return error_reply(400, "invalid-json", exc.message)
        if not isinstance(body, dict):
            problem = f"Validation failed: body: expected an object, got {json_type(body)}"
            return error_reply(400, "invalid-request", problem)
        try:
            return await self._route(body, request, signed)
        except InvalidMessage as exc:
            return error_reply(400, "invalid-request", exc.message)

    def _verify(self, request: AgentRequest) -> HttpReply | None:
        if self.key is None:
            why = "this agent has no key configured (PALAESTRA_AGENT_KEY), so it cannot verify"
            return error_reply(401, "no-key", why)
        if request.target is None:
            return error_reply(401, "invalid-signature", "cannot tell the signed host and path")
        try:
            verify(
                self.key,
                request.target,
                request.body,
                request.headers.get(SIGNATURE_HEADER),
                request.headers.get(TIMESTAMP_HEADER),
                self.clock.now(),
            )
        except VerificationFailed as exc:
            return error_reply(401, str(exc.problem), exc.message)
        return None

    async def _route(self, body: dict[str, Any], request: AgentRequest, signed: bool) -> HttpReply:
        kind = body.get("type")
        if kind == "handshake":
            HandshakeRequest.parse(body)
            return json_reply(HandshakeReply().wire())
        if isinstance(kind, str) and kind in _SIMULATIONS:
            simulation = _SIMULATIONS[kind].parse(body)
            return await self._task(Task.from_simulation(simulation, signed=signed))
        if kind == "challenge":
            return self._challenge(ChallengeRequest.parse(body))
        if kind == "turn":
            return await self._turn(TurnRequest.parse(body), request)
        if kind is None and "taskId" in body:
            if not signed:
                return error_reply(401, "missing-signature", "Missing signature")
            payload = DispatchPayload.parse(body)
            header = request.headers.get(TASK_ID_HEADER)
            if header is not None and header != payload.task_id:
                return error_reply(
                    400, "invalid-request", f"{TASK_ID_HEADER} does not match taskId in the body"
                )
            task = Task.from_dispatch(payload)
            return await self._once(f"task:{task.task_id}", lambda: self._task(task))
        return error_reply(
            400, "invalid-request", f"Validation failed: type: unknown message type {kind!r}"
        )

    async def _task(self, task: Task) -> HttpReply:
        handler = self.tasks.get(task.phase)
        if handler is None:
            return error_reply(
                501, "not-served", f"this agent has no handler for the {task.phase} phase"
            )
        result = await self._call(handler, task)
        if isinstance(result, HttpReply):
            return result
        return self._task_reply(task, result)

    def _task_reply(self, task: Task, result: object) -> HttpReply:
        if isinstance(result, Reply):
            reply = result
        elif isinstance(result, Mapping):
            reply = Reply(result)
        else:
            return _invalid_output(
                f"the handler returned {json_type(result)}, expected an object or a Reply"
            )
        output = with_candidate_id(task, reply.output)
        model_id = self.model_id if reply.model_id is None else reply.model_id
        try:
            if task.kind is TaskKind.SIMULATION:
                # The registration wizard checks only the role's required top-level
                # keys, so a reply it accepts is never refused here, even if the
                # same output would fail a production dispatch's full schema.
                check_required_keys(task.role, output)
                body = dumps(output)
            else:
                envelope = {
                    "output": output,
                    "promptTokens": reply.prompt_tokens,
                    "completionTokens": reply.completion_tokens,
                    "modelId": model_id,
                }
                validate_envelope(envelope, task.phase, task.candidate_id)
                # The platform takes any number (the seed's type) and warns; the SDK sends
                # only whole counts from 0, as the platform's own rule asks.
                counts = token_count_warnings(envelope)
                if counts:
                    return _invalid_output(f"Validation failed: {counts[0]}")
                body = dumps(envelope)
        except SchemaViolation as exc:
            return _invalid_output(exc.message, [v.reason for v in exc.violations])
        except TypeError as exc:  # orjson cannot serialize a value in the output
            return _invalid_output(f"Validation failed: output: cannot be serialized: {exc}")
        if len(body) > RESPONSE_CAP_BYTES:  # the platform reads no further than this
            return _invalid_output(f"the reply exceeds {RESPONSE_CAP_BYTES} bytes")
        return HttpReply(200, body)

    def _challenge(self, challenge: ChallengeRequest) -> HttpReply:
        if not self.turns:
            return error_reply(501, "not-served", "this agent does not play cage.v1")
        return json_reply({"nonce": challenge.nonce})

    async def _turn(self, request: TurnRequest, http: AgentRequest) -> HttpReply:
        key = http.headers.get(IDEMPOTENCY_HEADER) or f"{request.match_id}:{request.turn}"
        turn = Turn.from_request(request, key)
        handler = self.turns.get(turn.side)
        if handler is None:
            return error_reply(501, "not-served", f"this agent does not play {turn.side}")

        async def play() -> HttpReply:
            message = await self._call(handler, turn)
            if isinstance(message, HttpReply):
                return message
            if not isinstance(message, str):
                return _invalid_output(
                    f"the handler returned {json_type(message)}, expected a string"
                )
            body = dumps({"message": message})
            if len(body) > RESPONSE_CAP_BYTES:
                return _invalid_output(f"the reply exceeds {RESPONSE_CAP_BYTES} bytes")
            return HttpReply(200, body)

        return await self._once(f"turn:{key}", play)

    async def _call(self, handler: Callable[[T], Any], argument: T) -> Any:
        """Run a handler (async, or sync in a worker thread); its failures become replies."""
        try:
            if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
                getattr(handler, "__call__", None)  # noqa: B004 (an object with async __call__)
            ):
                result = await handler(argument)
            else:
                result = await asyncio.to_thread(handler, argument)
            if inspect.isawaitable(result):
                result = await result
        except UpstreamFailed as exc:
            log.warning("upstream model failed: %s", exc.message)
            return error_reply(502, "upstream-failed", exc.message)
        except Exception as exc:
            log.exception("the handler raised %s", type(exc).__name__)
            return error_reply(500, "handler-error", f"the handler raised {type(exc).__name__}")
        return result

    async def _once(self, key: str, produce: Callable[[], Awaitable[HttpReply]]) -> HttpReply:
        """The first successful answer for ``key``; the handler runs again only after a failure."""
        stored = await self.store.get(key)
        if stored is not None:
            return stored.as_replay()
        pending = self._pending.get(key)
        if pending is not None:
            try:
                return (await asyncio.shield(pending)).as_replay()
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise
                return error_reply(503, "interrupted", "the first request for this id was cut off")
        future: asyncio.Future[HttpReply] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            reply = await produce()
            if reply.ok:
                await self.store.put(key, reply)
            future.set_result(reply)
            return reply
        finally:
            del self._pending[key]
            if not future.done():
                future.cancel()


def _invalid_output(message: str, violations: list[str] | None = None) -> HttpReply:
    extra = {} if violations is None else {"violations": violations}
    return error_reply(502, "invalid-output", message, **extra)
