"""edgearena runs as jobs: a ``step_runs`` job is one step of a batch of due runs.

:class:`QueuedRuns` is the engine's run stepper (``RunStepper``, the same as
in one process) behind a job. A job claims the due runs by lease (two
workers never step one run at once), writes the batch's step and starts the
sends it opened in this worker, which record their ends here and make their
runs due again. What asks for a step (a run created, a task ended, an
agent's callback, the sweeper) kicks one job; while one is waiting in the
queue, further kicks only find it there (a flag in Redis), and a job that
claimed a full batch kicks the next at once so that other workers share the
load. A job also kicks the next when an event came for a run while it held
the run's lease: the job that event kicked may have looked then, and found the
run leased. So does a job that ends after another of this worker's jobs found
the room for sends held by the steps under way (they share it): that job claimed
nothing, and what made it run may have no other job coming.

A worker that dies loses nothing: the jobs it had not acknowledged are
delivered again, its leases lapse, and the tasks it opened or sent but never
recorded end as the platform's faults, voided and opened again, charged to
no agent. A taskId still reaches an agent at most once: a task is sent only
by the stepper that opened it, after claiming its send in the store.
"""

from __future__ import annotations

import asyncio
from typing import Final

import structlog

from palaestra.engine.runs.driver import SteppedRuns
from palaestra.engine.runs.stepper import Stepped
from palaestra.jobs.broker import Flags
from palaestra.jobs.kicks import Kicks
from palaestra.platform import Platform

__all__ = ["STEP_FLAG", "QueuedRuns"]

log = structlog.get_logger(__name__)

#: The flag that says a ``step_runs`` job is waiting in the queue.
STEP_FLAG: Final = "step-runs"


class QueuedRuns(SteppedRuns):
    """The run stepper for workers and API processes with a broker; see the module
    docstring."""

    def __init__(self, platform: Platform, kicks: Kicks, flags: Flags) -> None:
        super().__init__(platform, self.kick)
        self.kicks = kicks
        self.flags = flags
        self._kick_pending = False

    def kick(self, run_id: str | None = None) -> None:
        """Have a worker step the due runs soon; the kicks of one moment make one request."""
        if self._kick_pending:
            return
        self._kick_pending = True
        self.kicks.soon(self.request_step())

    async def request_step(self) -> None:
        """Kick a ``step_runs`` job, unless one is already waiting for a worker."""
        self._kick_pending = False
        if await self.flags.raise_(STEP_FLAG):
            await self.kicks.kick_step()

    async def step(self) -> Stepped:
        """The job: one step of the due runs; a full batch kicks the next job at once, and
        so does a run that an event made due while this step held it (the job that event
        kicked may have looked while the lease was held, and found nothing to claim), and a
        job of this worker that found the room held by steps under way (``owed``)."""
        await self.flags.lower(STEP_FLAG)  # kicks from now on ask for another job
        stepped = await self.stepper.step()
        if len(stepped.claimed) >= self.stepper.batch or stepped.again or stepped.owed:
            await self.request_step()
        return stepped

    async def advance(self, run_id: str) -> Stepped:
        """One step of ``run_id`` here, due or not (tests, tools)."""
        return await self.stepper.step([run_id])

    async def close(self, drain_s: float = 10.0) -> None:
        """Let the sends in flight end (for up to ``drain_s``), then stop those left: their
        tasks end as the platform's faults."""
        try:
            await asyncio.wait_for(self.sends.wait(), drain_s)
        except TimeoutError:
            log.warning("sends cut off at shutdown", tasks=len(self.sends))
        await self.sends.close()
        await self.recorder.close()
