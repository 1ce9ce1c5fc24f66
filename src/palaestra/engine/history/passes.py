"""What one retention pass shares between its steps: the store, the archive folder, the
batch size, the pause between batches, the lease, and the report of what it did."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, insert, update

from palaestra.engine.history.lease import Lease
from palaestra.errors import PalaestraError
from palaestra.platform import Platform
from palaestra.store.archives import ArchiveKind, HistoryArchive

__all__ = ["PassReport", "PassStopped", "RetentionPass", "day_label"]


class PassStopped(PalaestraError):
    """The process is stopping: the pass ends between two batches, to resume next time."""


@dataclass
class PassReport:
    """What a pass did; ``skipped``: another runner held the lease, so it did nothing."""

    skipped: bool = False
    events_archived: int = 0
    events_removed: int = 0
    task_bodies_archived: int = 0
    task_bodies_cleared: int = 0
    receipts_archived: int = 0
    receipts_removed: int = 0
    web_sessions_deleted: int = 0
    rollup_hours_pruned: int = 0
    partitions_created: list[str] = field(default_factory=list)
    partitions_dropped: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: Things left for the next pass (a lock not granted in time, a partition that changed).
    deferred: list[str] = field(default_factory=list)
    pages_vacuumed: int = 0


def day_label(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


@dataclass
class RetentionPass:
    platform: Platform
    lease: Lease
    report: PassReport
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    stop: asyncio.Event | None = None

    @property
    def root(self) -> Path:
        return self.platform.settings.effective_archive_dir

    @property
    def batch(self) -> int:
        return self.platform.settings.retention_batch_rows

    async def pause(self) -> None:
        """Between two batches: leave the database to the arena, keep the lease."""
        await self.sleep(self.platform.settings.retention_pause_s)
        if self.stop is not None and self.stop.is_set():
            raise PassStopped
        await self.lease.keep()

    async def log(self, kind: ArchiveKind, source: str, file: str, **span: Any) -> int:
        """Log a complete archive file; return its id."""
        values = {
            "kind": kind.value,
            "source": source,
            "file": file,
            "archived_at": self.platform.clock.now(),
            **span,
        }

        def work(connection: Connection) -> int:
            made = connection.execute(
                insert(HistoryArchive).values(**values).returning(HistoryArchive.id)
            )
            return int(made.scalar_one())

        self.report.files.append(file)
        return await self.platform.db.transact(work)

    async def removed(self, archive_id: int) -> None:
        now = self.platform.clock.now()

        def work(connection: Connection) -> None:
            connection.execute(
                update(HistoryArchive).where(HistoryArchive.id == archive_id).values(removed_at=now)
            )

        await self.platform.db.transact(work)
