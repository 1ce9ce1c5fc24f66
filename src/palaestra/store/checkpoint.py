"""Copying SQLite's write-ahead log back into the database, on a thread of its own.

SQLite's automatic checkpoint runs inside the commit that takes the log past
1,000 pages: that commit copies the pages into the database and syncs the
disk twice before it returns, holding up every transaction queued behind it.
Here every connection of the process moves that point to ``SAFETY_NET_PAGES``
(reached only if this thread falls behind or has stopped), and this thread
copies the log back instead, ``interval`` seconds after a commit and at most
that often while commits keep coming. A PASSIVE checkpoint waits for nobody and nobody
waits for it, and a page rewritten many times in between is copied once.
Durability is the log's: a committed transaction survives a crash of the
process whether or not it has been copied yet.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final

import structlog

__all__ = ["CHECKPOINT_INTERVAL_S", "SAFETY_NET_PAGES", "Checkpointer"]

log = structlog.get_logger(__name__)

#: The longest the log grows between two checkpoints while commits keep coming.
CHECKPOINT_INTERVAL_S: Final = 0.25
#: Log pages (of 4 KiB) past which a commit checkpoints inline after all, as SQLite does
#: at 1,000 by default: a bound on the log should this thread fall behind or stop.
SAFETY_NET_PAGES: Final = 25_000


class Checkpointer:
    """Checkpoints ``database`` after commits, from a thread started at the first one.

    ``on_connect`` prepares its connection as every other one of the process (WAL,
    the busy timeout, no automatic checkpoint)."""

    def __init__(
        self,
        database: str,
        on_connect: Callable[[Any, Any], None],
        interval: float = CHECKPOINT_INTERVAL_S,
    ) -> None:
        self.database = database
        self.interval = interval
        self.checkpoints = 0  # completed ones (tests read it)
        self._on_connect = on_connect
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def committed(self) -> None:
        """Say that the log has grown: a checkpoint follows within ``interval``."""
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stopping.is_set():
                    self._thread = threading.Thread(
                        target=self._run, name="palaestra-checkpoint", daemon=True
                    )
                    self._thread.start()
        self._due.set()

    def committed_on(self, _connection: Any) -> None:
        """:meth:`committed`, as an engine's ``commit`` event listener: it runs before the
        commit itself, which it must never stop."""
        try:
            self.committed()
        except Exception:  # e.g. no thread can be started: the safety net holds
            log.exception("the checkpointer could not be started")

    def close(self, timeout: float = 10.0) -> None:
        """Stop after the checkpoint under way, if any (closing the last connection to the
        database checkpoints what is left)."""
        self._stopping.set()
        self._due.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(self.database, isolation_level=None)
        except sqlite3.Error:
            log.exception("the checkpointer cannot open the database; commits checkpoint inline")
            return
        try:
            self._on_connect(connection, None)
            while self._due.wait() and not self._stopping.wait(self.interval):
                # The commits of the last ``interval`` (which signalled just before they
                # landed) are in the log now; later ones signal again.
                self._due.clear()
                try:
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error:
                    log.exception("checkpoint failed; the next commit tries again")
        except Exception:
            log.exception("the checkpointer stopped; commits checkpoint inline")
        finally:
            connection.close()
