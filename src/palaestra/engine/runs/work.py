"""Carrying out one opened task: its signed POST, or the house's answer, and its end recorded.

:func:`post` POSTs a task once, signed by the protocol's signer, keeping the
headers it made (the task's row keeps them), and :func:`outcome_of` turns the
reply into the :class:`Finish` to record. :class:`TaskWork` does
that, or has the house answer, and records the end; both ways of stepping
runs use it through the run stepper, which starts each task it opened as a
coroutine that :class:`InFlight` tracks, once the task's send is claimed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Final

import structlog

from palaestra.engine.runs.dispatch import Opened
from palaestra.engine.runs.facts import Context
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.recorder import Finish, Recorder
from palaestra.platform import Platform
from palaestra.protocol import SchemaViolation, answers_later, hmac_signer, validate_envelope
from palaestra.protocol.failures import CallFailure, FailureKind
from palaestra.rules.producers import Producer
from palaestra.rules.runs.house_answers import BASELINE, HOUSE_MODEL, HouseTask
from palaestra.rules.runs.runflow import TaskStatus

__all__ = [
    "DISPATCH_USER_AGENT",
    "HouseJob",
    "InFlight",
    "Reservation",
    "Reserved",
    "Sent",
    "TaskWork",
    "outcome_of",
    "post",
    "send",
]

log = structlog.get_logger(__name__)

#: Production dispatches carry the protocol's headers; this names the sender.
DISPATCH_USER_AGENT: Final = "EdgeArena-Dispatch/1.0"


async def send(platform: Platform, task: Opened) -> Finish | None:
    """POST the signed task once; the outcome to record (the signed headers in it), or
    ``None`` after a 202 without a reply envelope (a 202 carrying one is a result, like a
    200)."""
    return (await post(platform, task)).end


async def post(platform: Platform, task: Opened) -> Sent:
    """POST the signed task once, keeping the headers the protocol's signer made for it:
    what :func:`send` does, with those headers for a 202 too."""
    request = task.request
    assert task.url is not None
    assert task.key is not None
    sign = hmac_signer(task.key, platform.clock, task.task_id)
    made: dict[str, str] = {}

    def signer(url: str, body: bytes) -> dict[str, str]:
        made.update(sign(url, body))  # what went on the wire, to be kept with the task
        return made

    result = await platform.egress.post_json(
        task.url,
        task.body,
        user_agent=DISPATCH_USER_AGENT,
        deadline=request.deadline_s,
        signer=signer,
        deferred_ok=True,
    )
    headers = made or None
    if result.failure is None and answers_later(result.status, result.data):
        return Sent(headers, None)  # the answer comes by the async completion callback
    end = outcome_of(task, result.failure, result.data, result.latency_ms)
    return Sent(headers, replace(end, request_headers=headers))


@dataclass(frozen=True, slots=True)
class Sent:
    """What :func:`send` did: the signed headers it sent (None: it sent nothing), and the
    task's end, None when the answer comes by the callback."""

    headers: dict[str, str] | None
    end: Finish | None


def outcome_of(task: Opened, failure: Any, data: Any, latency_ms: float) -> Finish:
    """The :class:`Finish` for a synchronous reply (``failure`` from the egress client)."""
    request = task.request
    common: dict[str, Any] = {
        "task_id": task.task_id,
        "run_id": request.run_id,
        "phase": request.phase,
        "via": "sync",
        "executor": task.executor,
        "agent_id": task.agent_id,
        "producer": Producer.AGENT,
        "latency_ms": latency_ms,
    }
    if failure is not None:
        timed_out = failure.kind is FailureKind.TIMEOUT
        status = TaskStatus.TIMEOUT if timed_out else TaskStatus.FAILED
        return Finish(status=status, reason=failure.reason, **common)
    try:
        envelope = validate_envelope(data, request.phase, request.candidate_id)
    except SchemaViolation as exc:
        return Finish(status=TaskStatus.FAILED, reason=exc.message, **common)
    return Finish(
        status=TaskStatus.SUCCEEDED,
        output=envelope.output,
        prompt_tokens=envelope.prompt_tokens,
        completion_tokens=envelope.completion_tokens,
        model_id=envelope.model_id[:200],
        **common,
    )


@dataclass(frozen=True, slots=True)
class HouseJob:
    """A house task to answer: the task, and what it was opened with."""

    task_id: str
    run_id: str
    executor: str
    task: HouseTask

    @classmethod
    def of(cls, item: Opened, context: Context) -> HouseJob:
        """The house's job for an opened slot: the messages an agent would have had."""
        request = item.request
        scout, builds, _ = context.of(request.phase, request.candidate_id)
        task = HouseTask(
            phase=request.phase,
            goal=request.goal,
            messages=request.messages,
            deadline_s=request.deadline_s,
            slot=request.slot,
            candidate_id=request.candidate_id,
            scout=scout,
            builds=builds,
        )
        return cls(item.task_id, request.run_id, item.executor, task)


class InFlight:
    """The sends and house answers under way in this process, as coroutines, by run.

    ``on_done(run_id)`` is called as each one ends (its end is recorded by then)."""

    def __init__(self, on_done: Callable[[str], None] | None = None) -> None:
        self.on_done = on_done
        self._jobs: dict[str, tuple[str, asyncio.Task[None]]] = {}  # task id -> (run id, job)

    def start(self, task_id: str, run_id: str, work: Coroutine[Any, Any, None]) -> None:
        job = asyncio.create_task(work)
        self._jobs[task_id] = (run_id, job)

        def done(_: asyncio.Task[None]) -> None:
            self._jobs.pop(task_id, None)
            if self.on_done is not None:
                self.on_done(run_id)

        job.add_done_callback(done)

    def jobs(self, run_id: str | None = None) -> list[asyncio.Task[None]]:
        """The coroutines at work, for ``run_id`` or for every run."""
        return [job for owner, job in self._jobs.values() if run_id in (None, owner)]

    def __len__(self) -> int:
        return len(self._jobs)

    async def wait(self) -> None:
        """Until every send and answer under way has ended."""
        while self._jobs:
            await asyncio.gather(*self.jobs(), return_exceptions=True)

    async def close(self) -> None:
        """Stop the work in flight; its tasks stay RUNNING and end as the platform's faults."""
        jobs = self.jobs()
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)


class Reserved:
    """The sends the steps under way may still open, counted in a process's room for sends
    in flight (:meth:`RunStepper.room <palaestra.engine.runs.stepper.RunStepper.room>`)."""

    def __init__(self) -> None:
        self.total = 0

    def hold(self, sends: int) -> Reservation:
        return Reservation(self, sends)


class Reservation:
    """One step's share of :class:`Reserved`, shrunk as the step learns what it opens."""

    __slots__ = ("reserved", "sends")

    def __init__(self, reserved: Reserved, sends: int) -> None:
        self.reserved = reserved
        self.sends = sends
        reserved.total += sends

    def shrink(self, sends: int) -> None:
        """Hold ``sends`` at most from now on."""
        if sends < self.sends:
            self.reserved.total -= self.sends - sends
            self.sends = sends


class TaskWork:
    """Sends tasks and has the house answer them, recording each end through ``recorder``."""

    def __init__(self, platform: Platform, house: HouseAgent, recorder: Recorder) -> None:
        self.platform = platform
        self.house = house
        self.recorder = recorder

    @property
    def house_executor(self) -> str:
        """What a house task is marked as executed by when it is opened."""
        return HOUSE_MODEL if self.house.provider else BASELINE

    async def send(self, item: Opened) -> None:
        """POST the task once and record its outcome (a 202 leaves it to its callback)."""
        metrics = self.platform.metrics
        try:
            sent = await post(self.platform, item)
            end = sent.end
            if end is None:
                metrics.dispatches.labels("deferred").inc()
                await self.recorder.defer(item.task_id, item.request.run_id, sent.headers)
                return
            metrics.dispatches.labels(end.status.value.lower()).inc()
            if not end.succeeded:
                metrics.call_failures.labels(CallFailure.of(end.reason)).inc()
            await self.recorder.finish(end)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("dispatch failed", task_id=item.task_id)

    async def answer(self, job: HouseJob) -> None:
        """Have the house answer the task and record its success."""
        task = job.task
        clock = self.platform.clock
        started = clock.monotonic()
        try:
            answer = await self.house.answer(task)
            await self.recorder.finish(
                Finish(
                    task_id=job.task_id,
                    run_id=job.run_id,
                    phase=task.phase,
                    status=TaskStatus.SUCCEEDED,
                    via="house",
                    executor=answer.executor or job.executor,
                    producer=answer.producer,
                    output=answer.output,
                    prompt_tokens=answer.prompt_tokens,
                    completion_tokens=answer.completion_tokens,
                    model_id=answer.model_id[:200],
                    latency_ms=(clock.monotonic() - started) * 1000,
                    reason=answer.note,
                )
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("house task failed", task_id=job.task_id)
