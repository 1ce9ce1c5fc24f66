"""The arena's units of work as taskiq tasks on one broker, and the way to enqueue them.

Each job calls an engine step that is already idempotent and keyed by ids;
the database decides, so a job delivered twice (its worker died before
acknowledging it) or run twice at once only finds that the work is taken:

- ``ping_due``: claim up to a batch of agents whose health ping is due
  (``HealthMonitor.claim``: row locks, ``SKIP LOCKED`` on PostgreSQL, each
  agent's next ping pushed one period ahead in the same transaction), kick a
  follow-up when the batch was full so that other workers share the load,
  ping, record. An agent is never pinged twice in one period; a worker that
  dies mid-batch loses those pings, which are due again one period later.
- ``play_turn``: ``referee.play_match`` from the match's next turn on (each
  turn's row is its lease, and each turn's record claims the next); the turns
  a worker plays at once are claimed and recorded in batches (``TurnDesk``).
- ``step_runs``: one step of a batch of due runs, whose sends go out from
  the worker that stepped them (:mod:`palaestra.jobs.runs`).
- ``matchmake``, ``ratings``: one round of the matchmaker and of the ratings
  worker; the scheduler kicks them once per period across the cluster.
- ``sweep``: moves on the work dead workers left (:mod:`palaestra.jobs.sweeper`).
- ``retention``: one pass of history retention (:mod:`palaestra.engine.history`), one
  runner at a time by its own lease.
- ``roll_up``: closes the hours of history whose grace passed (``store.rollups``); two at
  once take turns on an advisory lock, and the second finds the hours done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog
from taskiq import AsyncBroker

from palaestra.engine.accounts import Caller
from palaestra.engine.agents.health import HealthMonitor, PingOutcome
from palaestra.engine.cage.desk import TurnDesk
from palaestra.engine.cage.matches import create_match
from palaestra.engine.cage.matchmaker import Matchmaker
from palaestra.engine.cage.referee import Step, play_match
from palaestra.engine.history import roll_up_history
from palaestra.engine.history.retention import build_retention
from palaestra.engine.ratings.leaderboard import RatingsWorker
from palaestra.errors import NotFound
from palaestra.jobs import sweeper
from palaestra.jobs.broker import flags_for
from palaestra.jobs.runs import QueuedRuns
from palaestra.platform import Platform

__all__ = ["PING_BATCH", "Jobs"]

log = structlog.get_logger(__name__)

#: Agents one ``ping_due`` job claims; a full batch kicks another job at once.
PING_BATCH = 250


class Jobs:
    """The tasks registered on ``broker``, run against ``platform``.

    Every process that kicks or runs jobs builds one: ``palaestra worker``
    and ``palaestra serve`` with a broker.
    """

    def __init__(
        self, broker: AsyncBroker, platform: Platform, *, ping_batch: int = PING_BATCH
    ) -> None:
        self.broker = broker
        self.platform = platform
        self.ping_batch = ping_batch
        self._pings = asyncio.Semaphore(platform.settings.health_concurrency)
        # The turns this worker's jobs play at once are claimed and recorded in batches.
        self._turns = TurnDesk(platform)
        self._kicks: set[asyncio.Task[Any]] = set()

        # taskiq renames the functions it registers, so each task is a plain function.
        async def ping_due() -> int:
            return await self._ping_due()

        async def play_turn(match_id: str) -> str:
            return await self._play_turn(match_id)

        async def play_pending() -> int:
            return await self._play_pending()

        async def matchmake() -> int:
            return await self._matchmake()

        async def ratings() -> None:
            await self._ratings()

        async def sweep() -> dict[str, int]:
            return await self._sweep()

        async def retention() -> None:
            await self._counted("retention", build_retention(self.platform).run_once)

        async def roll_up() -> int:
            return int(await self._counted("roll_up", lambda: roll_up_history(self.platform)))

        async def step_runs() -> int:
            stepped = await self._counted("step_runs", self.runs.step)
            return len(stepped.claimed)

        self.ping_due = broker.register_task(ping_due, task_name="palaestra.ping_due")
        self.play_turn = broker.register_task(play_turn, task_name="palaestra.play_turn")
        self.play_pending = broker.register_task(play_pending, task_name="palaestra.play_pending")
        self.matchmake = broker.register_task(matchmake, task_name="palaestra.matchmake")
        self.ratings = broker.register_task(ratings, task_name="palaestra.ratings")
        self.sweep = broker.register_task(sweep, task_name="palaestra.sweep")
        self.retention = broker.register_task(retention, task_name="palaestra.retention")
        self.step_runs = broker.register_task(step_runs, task_name="palaestra.step_runs")
        self.roll_up = broker.register_task(roll_up, task_name="palaestra.roll_up")
        #: Markers of kicked jobs, so that a burst of events kicks one job.
        self.flags = flags_for(broker, platform.settings)
        #: The run step and the dispatcher, with the recorder this process writes through.
        self.runs = QueuedRuns(platform, self, self.flags)

    # Kicking (``jobs.kicks.Kicks``), also from code that cannot wait (callbacks, sync hooks).

    async def kick_step(self) -> None:
        await self.step_runs.kiq()

    async def kick_turn(self, match_id: str) -> None:
        await self.play_turn.kiq(match_id)

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
        await self.settle()
        await self.runs.close()
        await self._turns.close()
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

    # Health pings.

    async def _ping_due(self) -> int:
        return int(await self._counted("ping_due", self._ping_batch))

    async def _ping_batch(self) -> int:
        monitor = HealthMonitor(self.platform)
        due = await monitor.claim(self.ping_batch)
        if len(due) == self.ping_batch:
            await self.ping_due.kiq()  # more are due: let another worker take the next batch

        async def one(item: Any) -> PingOutcome:
            async with self._pings:
                return await monitor.ping(item)

        outcomes = await asyncio.gather(*(one(item) for item in due))
        await monitor.record(outcomes)
        return len(due)

    # cage.v1 matches.

    async def _play_turn(self, match_id: str) -> str:
        return str(await self._counted("play_turn", lambda: self._turn(match_id)))

    async def _turn(self, match_id: str) -> str:
        try:
            result = await play_match(self.platform, match_id, self._turns)
        except NotFound:
            return Step.FINISHED.value  # deleted meanwhile
        # BUSY: another worker holds the turn; if it dies, the sweeper re-kicks the match
        # once the turn's lease has run out.
        return result.step.value

    async def _play_pending(self) -> int:
        """Kick every match that has not started (an API process created one)."""
        ids = await sweeper.pending_matches(self.platform)
        for match_id in ids:
            await self.play_turn.kiq(match_id)
        return len(ids)

    async def _matchmake(self) -> int:
        async def create(attacker_id: str, defender_id: str) -> str:
            match = await create_match(
                self.platform, Caller(owner_id=None, is_admin=True), attacker_id, defender_id
            )
            await self.play_turn.kiq(match.id)
            return match.id

        created = await self._counted(
            "matchmake", lambda: Matchmaker(self.platform, create).run_once()
        )
        return len(created)

    # Ratings and leaderboards.

    async def _ratings(self) -> None:
        await self._counted("ratings", RatingsWorker(self.platform).run_once)

    # Orphans.

    async def _sweep(self) -> dict[str, int]:
        result: dict[str, int] = await self._counted(
            "sweep", lambda: sweeper.sweep(self.platform, self)
        )
        return result
