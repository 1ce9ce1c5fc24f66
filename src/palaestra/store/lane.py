"""PostgreSQL's transactions on a thread and event loop of their own.

A run step is a few transactions of a few statements each, and every
statement is a round trip: on the server's event loop, each reply waits its
turn behind whatever else is ready there (thousands of dispatches' replies,
the API), so under load a step's twenty round trips took hundreds of
milliseconds while the database sat idle in its transaction. Here they run on
a loop that does nothing else: a reply is picked up as soon as the thread
gets the interpreter (``runtime.settle`` shortens the switch interval for
this and for SQLite's writer thread), and the event loop that asked gets the
result in one hop. This is :mod:`.writer`'s arrangement for SQLite, for the
other store.

The lane's engines are its own (their connections belong to its loop); the
API's sessions keep the event loop's engine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["StoreLane"]

T = TypeVar("T")


class StoreLane:
    """Runs transactions of ``engines`` (created for this lane, used only on it) on a thread
    of its own; :meth:`transact` is awaited from any event loop."""

    def __init__(self, engines: dict[str, AsyncEngine]) -> None:
        #: The lane's engines by name: their connections are used on the lane only.
        self.engines = engines
        self._loop = asyncio.new_event_loop()  # the stdlib's: it only waits on replies
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="palaestra-store-lane", daemon=True
        )
        self._thread.start()

    async def transact(self, engine: str, work: Callable[[Connection], T], single: bool) -> T:
        """``work`` in one transaction of the engine named ``engine``; with ``single``, in
        autocommit (no BEGIN and COMMIT round trips): its one write, or its reads."""
        return await self._on_lane(_transact(self.engines[engine], work, single))

    async def _on_lane(self, job: Coroutine[Any, Any, T]) -> T:
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(job, self._loop)
        # Cancelling the caller cancels the job on the lane (the transaction rolls back).
        return await asyncio.wrap_future(future)

    async def close(self) -> None:
        """Dispose of the lane's engines and stop its thread."""
        if not self._thread.is_alive():
            return
        engines = list(self.engines.values())
        done = asyncio.run_coroutine_threadsafe(_dispose(engines), self._loop)
        try:
            await asyncio.wrap_future(done)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            await asyncio.to_thread(self._thread.join)
            self._loop.close()


async def _transact(engine: AsyncEngine, work: Callable[[Connection], T], single: bool) -> T:
    if single:
        async with engine.connect() as connection:
            alone = await connection.execution_options(isolation_level="AUTOCOMMIT")
            return await alone.run_sync(work)
    async with engine.begin() as connection:
        return await connection.run_sync(work)


async def _dispose(engines: list[AsyncEngine]) -> None:
    for engine in engines:
        await engine.dispose()
