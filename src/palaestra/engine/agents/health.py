"""The health monitor: pings each agent on its status's cadence and applies the outcome.

Work is split into small idempotent steps so that it can run in-process or on
many workers: *claim* moves each due agent's ``next_ping_at`` forward (so no
one pings it twice in a period), *ping* is one GET, *record* applies the
outcome to the agent's current state and appends history. The database is
the truth; a crash between steps loses at most the pings in flight, which are
simply due again one period later.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, TypeVar

import structlog
from sqlalchemy import bindparam, select

from palaestra.engine.agents.lifecycle import state_of
from palaestra.engine.agents.outcomes import AgentOutcome, write_outcomes
from palaestra.platform import Platform
from palaestra.protocol import UserAgent
from palaestra.protocol.constants import HEALTH_TIMEOUT_S, Arena
from palaestra.rules.status import PINGABLE, next_ping_at
from palaestra.store.models import Agent

__all__ = ["DuePing", "HealthMonitor", "PingOutcome"]

log = structlog.get_logger(__name__)
_PINGABLE = [status.value for status in PINGABLE]
#: The agents due a ping at ``now``.
_DUE: Final = (
    Agent.next_ping_at <= bindparam("now"),
    Agent.arena == Arena.EDGEARENA,
    Agent.hold.is_(False),
    Agent.status.in_(_PINGABLE),
    Agent.endpoint_url.is_not(None),
)
_ANY_DUE: Final = select(Agent.id).where(*_DUE).limit(1)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DuePing:
    agent_id: str
    url: str
    due_at: float


@dataclass(frozen=True, slots=True)
class PingOutcome:
    agent_id: str
    ok: bool
    latency_ms: float
    reason: str | None
    failure_kind: str | None
    lag_s: float


@dataclass
class HealthMonitor:
    """Drives health pings. ``run_once`` drains what is due now (tests, jobs); ``run`` loops."""

    platform: Platform
    batch_size: int = 1000
    tick_s: float = 0.05
    lags: list[float] = field(default_factory=list)
    record_lags: bool = False

    async def claim(self, limit: int, due_by: float | None = None) -> list[DuePing]:
        """Take up to ``limit`` agents due now (or by ``due_by``, if earlier) and push their
        next ping one period ahead."""
        platform = self.platform
        now = platform.clock.now()
        due_at = now if due_by is None else min(now, due_by)
        # Most ticks find none due: a plain read says so, without a transaction or the ORM.
        async with platform.db.read() as connection:
            if (await connection.execute(_ANY_DUE, {"now": due_at})).first() is None:
                return []
        async with platform.db.session() as session, session.begin():
            query = select(Agent).where(*_DUE).order_by(Agent.next_ping_at).limit(limit)
            if not platform.db.is_sqlite:
                query = query.with_for_update(skip_locked=True)
            agents = (await session.scalars(query, {"now": due_at})).all()
            due = []
            for agent in agents:
                due.append(DuePing(agent.id, agent.endpoint_url or "", agent.next_ping_at or now))
                agent.next_ping_at = next_ping_at(state_of(agent), now, platform.schedule)
        return due

    async def ping(self, due: DuePing) -> PingOutcome:
        platform = self.platform
        lag = max(0.0, platform.clock.now() - due.due_at)
        platform.metrics.pings_in_flight.inc()
        try:
            result = await platform.egress.get(
                due.url, user_agent=UserAgent.HEALTH, deadline=HEALTH_TIMEOUT_S
            )
        finally:
            platform.metrics.pings_in_flight.dec()
        kind = result.failure.kind.value if result.failure else None
        return PingOutcome(due.agent_id, result.ok, result.latency_ms, result.reason, kind, lag)

    async def record(self, outcomes: Sequence[PingOutcome]) -> None:
        """Apply each outcome to the agent as it is now, and append the history rows.

        One transaction per batch, through the agents' one outcome writer
        (:func:`~palaestra.engine.agents.outcomes.write_outcomes`): the agents are read
        (locked on PostgreSQL), moved through the status machine in memory, and written
        back with one bulk UPDATE and one bulk INSERT, which keeps SQLite well above the
        protocol's needs.
        """
        if not outcomes:
            return
        platform = self.platform
        now = platform.clock.now()
        pinged = [
            AgentOutcome.of(
                o.agent_id,
                now,
                "ping",
                o.ok,
                cause="health ping",
                latency_ms=o.latency_ms,
                reason=o.reason,
            )
            for o in outcomes
        ]
        write = partial(write_outcomes, outcomes=pinged, now=now, schedule=platform.schedule)
        for status in await platform.db.transact(write):
            platform.metrics.status_changes.labels(status).inc()
        for outcome in outcomes:
            platform.metrics.pings.labels("success" if outcome.ok else "failure").inc()
            if outcome.failure_kind:
                platform.metrics.failures.labels(outcome.failure_kind).inc()
            platform.metrics.ping_lag.observe(outcome.lag_s)
            if self.record_lags:
                self.lags.append(outcome.lag_s)

    async def run_once(self) -> int:
        """Ping every agent due now, record the outcomes, and return how many were pinged.
        An agent due again meanwhile (a round longer than its period) waits for the next
        round: a drain ends."""
        total = 0
        started = self.platform.clock.now()
        while due := await self.claim(self.batch_size, due_by=started):
            outcomes = await _gather_limited(
                [self.ping(d) for d in due], self.platform.settings.health_concurrency
            )
            await self.record(outcomes)
            total += len(due)
        return total

    async def run(self, stop: asyncio.Event) -> None:
        """Keep pinging until ``stop`` is set: claims as capacity frees, records in batches."""
        limit = self.platform.settings.health_concurrency
        in_flight: set[asyncio.Task[PingOutcome]] = set()
        finished: list[PingOutcome] = []

        def collect(task: asyncio.Task[PingOutcome]) -> None:
            in_flight.discard(task)
            if not task.cancelled() and task.exception() is None:
                finished.append(task.result())

        try:
            while not stop.is_set():
                try:
                    room = limit - len(in_flight)
                    if room > 0:
                        for due in await self.claim(min(room, self.batch_size)):
                            task = asyncio.create_task(self.ping(due))
                            in_flight.add(task)
                            task.add_done_callback(collect)
                    if finished:
                        batch, finished[:] = list(finished), []
                        await self.record(batch)
                except Exception:
                    # A database hiccup must not stop health checking; the work is
                    # idempotent, so the next tick simply tries again.
                    log.exception("health monitor tick failed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.tick_s)
        finally:
            for task in in_flight:
                task.cancel()
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
            if finished:
                await self.record(finished)


async def _gather_limited(coros: Sequence[Coroutine[Any, Any, T]], limit: int) -> list[T]:
    semaphore = asyncio.Semaphore(limit)

    async def one(coro: Coroutine[Any, Any, T]) -> T:
        async with semaphore:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros))
