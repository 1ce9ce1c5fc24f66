"""Runs stepped in this process (the embedded server): the work as coroutines, and the loop.

:class:`InProcess` is the :class:`~palaestra.engine.runs.stepper.RunMode` of
one process: a task the step opens is sent (or answered by the house) by a
coroutine it tracks, and the run is kicked when that coroutine ends. A task
awaited here gets :data:`IN_FLIGHT_GRACE_S` past its deadline for its own
timeout to land; a house task this process is not answering (it was
restarted) is answered again. :class:`RunDriver` steps every RUNNING run on
a tick, and a run that was kicked (created, or one of its tasks ended) at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog
from sqlalchemy import select

from palaestra.engine.runs.completion import CompletionDesk
from palaestra.engine.runs.dispatch import Opened
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.recorder import Recorder
from palaestra.engine.runs.snapshot import Snapshot
from palaestra.engine.runs.stepper import IN_FLIGHT_GRACE_S, RunStepper
from palaestra.engine.runs.work import HouseJob, TaskWork
from palaestra.platform import Platform
from palaestra.rules.runflow import RunStatus, TaskStatus
from palaestra.store.models import Run, Task

__all__ = ["InProcess", "RunDriver"]

log = structlog.get_logger(__name__)


class InProcess:
    """Carries out runs' tasks as coroutines of this process; see the module docstring."""

    def __init__(self, work: TaskWork, kick: Callable[[str], None]) -> None:
        self.work = work
        self.kick = kick
        self._jobs: dict[str, tuple[str, asyncio.Task[None]]] = {}  # task id -> (run id, job)
        self._served: set[str] = set()  # house tasks this process has answered or is answering

    def start(self, item: Opened, snap: Snapshot) -> None:
        if item.house:
            work = self.work.answer(snap, HouseJob.of_opened(item))
        else:
            work = self.work.send(item)
        self._track(item.task_id, item.request.run_id, work)

    def overdue(self, snap: Snapshot, now: float) -> list[Task]:
        due = []
        for task in snap.tasks:
            if task.status != TaskStatus.RUNNING or task.agent_id is None:
                continue
            grace = IN_FLIGHT_GRACE_S if task.id in self._jobs else 0.0
            if task.deadline_at is not None and now >= task.deadline_at + grace:
                due.append(task)
        return due

    def resume(self, snap: Snapshot) -> None:
        for task in snap.tasks:
            if (
                task.status == TaskStatus.RUNNING
                and task.agent_id is None
                and task.id not in self._served
            ):
                job = HouseJob.of_stored(
                    task.id, task.phase, task.candidate_id, task.slot, task.payload, task.executor
                )
                self._track(task.id, snap.run.id, self.work.answer(snap, job))

    def forget(self, snap: Snapshot) -> None:
        self._served.difference_update(t.id for t in snap.tasks)

    def jobs(self, run_id: str | None = None) -> list[asyncio.Task[None]]:
        """The coroutines at work, for ``run_id`` or for every run."""
        return [job for owner, job in self._jobs.values() if run_id in (None, owner)]

    async def close(self) -> None:
        """Stop the work in flight; its tasks stay RUNNING and are handled after a restart."""
        jobs = self.jobs()
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)

    def _track(self, task_id: str, run_id: str, work: Coroutine[Any, Any, None]) -> None:
        self._served.add(task_id)
        job = asyncio.create_task(work)
        self._jobs[task_id] = (run_id, job)

        def done(_: asyncio.Task[None]) -> None:
            self._jobs.pop(task_id, None)
            self.kick(run_id)

        job.add_done_callback(done)


class RunDriver:
    """Advances runs in this process; see the module docstring."""

    def __init__(
        self,
        platform: Platform,
        *,
        house: HouseAgent | None = None,
        recorder: Recorder | None = None,
        tick_s: float = 0.5,
    ) -> None:
        self.platform = platform
        self.house = house or HouseAgent.from_settings(platform.settings, platform.egress)
        self.recorder = recorder or Recorder(platform)
        #: Where the agents' async completions are received (the API's callback route).
        self.completions = CompletionDesk(platform, self.recorder, kick=self.kick)
        self.tick_s = tick_s
        work = TaskWork(platform, self.house, self.recorder)
        self.mode = InProcess(work, kick=self.kick)
        self.stepper = RunStepper(
            platform, self.mode, recorder=self.recorder, house_executor=work.house_executor
        )
        self._kicked: set[str] = set()
        self._wake = asyncio.Event()

    def kick(self, run_id: str) -> None:
        """Advance ``run_id`` soon (a run was created or one of its tasks ended)."""
        self._kicked.add(run_id)
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def in_flight(self, run_id: str | None = None) -> int:
        return len(self.mode.jobs(run_id))

    async def advance(self, run_id: str) -> bool:
        """Do what is due for ``run_id``; ``True`` once it is finished."""
        return await self.stepper.advance(run_id)

    async def run(self, stop: asyncio.Event) -> None:
        """Advance every RUNNING run each tick, and kicked runs at once, until ``stop``."""
        loop = asyncio.get_running_loop()
        last_sweep = float("-inf")
        while not stop.is_set():
            self._wake.clear()
            due = set(self._kicked)
            self._kicked.clear()
            try:
                if loop.time() - last_sweep >= self.tick_s:
                    last_sweep = loop.time()
                    due |= set(await self._running())
                for run_id in sorted(due):
                    await self.advance(run_id)
            except Exception:
                # A database hiccup must not stop the runs; every step is idempotent.
                log.exception("run stepper tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.tick_s)

    async def drain(self, run_id: str, within_s: float = 60.0) -> None:
        """Advance ``run_id`` until it is finished and nothing of it is in flight (tests)."""
        loop = asyncio.get_running_loop()
        limit = loop.time() + within_s
        while True:
            finished = await self.advance(run_id)
            jobs = self.mode.jobs(run_id)
            if finished and not jobs:
                return
            if loop.time() > limit:
                raise TimeoutError(f"run {run_id} did not finish within {within_s}s")
            if jobs:
                await asyncio.wait(jobs, timeout=limit - loop.time(), return_when="FIRST_COMPLETED")
            else:  # waiting for a callback or a deadline
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), 0.05)
                self._wake.clear()

    async def close(self) -> None:
        """Stop the work in flight; its tasks stay RUNNING and are handled after a restart."""
        await self.mode.close()
        await self.recorder.close()

    async def _running(self) -> Sequence[str]:
        async with self.platform.db.session() as session:
            query = select(Run.id).where(Run.status == RunStatus.RUNNING.value)
            return (await session.scalars(query)).all()
