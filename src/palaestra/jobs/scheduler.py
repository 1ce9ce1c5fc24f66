"""The scheduler: kicks the periodic jobs once per period across the cluster.

Every worker runs one, so that the cluster keeps its schedule whichever
workers are up. Time is cut into periods per job (``floor(now / interval)``);
the first scheduler to take a period's lock kicks the job, the others see the
lock taken and do nothing. With Redis the lock is ``SET key NX PX``, one key
per job and period, expiring after two periods; in one process it is a
dictionary. A scheduler that dies between taking a period and kicking its
job loses that one period: the next one comes on time.

The periodic jobs are those of :mod:`palaestra.jobs.registry` that the
settings enable, each on its declared period, its lock named after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from redis.asyncio import Redis
from taskiq import AsyncBroker

from palaestra.jobs.broker import StreamBroker
from palaestra.jobs.registry import periodic
from palaestra.jobs.tasks import Jobs

__all__ = ["LocalPeriods", "Periodic", "Periods", "RedisPeriods", "Scheduler", "periods_for"]

log = structlog.get_logger(__name__)


class Periods(Protocol):
    async def take(self, name: str, index: int, ttl_s: float) -> bool:
        """``True`` for the first caller of (``name``, ``index``) across the cluster."""
        ...


@dataclass
class LocalPeriods:
    """Period locks for one process (the in-memory broker)."""

    taken: dict[str, int] = field(default_factory=dict)

    async def take(self, name: str, index: int, ttl_s: float) -> bool:
        if self.taken.get(name, -1) >= index:
            return False
        self.taken[name] = index
        return True


@dataclass
class RedisPeriods:
    """Period locks in Redis: ``SET <prefix>:period:<name>:<index> NX PX``."""

    redis: Redis
    prefix: str
    holder: str

    async def take(self, name: str, index: int, ttl_s: float) -> bool:
        key = f"{self.prefix}:period:{name}:{index}"
        return bool(await self.redis.set(key, self.holder, nx=True, px=max(1, round(ttl_s * 1000))))


def periods_for(broker: AsyncBroker, prefix: str) -> Periods:
    if isinstance(broker, StreamBroker):
        return RedisPeriods(broker.redis(), prefix, broker.consumer_name)
    return LocalPeriods()


@dataclass(frozen=True, slots=True)
class Periodic:
    name: str
    interval_s: float
    task: Any  # an AsyncTaskiqDecoratedTask taking no arguments


@dataclass
class Scheduler:
    """Kicks each periodic job at most once per period, cluster-wide."""

    jobs: Jobs
    periods: Periods
    #: (name, period index) of every period this scheduler won, for tests and logs.
    won: list[tuple[str, int]] = field(default_factory=list)
    _seen: dict[str, int] = field(default_factory=dict, init=False)

    @property
    def schedule(self) -> list[Periodic]:
        settings = self.jobs.platform.settings
        # The task by its job's name: an attribute of ``Jobs``.
        return [
            Periodic(job.name, period, getattr(self.jobs, job.name))
            for job, period in periodic(settings)
        ]

    async def tick(self) -> list[str]:
        """Kick the jobs whose new period this scheduler is the first to reach."""
        now = self.jobs.platform.clock.now()
        kicked = []
        for entry in self.schedule:
            index = math.floor(now / entry.interval_s)
            if self._seen.get(entry.name) == index:
                continue
            self._seen[entry.name] = index
            if await self.periods.take(entry.name, index, 2 * entry.interval_s):
                self.won.append((entry.name, index))
                await entry.task.kiq()
                kicked.append(entry.name)
        return kicked

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop`` is set, a few times per shortest period."""
        step = min(0.25, min(e.interval_s for e in self.schedule) / 4)
        while not stop.is_set():
            try:
                await self.tick()
            except Exception:
                # Redis or the broker hiccuped: the periods missed are simply skipped.
                log.exception("scheduler tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), step)
