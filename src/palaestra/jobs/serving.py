"""The API process with a broker: its actions kick jobs, and it may run a worker inside.

``palaestra serve`` with ``PALAESTRA_BROKER_URL`` set does not run the
embedded loops. What its routes start goes to the broker instead: a new
match kicks ``play_pending``; a new run, or an agent's completion callback,
kicks ``step_runs``. With ``serve_jobs`` (the default) the process also
consumes jobs like a ``palaestra worker``; ``serve --no-workers`` only kicks.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from palaestra.jobs.broker import make_broker
from palaestra.jobs.tasks import Jobs
from palaestra.jobs.worker import consuming
from palaestra.platform import Platform

__all__ = ["PendingKicker", "through_broker"]


@dataclass
class PendingKicker:
    """Stands where the routes look for the referee: ``wake`` kicks the matches not started."""

    jobs: Jobs

    def wake(self) -> None:
        self.jobs.soon(self.jobs.kick("play_pending"))


@asynccontextmanager
async def through_broker(platform: Platform) -> AsyncIterator[Jobs]:
    """The jobs kicked through the broker; consumed here too when ``serve_jobs``."""
    settings = platform.settings
    broker = make_broker(settings)
    async with contextlib.AsyncExitStack() as stack:
        if settings.serve_jobs:
            worker = await stack.enter_async_context(
                consuming(platform, concurrency=settings.worker_concurrency, broker=broker)
            )
            yield worker.jobs
            return
        jobs = Jobs(broker, platform)
        await broker.startup()
        stack.push_async_callback(broker.shutdown)
        stack.push_async_callback(jobs.close)
        yield jobs
