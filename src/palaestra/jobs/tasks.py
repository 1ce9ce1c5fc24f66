"""The declared jobs as taskiq tasks on one broker, and the way to enqueue them.

:class:`Jobs` registers every job of :mod:`palaestra.jobs.registry` as a task
named ``palaestra.<name>``, each counted in the ``palaestra_jobs`` metric, and
holds what their steps share on a worker (:class:`~palaestra.jobs.context.WorkerWork`):
the run stepper, the turn desk, the pings' limit. The steps themselves are in
the modules the registry names, one per job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog
from taskiq import AsyncBroker, AsyncTaskiqDecoratedTask

from palaestra.engine.cage.desk import TurnDesk
from palaestra.jobs.broker import flags_for
from palaestra.jobs.registry import JOBS, Job
from palaestra.jobs.runs import QueuedRuns
from palaestra.platform import Platform

__all__ = ["PING_BATCH", "Jobs"]

log = structlog.get_logger(__name__)

#: Agents one ``ping_due`` job claims; a full batch kicks another job at once.
PING_BATCH = 250

Task = AsyncTaskiqDecoratedTask[Any, Any]


class Jobs:
    """The tasks registered on ``broker``, run against ``platform``.

    Every process that kicks or runs jobs builds one: ``palaestra worker``
    and ``palaestra serve`` with a broker. Each declared job's task is an
    attribute of its name (``jobs.step_runs.kiq()``); ``jobs.kick(name)`` sends it.
    """

    def __init__(
        self, broker: AsyncBroker, platform: Platform, *, ping_batch: int = PING_BATCH
    ) -> None:
        self.broker = broker
        self.platform = platform
        self.ping_batch = ping_batch
        self.pings = asyncio.Semaphore(platform.settings.health_concurrency)
        self.turns = TurnDesk(platform)
        #: Set as the process stops: a long step ends at its next batch.
        self.stop = asyncio.Event()
        self._kicks: set[asyncio.Task[Any]] = set()
        self.tasks: dict[str, Task] = {job.name: self._register(job) for job in JOBS}
        #: Markers of kicked jobs, so that a burst of events kicks one job.
        self.flags = flags_for(broker, platform.settings)
        #: The run step and the dispatcher, with the recorder this process writes through.
        self.runs = QueuedRuns(platform, self, self.flags)

    def _register(self, job: Job) -> Task:
        async def run(*args: str) -> Any:
            return await self._counted(job.name, lambda: job.step(self, *args))

        return self.broker.register_task(run, task_name=f"palaestra.{job.name}")

    def __getattr__(self, name: str) -> Task:
        tasks: dict[str, Task] = self.__dict__.get("tasks", {})
        try:
            return tasks[name]
        except KeyError:
            raise AttributeError(name) from None

    # What the steps work with (``jobs.context.WorkerWork``).

    @property
    def kicks(self) -> Jobs:
        return self

    async def kick(self, name: str, *args: str) -> None:
        """Send the job declared as ``name``."""
        await self.tasks[name].kiq(*args)

    # Kicking (``jobs.kicks.Kicks``), also from code that cannot wait (callbacks, sync hooks).

    async def kick_step(self) -> None:
        await self.kick("step_runs")

    async def kick_turn(self, match_id: str) -> None:
        await self.kick("play_turn", match_id)

    def soon(self, kick: Coroutine[Any, Any, Any]) -> None:
        """Send a job without waiting for the broker; a failure is logged, the sweeper covers it."""
        task = asyncio.create_task(kick)
        self._kicks.add(task)
        task.add_done_callback(self._kicked)

    def _kicked(self, task: asyncio.Task[Any]) -> None:
        self._kicks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("kicking a job failed", error=repr(task.exception()))

    async def settle(self) -> None:
        """Wait for the kicks in flight (shutdown, tests)."""
        while self._kicks:
            await asyncio.gather(*self._kicks, return_exceptions=True)

    async def close(self) -> None:
        """Wait for the kicks in flight; release what the jobs hold."""
        self.stop.set()
        await self.settle()
        await self.runs.close()
        await self.turns.close()
        await self.settle()

    async def _counted(self, name: str, work: Callable[[], Awaitable[Any]]) -> Any:
        metrics = self.platform.metrics
        try:
            result = await work()
        except Exception:
            metrics.jobs.labels(name, "error").inc()
            log.exception("job failed", job=name)
            raise
        metrics.jobs.labels(name, "done").inc()
        return result
