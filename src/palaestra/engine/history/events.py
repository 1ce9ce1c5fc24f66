"""Retention of raw agent events: archived to Parquet, then removed.

On PostgreSQL a whole day's partition is detached, archived, then dropped (no row is
deleted one by one); the few events of the default partition go as on SQLite: read in
batches by id, archived, then deleted in batches by the ids the file holds. On SQLite
the events are taken in the order they were written (by id) up to the first one still
within the window, so that a pass reads no more than one batch of what it keeps.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

import structlog
from sqlalchemy import Connection, TableClause, column, delete, select, table
from sqlalchemy.exc import DBAPIError

from palaestra.engine.history.archive import ArchiveFile
from palaestra.engine.history.passes import RetentionPass, day_label
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.models import AgentEvent
from palaestra.store.partitions import (
    DAY_S,
    DEFAULT_PARTITION,
    EVENTS,
    create_day,
    day_of,
    detach,
    detached,
    drop,
    partition_day,
    partitions,
)

__all__ = ["FILE_ROWS", "archive_loose", "create_ahead", "drop_old_partitions", "resume"]

log = structlog.get_logger(__name__)

#: Events one file holds at most when they are taken row by row (a day partition's file
#: holds the whole day, a row group per batch).
FILE_ROWS: Final = 1_000_000


def _table(name: str) -> TableClause:
    return table(name, *(column(c.name, c.type) for c in AgentEvent.__table__.columns))


def _record(row: Any) -> dict[str, Any]:
    return {
        "event_id": row.id,
        "agent_id": row.agent_id,
        "at": row.at,
        "kind": row.kind,
        "outcome": row.outcome,
        "latency_ms": row.latency_ms,
        "reason": row.reason,
        "detail": row.detail,
    }


async def _read(p: RetentionPass, source: str, after: int, below: float | None) -> list[Any]:
    events = _table(source)
    query = select(events).where(events.c.id > after)
    if below is not None:
        query = query.where(events.c.at < below)
    query = query.order_by(events.c.id).limit(p.batch)
    return await p.platform.db.query(lambda c: list(c.execute(query).all()))


async def create_ahead(p: RetentionPass) -> None:
    """Create the day partitions from today to ``retention_partitions_ahead_days`` ahead."""
    today = day_of(p.platform.clock.now())
    for ahead in range(p.platform.settings.retention_partitions_ahead_days + 1):
        day = today + ahead * DAY_S

        def work(connection: Connection, day: float = day) -> bool:
            return create_day(connection, day)

        try:
            if await p.platform.db.transact(work):
                p.report.partitions_created.append(day_label(day))
        except DBAPIError as exc:  # the table's lock was not granted in time
            p.report.deferred.append(f"partition of {day_label(day)}: {exc.orig!r}")


async def drop_old_partitions(p: RetentionPass, cut: float) -> None:
    """Detach every day partition wholly before ``cut`` (a brief lock each), then archive
    and drop each detached day: nothing writes into a detached day, so its file holds
    exactly what is dropped."""
    for part in await p.platform.db.query(partitions):
        if part.until_at > cut:
            break
        try:
            await p.platform.db.transact(partial(detach, name=part.name))
        except DBAPIError as exc:  # the table's lock was not granted in time
            p.report.deferred.append(f"detaching {part.name}: {exc.orig!r}")
            break
    for name in await p.platform.db.query(detached):
        await _archive_detached(p, name)


async def _archive_detached(p: RetentionPass, name: str) -> None:
    day = partition_day(name)
    rows = await _read(p, name, 0, None)
    archive_id = None
    count = 0
    if rows:
        stem = f"events-{day_label(day)}"
        async with ArchiveFile(p.root, ArchiveKind.AGENT_EVENTS, stem) as file:
            while rows:
                await file.write(rows, _record)
                await p.pause()
                rows = await _read(p, name, rows[-1].id, None)
            await file.close()
        count = file.rows
        archive_id = await p.log(
            ArchiveKind.AGENT_EVENTS,
            name,
            file.relative,
            first_at=day,
            until_at=day + DAY_S,
            rows=count,
        )
        p.report.events_archived += count
    await _drop(p, name, archive_id, count)


async def _drop(p: RetentionPass, name: str, archive_id: int | None, rows: int) -> None:
    await p.platform.db.transact(lambda c: drop(c, name))
    if archive_id is not None:
        await p.removed(archive_id)
    p.report.partitions_dropped.append(name)
    p.report.events_removed += rows


async def archive_loose(p: RetentionPass, cut: float) -> None:
    """Archive and delete, in batches, the events before ``cut`` that are not in a day
    partition: all of them on SQLite, the default partition's on PostgreSQL."""
    sqlite = p.platform.db.is_sqlite
    source = EVENTS if sqlite else DEFAULT_PARTITION

    async def older(after: int) -> tuple[list[Any], bool]:
        """The next batch of events before the cut, and whether it is the last."""
        rows = await _read(p, source, after, None if sqlite else cut)
        done = len(rows) < p.batch
        if sqlite:  # in the order written, up to the first event still kept
            kept = next((i for i, r in enumerate(rows) if r.at >= cut), None)
            if kept is not None:
                rows, done = rows[:kept], True
        return rows, done

    while True:
        rows, done = await older(0)
        if not rows:
            return
        first_id = rows[0].id
        first_at, last_at = float("inf"), float("-inf")
        async with ArchiveFile(p.root, ArchiveKind.AGENT_EVENTS, f"events-from-{first_id}") as file:
            while rows:
                await file.write(rows, _record)
                last_id = rows[-1].id
                first_at = min(first_at, *(r.at for r in rows))
                last_at = max(last_at, *(r.at for r in rows))
                await p.pause()
                if done or file.rows >= FILE_ROWS:
                    break
                rows, done = await older(last_id)
            await file.close()
        archive_id = await p.log(
            ArchiveKind.AGENT_EVENTS,
            source,
            file.relative,
            first_at=first_at,
            until_at=last_at,
            rows=file.rows,
            first_id=first_id,
            last_id=last_id,
        )
        p.report.events_archived += file.rows
        await _delete(p, source, first_id, last_id, last_at)
        await p.removed(archive_id)
        if done:
            return


async def _delete(
    p: RetentionPass, source: str, first_id: int, last_id: int, last_at: float
) -> None:
    """Delete, a batch at a time, the archived events: ids in [first_id, last_id], none
    later than the file's latest (an event written meanwhile is never taken)."""
    events = _table(source)
    ids = (
        select(events.c.id)
        .where(events.c.id >= first_id, events.c.id <= last_id, events.c.at <= last_at)
        .order_by(events.c.id)
        .limit(p.batch)
    )
    statement = delete(events).where(events.c.id.in_(ids.scalar_subquery()))
    while True:
        gone = await p.platform.db.transact(lambda c: c.execute(statement).rowcount)
        p.report.events_removed += gone
        if gone < p.batch:
            return
        await p.pause()


async def resume(p: RetentionPass, entry: HistoryArchive) -> None:
    """Finish removing the events of a file logged by a pass that was cut short."""
    if entry.source.startswith(EVENTS + "_p"):  # a detached day, archived, maybe not dropped
        await _drop(p, entry.source, entry.id, entry.rows)
        return
    await _delete(p, entry.source, entry.first_id or 0, entry.last_id or 0, entry.until_at)
    await p.removed(entry.id)
