"""Named, supervised loops: a loop that fails is logged by name and started again.

A loop is a coroutine that runs until its ``stop`` is set. One that raises, or
returns while it should still run, is logged with its name and restarted after
a backoff that doubles up to :data:`MAX_BACKOFF_S` (and starts again from
:data:`BACKOFF_S` once a run lasted longer than the backoff it waited): a loop
never dies silently, and one failing at once over and over does not spin.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import structlog

__all__ = ["BACKOFF_S", "MAX_BACKOFF_S", "Loop", "Supervisor"]

log = structlog.get_logger(__name__)

#: The first wait before a failed loop starts again, in seconds.
BACKOFF_S: Final = 1.0
#: The longest wait before a failed loop starts again, in seconds.
MAX_BACKOFF_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class Loop:
    """A loop by name: ``run()`` until the supervisor's stop is set."""

    name: str
    run: Callable[[], Awaitable[None]]
    #: How long it may take to end once stopped before it is abandoned (None: no bound).
    stop_within_s: float | None = None


class Supervisor:
    """Runs ``loops`` until ``stop`` is set, each restarted when it fails."""

    def __init__(
        self,
        loops: Sequence[Loop],
        stop: asyncio.Event,
        *,
        backoff_s: float = BACKOFF_S,
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        self.loops = list(loops)
        self.stop = stop
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        #: How many times each loop was started again after a failure.
        self.restarts: dict[str, int] = {loop.name: 0 for loop in self.loops}

    @property
    def names(self) -> list[str]:
        return [loop.name for loop in self.loops]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Supervisor]:
        """Run the loops while the block runs; then stop them and wait for them to end."""
        tasks = [
            (loop, asyncio.create_task(self._supervise(loop), name=loop.name))
            for loop in self.loops
        ]
        try:
            yield self
        finally:
            self.stop.set()
            await asyncio.gather(*(self._ended(loop, task) for loop, task in tasks))

    async def _ended(self, loop: Loop, task: asyncio.Task[None]) -> None:
        if loop.stop_within_s is not None:
            await asyncio.wait([task], timeout=loop.stop_within_s)
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _supervise(self, loop: Loop) -> None:
        backoff = self.backoff_s
        clock = asyncio.get_running_loop()
        while not self.stop.is_set():
            started = clock.time()
            try:
                await loop.run()
            except Exception:
                log.exception("loop failed; starting it again", loop=loop.name, in_s=backoff)
            else:
                if self.stop.is_set():
                    return
                log.error("loop ended on its own; starting it again", loop=loop.name, in_s=backoff)
            if clock.time() - started > backoff:
                backoff = self.backoff_s  # it ran a while: a fresh failure, not a spin
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), backoff)
            if not self.stop.is_set():
                self.restarts[loop.name] += 1
            backoff = min(backoff * 2, self.max_backoff_s)
