"""Retention of the receipts of accepted async completions: archived, then removed.

A receipt has history value (a task's page shows the callback: when, with which
signature), so it is archived to Parquet by the day it was received, then removed, as
the events are. It guards against a replay only while a signature's timestamp is fresh
(``protocol.signing.REPLAY_WINDOW_SECONDS``, minutes): a completion replayed later is
refused by its stale timestamp whether or not its receipt is kept.

Each read, write and removal is one short transaction of ``retention_batch_rows`` rows at
most, through ``ix_completion_receipts_received``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import Connection, delete, func, select, tuple_

from palaestra.engine.history.archive import ArchiveFile
from palaestra.engine.history.passes import RetentionPass, day_label
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.models import CompletionReceipt
from palaestra.store.partitions import DAY_S, day_of

__all__ = ["archive_receipts", "remove_receipts_of_day"]

_KIND = ArchiveKind.COMPLETION_RECEIPTS


def _of_day(day: float) -> Any:
    return (CompletionReceipt.received_at >= day, CompletionReceipt.received_at < day + DAY_S)


async def archive_receipts(p: RetentionPass, cut: float) -> None:
    """Archive, then remove, the receipts received on a day before ``cut``."""
    cut = day_of(cut)
    async with p.platform.db.session() as session:
        done = await session.scalar(
            select(func.max(HistoryArchive.until_at)).where(HistoryArchive.kind == _KIND.value)
        )
    since = done if done is not None else float("-inf")
    while True:
        async with p.platform.db.session() as session:
            first = await session.scalar(
                select(func.min(CompletionReceipt.received_at)).where(
                    CompletionReceipt.received_at >= since, CompletionReceipt.received_at < cut
                )
            )
        if first is None:
            return
        day = day_of(first)
        await _archive_day(p, day)
        since = day + DAY_S


_ORDER = (CompletionReceipt.received_at, CompletionReceipt.task_id, CompletionReceipt.signature)


def _batch(connection: Connection, day: float, after: Any, limit: int) -> list[Any]:
    """The next receipts of ``day`` after ``after`` (a row of :data:`_ORDER`), in order."""
    query = select(*_ORDER).where(*_of_day(day)).order_by(*_ORDER).limit(limit)
    if after is not None:
        query = query.where(tuple_(*_ORDER) > tuple_(*after))
    return list(connection.execute(query).all())


async def _archive_day(p: RetentionPass, day: float) -> None:
    async with ArchiveFile(p.root, _KIND, f"completion-receipts-{day_label(day)}") as file:
        after = None
        while rows := await p.platform.db.query(
            partial(_batch, day=day, after=after, limit=p.batch)
        ):
            await file.write(
                [{"task_id": t, "signature": s, "received_at": at} for at, t, s in rows]
            )
            after = tuple(rows[-1])
            await p.pause()
        await file.close()
    archive_id = await p.log(
        _KIND, "completion_receipts", file.relative, first_at=day, until_at=day + DAY_S,
        rows=file.rows,
    )  # fmt: skip
    p.report.receipts_archived += file.rows
    await remove_receipts_of_day(p, day)
    await p.removed(archive_id)


async def remove_receipts_of_day(p: RetentionPass, day: float) -> None:
    """Remove the receipts received on ``day``, a batch per transaction (again and again
    harmlessly: a pass cut short resumes it)."""
    while True:
        removed = await p.platform.db.transact(partial(_remove_batch, day=day, most=p.batch))
        p.report.receipts_removed += removed
        if removed < p.batch:
            return
        await p.pause()


def _remove_batch(connection: Connection, *, day: float, most: int) -> int:
    """Remove the next ``most`` receipts of ``day`` (and a task's other receipts of that day
    with them); how many were removed. They are named by task, the primary key's first
    column, through a subquery, as expired sessions are: PostgreSQL read a list of (task,
    signature) pairs as one OR per pair, rechecked on every row it fetched (seconds per
    batch of thousands), and a list of bound values is limited on SQLite."""
    tasks = select(CompletionReceipt.task_id).where(*_of_day(day)).limit(most)
    gone = connection.execute(
        delete(CompletionReceipt).where(
            CompletionReceipt.task_id.in_(tasks.scalar_subquery()), *_of_day(day)
        )
    )
    return int(gone.rowcount)
