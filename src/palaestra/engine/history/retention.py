"""The retention job: one pass archives what has outlived its window, then removes it.

A pass, run by one runner at a time (:class:`~palaestra.engine.history.lease.Lease`):

1. on PostgreSQL, creates the event partitions of the coming days;
2. finishes the removals a pass cut short left (files logged, rows not yet removed);
3. archives and removes raw agent events older than ``retention_events_days`` (whole
   days), but never events the roll-ups have not summarised yet: the cutoff is
   ``min(now - window, rolled_up_until)``; and deletes the hourly roll-up rows of the
   days before that cutoff, whose daily rows hold the same sums;
4. archives and clears the payloads and outputs of tasks of runs finished more than
   ``retention_task_bodies_days`` ago (whole days);
5. archives and removes the receipts of async completions received more than
   ``retention_receipts_days`` ago (whole days), and deletes the browser sessions
   expired more than ``retention_web_sessions_days`` ago (:mod:`.receipts`,
   :mod:`.sessions`);
6. on SQLite in incremental auto-vacuum mode, gives the freed pages back, in steps.

Every read, write and removal is one short transaction of ``retention_batch_rows`` rows
at most, with ``retention_pause_s`` between two. Turns of cage matches are kept whole:
the judge re-reads them (``palaestra rejudge``) and the dataset carries them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, cast

from sqlalchemy import Connection, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.history import bodies, events, receipts, sessions
from palaestra.engine.history.lease import Lease, LeaseLost
from palaestra.engine.history.passes import PassReport, PassStopped, RetentionPass
from palaestra.engine.history.rollups import summarised_until
from palaestra.platform import Platform
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.partitions import DAY_S, day_of, is_partitioned
from palaestra.store.rollups import prune_hour

__all__ = ["Retention", "RolledUpUntil", "build_retention", "no_roll_up_limit"]

#: When the roll-ups have summarised raw events up to (unix seconds), or None when
#: nothing holds raw events back; read at the start of each pass.
RolledUpUntil = Callable[[AsyncSession], Awaitable[float | None]]
#: Free pages given back per step of SQLite's incremental vacuum (4 MiB of 4 KiB pages).
_VACUUM_PAGES: Final = 1024


async def no_roll_up_limit(_session: AsyncSession) -> float | None:
    """Nothing waits on raw events: they go once their window has passed."""
    return None


def build_retention(platform: Platform, stop: asyncio.Event | None = None) -> Retention:
    """The retention job as every process runs it (the embedded server's loop, the
    workers' ``retention`` job, ``palaestra retention --run-now``): the one place where
    what bounds it (the roll-ups' watermark, :data:`RolledUpUntil`) is given to it."""
    return Retention(platform, rolled_up_until=summarised_until, stop=stop)


class Retention:
    """The retention job over ``platform``.

    ``rolled_up_until`` bounds what may go: raw events the roll-ups have not summarised
    are kept whatever their age. The processes that build the job (the embedded server's
    loop, the workers' ``retention`` job, ``palaestra retention --run-now``) pass the
    roll-ups' watermark here; by default nothing holds events back.
    """

    def __init__(
        self,
        platform: Platform,
        *,
        rolled_up_until: RolledUpUntil = no_roll_up_limit,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        stop: asyncio.Event | None = None,
    ) -> None:
        self.platform = platform
        self.stop = stop
        self.rolled_up_until = rolled_up_until
        self.sleep = sleep
        self.lease = Lease(platform)

    async def events_cutoff(self) -> float | None:
        """Events before this time (a day's start) go in this pass; None: none go."""
        days = self.platform.settings.retention_events_days
        if days == 0:
            return None
        cut = self.platform.clock.now() - days * DAY_S
        async with self.platform.db.session() as session:
            summarised = await self.rolled_up_until(session)
        if summarised is not None:
            cut = min(cut, summarised)
        return day_of(cut)

    def task_bodies_cutoff(self) -> float | None:
        """Bodies of tasks of runs finished before this time go in this pass; None: none."""
        return self._days_cutoff(self.platform.settings.retention_task_bodies_days)

    def receipts_cutoff(self) -> float | None:
        """Receipts received before this time (a day's start) go in this pass; None: none."""
        return self._days_cutoff(self.platform.settings.retention_receipts_days)

    def sessions_cutoff(self) -> float | None:
        """Sessions expired before this time are deleted in this pass; None: none are."""
        days = self.platform.settings.retention_web_sessions_days
        return None if days == 0 else self.platform.clock.now() - days * DAY_S

    def _days_cutoff(self, days: int) -> float | None:
        return None if days == 0 else day_of(self.platform.clock.now() - days * DAY_S)

    async def run_once(self) -> PassReport:
        """One pass; a pass that finds the lease held by another runner does nothing."""
        report = PassReport()
        if not await self.lease.take():
            report.skipped = True
            return report
        work = RetentionPass(self.platform, self.lease, report, self.sleep, self.stop)
        lost = False
        try:
            await self._pass(work)
        except LeaseLost:
            lost = True
            report.deferred.append("another runner took over the lease")
        except PassStopped:
            report.deferred.append("stopped: the process is shutting down")
        finally:
            if not lost:  # also after a failure: the next pass need not wait for it to run out
                await self.lease.release()
        return report

    async def _pass(self, work: RetentionPass) -> None:
        db = self.platform.db
        partitioned = not db.is_sqlite and await db.query(is_partitioned)
        if partitioned:
            await events.create_ahead(work)
        await self._finish_removals(work)
        cut = await self.events_cutoff()
        if cut is not None:
            if partitioned:
                await events.drop_old_partitions(work, cut)
            await events.archive_loose(work, cut)
            await self._prune_rollup_hours(work, cut)
        bodies_cut = self.task_bodies_cutoff()
        if bodies_cut is not None:
            await bodies.archive_task_bodies(work, bodies_cut)
        receipts_cut = self.receipts_cutoff()
        if receipts_cut is not None:
            await receipts.archive_receipts(work, receipts_cut)
        sessions_cut = self.sessions_cutoff()
        if sessions_cut is not None:
            await sessions.delete_expired_sessions(work, sessions_cut)
        if db.is_sqlite:
            await self._vacuum(work)

    async def _prune_rollup_hours(self, work: RetentionPass, cut: float) -> None:
        """The hourly roll-up rows of the days before ``cut``, an hour per transaction."""
        while await self.platform.db.transact(partial(prune_hour, before=cut)):
            work.report.rollup_hours_pruned += 1
            await work.pause()

    async def _finish_removals(self, work: RetentionPass) -> None:
        query = select(HistoryArchive).where(HistoryArchive.removed_at.is_(None))
        async with self.platform.db.session() as session:
            unfinished = list(await session.scalars(query.order_by(HistoryArchive.id)))
        for entry in unfinished:
            if entry.kind == ArchiveKind.TASK_BODIES.value:
                await bodies.clear_day(work, entry.first_at)
                await work.removed(entry.id)
            elif entry.kind == ArchiveKind.COMPLETION_RECEIPTS.value:
                await receipts.remove_receipts_of_day(work, entry.first_at)
                await work.removed(entry.id)
            else:
                await events.resume(work, entry)

    async def _vacuum(self, work: RetentionPass) -> None:
        """Give SQLite's free pages back to the file system, a few at a time (incremental
        auto-vacuum only; see ``auto_vacuum_mode``)."""
        if await self.platform.db.query(auto_vacuum_mode) != "incremental":
            return
        while True:

            def step(connection: Connection) -> int:
                before = int(connection.exec_driver_sql("PRAGMA freelist_count").scalar_one())
                # Run to completion: the sqlite3 module steps a statement without result
                # columns once, which frees a single page; a script runs each statement
                # through (after committing the empty transaction the writer opened).
                raw = cast(sqlite3.Connection, connection.connection.driver_connection)
                raw.executescript(f"PRAGMA incremental_vacuum({_VACUUM_PAGES});")
                after = int(connection.exec_driver_sql("PRAGMA freelist_count").scalar_one())
                return before - after

            freed = await self.platform.db.transact(step)
            work.report.pages_vacuumed += freed
            if freed < _VACUUM_PAGES:
                return
            await work.pause()


def auto_vacuum_mode(connection: Connection) -> str:
    """SQLite's auto-vacuum mode: none, full or incremental."""
    mode = int(connection.execute(text("PRAGMA auto_vacuum")).scalar_one())
    return {0: "none", 1: "full", 2: "incremental"}.get(mode, str(mode))
