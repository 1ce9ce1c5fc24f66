"""What a job's step works with: :class:`Work` in either mode, :class:`WorkerWork` on a
worker, :class:`EmbeddedWork` in the embedded server.

A step is written once against these; the worker's :class:`~palaestra.jobs.tasks.Jobs`
provides :class:`WorkerWork`, so that a job's module does not import the module that
registers it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from palaestra.engine.cage.desk import TurnDesk
from palaestra.engine.cage.referee import Referee
from palaestra.engine.runs.driver import RunDriver
from palaestra.jobs.kicks import Kicks
from palaestra.jobs.runs import QueuedRuns
from palaestra.platform import Platform

__all__ = ["EmbeddedWork", "LocalKicks", "Work", "WorkerWork"]


class Work(Protocol):
    """What every step has: the platform, a way to ask for more work, and the stop signal."""

    @property
    def platform(self) -> Platform: ...

    @property
    def kicks(self) -> Kicks: ...

    @property
    def stop(self) -> asyncio.Event:
        """Set when the process stops: a long step ends at its next batch."""
        ...


class WorkerWork(Work, Protocol):
    """What the steps that only workers run have besides: the parts a worker keeps."""

    @property
    def runs(self) -> QueuedRuns:
        """The run stepper behind ``step_runs``."""
        ...

    @property
    def turns(self) -> TurnDesk:
        """Claims and records the turns this worker's jobs play, in batches."""
        ...

    @property
    def pings(self) -> asyncio.Semaphore:
        """The health pings this worker sends at once."""
        ...

    @property
    def ping_batch(self) -> int:
        """Agents one ``ping_due`` job claims."""
        ...

    async def kick(self, name: str, *args: str) -> None:
        """Send the job declared as ``name``."""
        ...


@dataclass
class LocalKicks:
    """Kicks in one process: they wake the loops that do the work here."""

    runs: RunDriver
    referee: Referee
    _sending: set[asyncio.Task[Any]] = field(default_factory=set, init=False, repr=False)

    async def kick_step(self) -> None:
        self.runs.wake()

    async def kick_turn(self, match_id: str) -> None:
        self.referee.wake()

    def soon(self, kick: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(kick)
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)


@dataclass
class EmbeddedWork:
    """What the embedded server's loops work with: the run driver and the referee here."""

    platform: Platform
    runs: RunDriver
    referee: Referee
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    kicks: LocalKicks = field(init=False)

    def __post_init__(self) -> None:
        self.kicks = LocalKicks(self.runs, self.referee)
