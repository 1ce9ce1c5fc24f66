"""Carrying out one opened task: its signed POST, or the house's answer, and its end recorded.

Both ways of stepping runs use it: the in-process driver as coroutines it
tracks, the jobs from a ``dispatch`` job once its send is claimed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from palaestra.engine.runs.dispatch import Opened, send
from palaestra.engine.runs.house import BASELINE, HOUSE_MODEL, HouseAgent, HouseTask
from palaestra.engine.runs.recorder import Finish, Recorder
from palaestra.engine.runs.snapshot import Snapshot
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.runflow import TaskStatus

__all__ = ["HouseJob", "TaskWork"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class HouseJob:
    """A house task to answer: the task, and what it was opened with."""

    task_id: str
    phase: Phase
    candidate_id: str | None
    slot: int
    messages: Sequence[Any]
    executor: str

    @classmethod
    def of_opened(cls, item: Opened) -> HouseJob:
        request = item.request
        return cls(
            item.task_id,
            request.phase,
            request.candidate_id,
            request.slot,
            request.messages,
            item.executor,
        )

    @classmethod
    def of_stored(
        cls,
        task_id: str,
        phase: str,
        candidate_id: str | None,
        slot: int,
        payload: Mapping[str, Any] | None,
        executor: str,
    ) -> HouseJob:
        """The job of a task as the store holds it (its messages are in its payload)."""
        messages = (payload or {}).get("messages", [])
        return cls(task_id, Phase(phase), candidate_id, slot, messages, executor)


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
        try:
            end = await send(self.platform, item)
            if end is not None:
                await self.recorder.finish(end)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("dispatch failed", task_id=item.task_id)

    async def answer(self, snap: Snapshot, job: HouseJob) -> None:
        """Have the house answer the task and record its success."""
        phase, candidate_id = job.phase, job.candidate_id
        scout, builds, _ = snap.context(phase, candidate_id)
        clock = self.platform.clock
        started = clock.monotonic()
        try:
            answer = await self.house.answer(
                HouseTask(
                    phase=phase,
                    goal=snap.run.goal,
                    messages=job.messages,
                    deadline_s=snap.deadline_s(phase),
                    slot=job.slot,
                    candidate_id=candidate_id,
                    scout=scout,
                    builds=builds,
                )
            )
            await self.recorder.finish(
                Finish(
                    task_id=job.task_id,
                    run_id=snap.run.id,
                    phase=phase,
                    status=TaskStatus.SUCCEEDED,
                    via="house",
                    executor=answer.executor or job.executor,
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
