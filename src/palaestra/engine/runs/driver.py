"""Runs stepped in this process (the embedded server): the stepper in a loop.

:class:`RunDriver` steps the due runs in batches (:class:`~.stepper.RunStepper`)
as soon as something makes one due: a run created, a task ended (its send
here, or an agent's callback), and on a tick for deadlines. While a step is
planned and written, the sends of the previous ones are in flight.

On PostgreSQL two steps go at once (:attr:`RunDriver.steps_at_once`): a step
spends most of its time waiting on the database (its claim, then its write),
and the leases keep the two on different runs. SQLite's single writer would
only queue the second behind the first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Protocol

import structlog
from sqlalchemy import select

from palaestra.engine.runs.completion import CompletionDesk
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.recorder import Recorder
from palaestra.engine.runs.stepper import BATCH, RunStepper, Stepped
from palaestra.engine.runs.work import InFlight, TaskWork
from palaestra.platform import Platform
from palaestra.rules.runs.runflow import RunStatus
from palaestra.store.models import Run

__all__ = ["RunDriver", "Runs", "SteppedRuns"]

log = structlog.get_logger(__name__)


class Runs(Protocol):
    """What the API needs of whichever steps the runs, in this process or as jobs."""

    #: Where the agents' async completions are received (the API's callback route).
    completions: CompletionDesk

    def kick(self, run_id: str) -> None:
        """Advance ``run_id`` soon (a run was created or one of its tasks ended)."""
        ...


class SteppedRuns:
    """What steps runs, in this process or as jobs: the stepper, the house, the recorder,
    the completion desk and the sends in flight, built alike in both modes. ``kick`` says
    what a run made due does (``kick``): wake a loop here, or kick a job."""

    def __init__(
        self,
        platform: Platform,
        kick: Callable[[str], None],
        *,
        house: HouseAgent | None = None,
        recorder: Recorder | None = None,
        batch: int = BATCH,
    ) -> None:
        self.platform = platform
        self.house = house or HouseAgent.from_settings(platform.settings, platform.egress)
        self.recorder = recorder or Recorder(platform)
        #: Where the agents' async completions are received (the API's callback route).
        self.completions = CompletionDesk(platform, self.recorder, kick=kick)
        self.sends = InFlight(on_done=kick)
        work = TaskWork(platform, self.house, self.recorder)
        self.stepper = RunStepper(platform, work, in_flight=self.sends, batch=batch)


class RunDriver(SteppedRuns):
    """Advances runs in this process; see the module docstring."""

    def __init__(
        self,
        platform: Platform,
        *,
        house: HouseAgent | None = None,
        recorder: Recorder | None = None,
        tick_s: float = 0.5,
        batch: int = BATCH,
    ) -> None:
        super().__init__(platform, self.kick, house=house, recorder=recorder, batch=batch)
        self.tick_s = tick_s
        self._wake = asyncio.Event()
        #: Steps under way at once (see the module docstring).
        self.steps_at_once = 1 if platform.db.is_sqlite else 2

    def kick(self, run_id: str) -> None:
        """Advance ``run_id`` soon (a run was created or one of its tasks ended); the store
        knows it is due, this only wakes the loop."""
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def in_flight(self, run_id: str | None = None) -> int:
        return len(self.sends.jobs(run_id))

    async def advance(self, run_id: str) -> bool:
        """Step ``run_id`` now, due or not; ``True`` once it is finished."""
        await self.stepper.step([run_id])
        return not await self._running([run_id])

    async def step(self) -> Stepped:
        """One step of the due runs."""
        return await self.stepper.step()

    async def run(self, stop: asyncio.Event) -> None:
        """Step due runs whenever one may be due, until ``stop``, in ``steps_at_once`` loops."""
        waking = asyncio.create_task(self._wake_at(stop))
        try:
            await asyncio.gather(*(self._loop(stop) for _ in range(self.steps_at_once)))
        finally:
            waking.cancel()

    async def _wake_at(self, stop: asyncio.Event) -> None:
        """Wake the loops once ``stop`` is set, so that they end without waiting a tick."""
        await stop.wait()
        self._wake.set()

    async def _loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._wake.clear()
            try:
                stepped = await self.stepper.step()
            except Exception:
                # A database hiccup must not stop the runs; every step is idempotent.
                log.exception("run step failed")
                stepped = Stepped()
            if len(stepped.claimed) >= self.stepper.batch or stepped.owed:
                await asyncio.sleep(0)  # more are due: step again, letting the sends run
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.tick_s)

    async def drain(self, run_id: str, within_s: float = 60.0) -> None:
        """Advance ``run_id`` until it is finished and nothing of it is in flight (tests)."""
        loop = asyncio.get_running_loop()
        limit = loop.time() + within_s
        while True:
            finished = await self.advance(run_id)
            jobs = self.sends.jobs(run_id)
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
        """Stop the work in flight; its tasks stay RUNNING and end as the platform's faults."""
        await self.sends.close()
        await self.recorder.close()

    async def _running(self, run_ids: Sequence[str]) -> list[str]:
        query = select(Run.id).where(Run.id.in_(run_ids), Run.status == RunStatus.RUNNING)
        async with self.platform.db.read() as connection:
            return list((await connection.execute(query)).scalars())
