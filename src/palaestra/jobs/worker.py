"""``palaestra worker``: runs jobs from the broker, N at once, and takes its turn at scheduling.

A worker is taskiq's :class:`~taskiq.receiver.Receiver` driven in-process
(no taskiq CLI), with the arena's :class:`~palaestra.jobs.tasks.Jobs`
registered on the broker and a :class:`~palaestra.jobs.scheduler.Scheduler`
beside it (a supervised loop). ``palaestra serve`` with a broker runs the same
thing inside the server unless ``--no-workers`` is given.

Stopping (SIGTERM, Ctrl-C) stops taking jobs and lets the running ones finish
for up to ``drain_s``; jobs cut off are not acknowledged, so the broker
delivers them again to another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

import structlog
from prometheus_client import start_http_server
from taskiq import AsyncBroker
from taskiq.receiver import Receiver

from palaestra.jobs.broker import StreamBroker, make_broker
from palaestra.jobs.scheduler import Scheduler, periods_for
from palaestra.jobs.supervisor import Loop, Supervisor
from palaestra.jobs.tasks import Jobs
from palaestra.platform import Platform
from palaestra.settings import Settings

__all__ = ["Worker", "consuming", "run_worker"]

log = structlog.get_logger(__name__)


@dataclass
class Worker:
    """What a running worker holds."""

    broker: AsyncBroker
    jobs: Jobs
    scheduler: Scheduler


@asynccontextmanager
async def consuming(
    platform: Platform,
    *,
    concurrency: int,
    broker: AsyncBroker | None = None,
    schedule: bool = True,
    drain_s: float = 10.0,
) -> AsyncIterator[Worker]:
    """Run jobs from the broker (and the scheduler) on ``platform`` while the block runs."""
    settings = platform.settings
    broker = broker or make_broker(settings, concurrency=concurrency)
    if not isinstance(broker, StreamBroker):
        raise ValueError("a worker needs a broker it can listen to: set PALAESTRA_BROKER_URL")
    broker.is_worker_process = True
    jobs = Jobs(broker, platform)
    # taskiq logs every job at INFO; the arena logs what matters itself.
    logging.getLogger("taskiq").setLevel(logging.WARNING)
    await broker.startup()
    receiver = Receiver(
        broker, max_async_tasks=concurrency, run_startup=False, wait_tasks_timeout=drain_s
    )
    scheduler = Scheduler(jobs, periods_for(broker, settings.broker_queue))
    finish = asyncio.Event()
    stop = asyncio.Event()
    listening = asyncio.create_task(receiver.listen(finish))
    loops = [Loop("scheduler", partial(scheduler.run, stop))] if schedule else []
    log.info("worker started", concurrency=concurrency, consumer=broker.consumer_name)
    try:
        async with Supervisor(loops, stop).running():
            yield Worker(broker, jobs, scheduler)
    finally:
        finish.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(listening, drain_s + 5)
        await jobs.close()
        await broker.shutdown()
        log.info("worker stopped", consumer=broker.consumer_name)


async def run_worker(
    settings: Settings,
    *,
    concurrency: int,
    stop: asyncio.Event,
    metrics_port: int | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """The ``palaestra worker`` process: open the platform, consume until ``stop``.

    The schema is not migrated here (many workers start at once): ``palaestra
    migrate``, or ``palaestra serve``, does it first.
    """
    platform = await Platform.open(settings, migrate=False)
    try:
        if metrics_port is not None:
            start_http_server(metrics_port, addr=settings.host, registry=platform.metrics.registry)
        async with consuming(platform, concurrency=concurrency):
            if on_ready is not None:
                on_ready()
            await stop.wait()
    finally:
        await platform.close()
