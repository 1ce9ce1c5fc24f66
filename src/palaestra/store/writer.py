"""The SQLite store's own writer thread: a whole transaction in one hop from the event loop.

Through the async driver every statement is a round trip between the event
loop and the driver's thread, and under load each trip waits its turn on a
busy loop: a transaction of a dozen statements then holds SQLite's single
write lock for tens of milliseconds, and everything behind it waits. Here the
transaction is a plain function of a synchronous connection that runs from
``BEGIN IMMEDIATE`` to ``COMMIT`` on this thread: one hop there and one back,
the write lock held only while the function runs, and SQLite's own work
(which releases the GIL) done beside the event loop rather than on it.

``BEGIN IMMEDIATE`` takes the write lock before the first read, so what a
transaction reads cannot change before it writes: a read-check-write is
atomic, as ``SELECT ... FOR UPDATE`` makes it on PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import URL, Engine, create_engine, event
from sqlalchemy.engine import Connection

from palaestra.errors import StoreClosed

__all__ = ["SqliteWriter"]

T = TypeVar("T")


class SqliteWriter:
    """Runs transactions on one thread with one synchronous connection.

    ``url`` is the database's own (``sqlite+aiosqlite:///...``); the writer reaches
    the same file through the synchronous driver, with ``engine_options`` (JSON
    serialization, echo) as the rest of the store, and ``on_connect`` preparing its
    connection as every other one.
    """

    def __init__(
        self, url: URL, on_connect: Callable[[Any, Any], None], **engine_options: Any
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="palaestra-store")
        self._closed = False
        self.engine: Engine = create_engine(
            url.set(drivername="sqlite+pysqlite"), pool_size=1, max_overflow=0, **engine_options
        )
        event.listen(self.engine, "connect", on_connect)
        event.listen(self.engine, "connect", _manual_transactions)
        event.listen(self.engine, "begin", _begin_immediate)

    async def run(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one transaction on the writer thread: committed if it returns, rolled
        back if it raises (the exception is raised here).

        If the caller is cancelled, work not yet begun is dropped (nothing is written),
        and work already under way still commits: its result is lost with the caller.
        """
        if self._closed:
            raise StoreClosed
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(self._transaction, work))

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        with self.engine.begin() as connection:
            return work(connection)

    async def close(self) -> None:
        """Let the transactions already handed over finish, then close the connection; the
        writer takes no more work."""
        if self._closed:
            return
        self._closed = True
        done = asyncio.get_running_loop().run_in_executor(self._executor, self.engine.dispose)
        self._executor.shutdown(wait=False)  # the disposal is the last job
        await done


def _manual_transactions(dbapi_connection: Any, _record: Any) -> None:
    # The sqlite3 module would otherwise open transactions itself, lazily, at the first
    # write: the reads before it would see another snapshot than the writes.
    dbapi_connection.isolation_level = None


def _begin_immediate(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")
