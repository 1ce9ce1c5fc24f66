"""What the server runs beside its routes, one typed object per mode, built by one factory.

:func:`open_services` builds the :class:`Services` of the mode the settings
ask for, and stops everything it started in the reverse order when its block
ends (one ``AsyncExitStack``):

- **embedded** (no broker): the run driver, the referee, and every job the
  settings enable as a named, supervised loop of this process
  (:mod:`palaestra.jobs.embedded`);
- **scaled** (``broker_url``): the jobs kicked through the broker, consumed
  here too unless ``serve_jobs`` is off (:mod:`palaestra.jobs.serving`), and
  the completion endpoint's beat, by which workers tell this API is up.

Routes reach the services through one request dependency
(``http.deps.ServicesDep``), never through the application's state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from taskiq import AsyncBroker

from palaestra.engine.cage.referee import Referee
from palaestra.engine.loops import every
from palaestra.engine.runs.driver import RunDriver, Runs
from palaestra.engine.runs.endpoint import BEAT_S, announce_up, beat
from palaestra.jobs.context import EmbeddedWork
from palaestra.jobs.embedded import embedded_supervisor
from palaestra.jobs.serving import PendingKicker, through_broker
from palaestra.jobs.supervisor import Loop, Supervisor
from palaestra.jobs.tasks import Jobs
from palaestra.platform import Platform
from palaestra.throttle import Throttle

__all__ = ["MatchWaker", "Services", "open_services"]


class MatchWaker(Protocol):
    """Told when a match is created, so that it starts now rather than at the next tick."""

    def wake(self) -> None: ...


@dataclass
class Services:
    """The services of one mode; see the module docstring."""

    platform: Platform
    #: The guessing throttle of the request guards (shared through Redis when scaled).
    throttle: Throttle
    #: What steps the runs: the driver here, or the jobs' stepper.
    runs: Runs
    #: Who starts a new match: the referee here, or a ``play_pending`` kick.
    referee: MatchWaker
    #: The named loops of this process.
    supervisor: Supervisor
    #: Scaled: the broker and the jobs registered on it.
    broker: AsyncBroker | None = None
    jobs: Jobs | None = None


@asynccontextmanager
async def open_services(platform: Platform) -> AsyncIterator[Services]:
    """The services of the mode ``platform.settings`` ask for, while the block runs."""
    settings = platform.settings
    async with contextlib.AsyncExitStack() as stack:
        throttle = Throttle(
            limit=settings.auth_throttle_failures,
            window_s=settings.auth_throttle_window_s,
            target_limit=settings.auth_throttle_target_failures,
            # Scaled out, the API processes share the broker's Redis, and so the counts.
            storage_url=settings.auth_throttle_url or settings.broker_url,
            forwarded_allow=settings.forwarded_allow_ips,
            prefix=f"{settings.broker_queue}-throttle",
        )
        stack.push_async_callback(throttle.close)
        # Scale-out: the runs are stepped by workers, which must tell when this API (the
        # completion endpoint) is down; embedded, the stepper lives and dies with it.
        await announce_up(platform, beating=bool(settings.broker_url))
        build = _scaled if settings.broker_url else _embedded
        yield await build(platform, throttle, stack)


async def _embedded(
    platform: Platform, throttle: Throttle, stack: contextlib.AsyncExitStack
) -> Services:
    settings = platform.settings
    # The desk that receives agents' async completions serves even with the loop off.
    runs = RunDriver(platform)
    stack.push_async_callback(runs.close)
    referee = Referee(platform, concurrency=settings.referee_concurrency)
    supervisor = embedded_supervisor(EmbeddedWork(platform, runs, referee))
    await stack.enter_async_context(supervisor.running())
    return Services(platform, throttle, runs, referee, supervisor)


async def _scaled(
    platform: Platform, throttle: Throttle, stack: contextlib.AsyncExitStack
) -> Services:
    stop = asyncio.Event()
    name = "completion endpoint beat"
    beating = Loop(name, partial(every, BEAT_S, stop, partial(beat, platform), name))
    supervisor = Supervisor([beating], stop)
    await stack.enter_async_context(supervisor.running())
    jobs = await stack.enter_async_context(through_broker(platform))
    return Services(
        platform, throttle, jobs.runs, PendingKicker(jobs), supervisor, jobs.broker, jobs
    )
