"""Roll-ups of closed hours, computed from the raw rows by a job, never by the arena's writes.

An hour *closes* once it is older than a grace period (``Settings.rollup_grace_s``) and
no run or match still open was created in it or before it: by then every event of the
hour has been written (the rows are written with their own time at most a task's or a
turn's deadline late), and every task and match of the hour is final (a task's status and
contribution are settled when its run ends; a match's outcome when it is scored). The job
(:func:`roll_up`) recomputes each newly closed hour from its raw rows, in a transaction of
its own (delete, then insert the hour's aggregates: redoing it changes nothing), then the
day once its last hour closed (from the day's hours), and advances the watermark
(:func:`rolled_up_until`) past it. No arena transaction touches a roll-up row: the job's
transactions are the only writers, and on PostgreSQL they take one advisory lock first,
so two runners take turns and the second finds the hour done.

Reads add the roll-ups before the watermark to the raw rows after it (``store.history``),
so they are exact whenever they run. A rejudged match marks its hour stale
(:func:`mark_stale`); the job recomputes stale hours that are still within the raw rows'
retention window.
"""

# The SQL here is built from this module's constants only; values are bound parameters.
# ruff: noqa: S608

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import partial
from typing import Final

from sqlalchemy import Connection, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.rules.cage.matchflow import OPEN_MATCH_STATUSES
from palaestra.rules.runs.runflow import RunStatus
from palaestra.store.db import Database
from palaestra.store.models import Match, Meta, Run
from palaestra.store.rollup_models import DAY, HOUR
from palaestra.store.rollup_sql import TABLES, day_sql, hour_sql

__all__ = [
    "DEFAULT_GRACE_S",
    "PRUNED_KEY",
    "UNTIL_KEY",
    "backfill",
    "backfill_table",
    "close_target",
    "mark_stale",
    "prune_hour",
    "recompute_day",
    "recompute_hour",
    "recompute_marked",
    "recompute_stale",
    "roll_up",
    "rolled_up_until",
    "until_of",
]

#: The ``meta`` row holding the watermark: unix seconds, a whole hour; every hour before
#: it is rolled up, none after it.
UNTIL_KEY: Final = "rollups_until"
#: The ``meta`` row saying before when the hourly rows were deleted (:func:`prune_hour`):
#: whole days, summed in their day rows, never recomputed.
PRUNED_KEY: Final = "rollup_hours_pruned_until"
#: The grace period after which an hour closes, by default (``Settings.rollup_grace_s``).
DEFAULT_GRACE_S: Final = 3600.0
#: The advisory lock every roll-up transaction takes first on PostgreSQL (any constant
#: unique to this job).
_LOCK: Final = 0x70A1_0112


def _lock(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK})


def _meta_float(connection: Connection, key: str) -> float | None:
    value = connection.scalar(select(Meta.value).where(Meta.key == key))
    return None if value is None else float(value)


def until_of(connection: Connection) -> float | None:
    """The watermark, or ``None`` before anything was rolled up."""
    value = connection.scalar(select(Meta.value).where(Meta.key == UNTIL_KEY))
    return None if value is None else float(value)


def _set_until(connection: Connection, until: float, *, exists: bool) -> None:
    _set_meta(connection, UNTIL_KEY, until, exists=exists)


def _set_meta(connection: Connection, key: str, value: float, *, exists: bool) -> None:
    statement = (
        "UPDATE meta SET value = :value WHERE key = :key"
        if exists
        else "INSERT INTO meta (key, value) VALUES (:key, :value)"
    )
    connection.execute(text(statement), {"key": key, "value": str(int(value))})


async def rolled_up_until(session: AsyncSession) -> datetime:
    """Until when the roll-ups are closed (UTC): every raw row before it is summed in them,
    so retention may prune the raw rows before it and never one after it. Before anything
    was rolled up, the epoch (nothing may be pruned)."""
    value = await session.scalar(select(Meta.value).where(Meta.key == UNTIL_KEY))
    return datetime.fromtimestamp(float(value) if value is not None else 0.0, UTC)


def close_target(connection: Connection, now: float, grace_s: float) -> float:
    """The hour before which everything is closed: ``grace_s`` before ``now``, and no later
    than the hour of the oldest run or match still open."""
    bound = now - grace_s
    open_runs = connection.scalar(
        select(func.min(Run.created_at)).where(Run.status == RunStatus.RUNNING)
    )
    open_matches = connection.scalar(
        select(func.min(Match.created_at)).where(Match.status.in_(OPEN_MATCH_STATUSES))
    )
    for oldest in (open_runs, open_matches):
        if oldest is not None:
            bound = min(bound, oldest)
    return math.floor(bound / HOUR) * HOUR


def _first_hour(connection: Connection) -> float | None:
    """The hour of the oldest raw row, where rolling up starts on a new database."""
    oldest = [
        connection.scalar(text(f"SELECT min({column}) FROM {table}"))
        for table, column in (("agent_events", "at"), ("tasks", "created_at"))
    ] + [connection.scalar(select(func.min(model.created_at))) for model in (Match, Run)]
    found = [value for value in oldest if value is not None]
    return math.floor(min(found) / HOUR) * HOUR if found else None


def recompute_hour(connection: Connection, start: int, tables: Iterable[str] = TABLES) -> None:
    """The hour from ``start`` summed again from its raw rows, in ``tables``; and its day,
    when the day has no hour left open (``start`` is before the watermark's day)."""
    for table in tables:
        connection.execute(
            text(f"DELETE FROM {table} WHERE span = {HOUR} AND start = :lo"), {"lo": start}
        )
        for statement in hour_sql(table, connection.dialect.name):
            connection.execute(
                text(statement), {"start": start, "lo": float(start), "hi": float(start + HOUR)}
            )


def recompute_day(connection: Connection, day: int, tables: Iterable[str] = TABLES) -> None:
    """The day from ``day`` summed again from its hours (all of them closed)."""
    for table in tables:
        connection.execute(
            text(f"DELETE FROM {table} WHERE span = {DAY} AND start = :day"), {"day": day}
        )
        connection.execute(
            text(day_sql(table, connection.dialect.name)), {"day": day, "end": day + DAY}
        )


def _close_next(connection: Connection, target: float, tables: Iterable[str] = TABLES) -> bool:
    """Close the next hour before ``target`` (one transaction); ``False`` when none is left."""
    _lock(connection)
    until = until_of(connection)
    exists = until is not None
    if until is None:
        until = _first_hour(connection)
        if until is None:  # no history yet: the first row's hour will be the first closed
            return False
    if until >= target:
        return False
    start = int(until)
    recompute_hour(connection, start, tables)
    if (start + HOUR) % DAY == 0:
        recompute_day(connection, start + HOUR - DAY, tables)
    _set_until(connection, start + HOUR, exists=exists)
    return True


def recompute_stale(connection: Connection, now: float, keep_raw_s: float | None) -> int:
    """Recompute the match hours marked stale before the watermark (one transaction)."""
    _lock(connection)
    until = until_of(connection) or 0.0
    pruned = _meta_float(connection, PRUNED_KEY) or 0.0
    # Taken out first: a mark written while this runs survives for the next job, whose
    # statements will see the change that wrote it.
    starts = [
        int(start)
        for (start,) in connection.execute(
            text("DELETE FROM rollup_stale WHERE start < :until RETURNING start"),
            {"until": until},
        )
    ]
    days = set()
    for start in sorted(starts):
        # Retention guard: an hour older than the raw rows' retention window (``keep_raw_s``
        # before ``now``) may have lost its raw rows to the archive; recomputing it would
        # replace a roll-up kept for ever with the sum of what is left. It keeps its sums.
        if keep_raw_s is not None and start < now - keep_raw_s:
            continue
        if start < pruned:  # its day's other hours are gone: its day row keeps its sums
            continue
        recompute_hour(connection, start, ("match_rollups",))
        day = start - start % DAY
        if day + DAY <= until:
            days.add(day)
    for day in sorted(days):
        recompute_day(connection, day, ("match_rollups",))
    return len(starts)


async def mark_stale(session: AsyncSession, created_at: Iterable[float]) -> None:
    """Mark the hours of matches created at ``created_at`` for the job to recompute (in the
    caller's transaction: the mark commits with the change)."""
    starts = sorted({int(at // HOUR) * HOUR for at in created_at})
    for start in starts:  # in order, so two writers take the keys in one order
        await session.execute(
            text("INSERT INTO rollup_stale (start) VALUES (:start) ON CONFLICT DO NOTHING"),
            {"start": start},
        )


async def roll_up(
    db: Database,
    now: float,
    *,
    grace_s: float,
    keep_raw_s: float | None = None,
    max_hours: int | None = 48,
) -> int:
    """Close the hours that closed by ``now`` (at most ``max_hours``, each in a transaction
    of its own), then recompute the stale ones; how many hours were closed."""
    target = await db.query(partial(close_target, now=now, grace_s=grace_s))
    closed = 0
    while max_hours is None or closed < max_hours:
        if not await db.transact(partial(_close_next, target=target)):
            break
        closed += 1
    await recompute_marked(db, now, keep_raw_s)
    return closed


async def recompute_marked(db: Database, now: float, keep_raw_s: float | None = None) -> int:
    """Recompute the hours marked stale, in a transaction of its own (right after the one
    that marked them: a rejudged outcome reaches the roll-ups at once, not at the next job)."""
    return await db.transact(partial(recompute_stale, now=now, keep_raw_s=keep_raw_s))


def prune_hour(connection: Connection, before: float) -> bool:
    """Delete the oldest hour's rows of every roll-up table if that hour's day ended before
    ``before`` and before the watermark's day (one transaction); ``False`` when none is left.

    The day's rows hold the same sums, and reads take whole days from them
    (``store.history``). Call it only for days older than the raw events' retention
    window: the job recomputes no stale hour of those (:func:`recompute_stale`), which is
    also told that hours before the pruned bound have no siblings left to sum.
    """
    _lock(connection)
    until = until_of(connection) or 0.0
    bound = min(math.floor(before / DAY), math.floor(until / DAY)) * DAY
    oldest = [
        connection.scalar(text(f"SELECT min(start) FROM {table} WHERE span = {HOUR}"))
        for table in TABLES
    ]
    found = [int(start) for start in oldest if start is not None and start < bound]
    pruned = _meta_float(connection, PRUNED_KEY)
    if not found:
        if pruned is None or pruned < bound:
            _set_meta(connection, PRUNED_KEY, bound, exists=pruned is not None)
        return False
    start = min(found)
    for table in TABLES:
        connection.execute(
            text(f"DELETE FROM {table} WHERE span = {HOUR} AND start = :start"), {"start": start}
        )
    # This hour's day is going, hour by hour, and every day before it is gone: a stale
    # mark in them is never recomputed (its day's row would lose the other hours' sums).
    day_end = (start // DAY + 1) * DAY
    if pruned is None or pruned < day_end:
        _set_meta(connection, PRUNED_KEY, day_end, exists=pruned is not None)
    return True


def backfill(
    connection: Connection, now: float, grace_s: float, tables: Iterable[str] = TABLES
) -> int:
    """Every closed hour rolled up into ``tables``, in one connection's transaction
    (migration 0014): the hours one by one, each a bounded range of the raw rows' time
    indexes."""
    if connection.dialect.name == "postgresql":
        # Statistics as the rows stand: a table grown in bulk since its last analysis would
        # have each hour's range read by a sequential scan (seconds an hour over 1M rows).
        connection.execute(text("ANALYZE agent_events, tasks, matches"))
    target = close_target(connection, now, grace_s)
    closed = 0
    while _close_next(connection, target, tables):
        closed += 1
    return closed


def backfill_table(connection: Connection, table: str) -> int:
    """A roll-up table added after the watermark moved: every hour and day before the
    watermark summed into it from the raw rows (the other tables untouched); how many
    hours."""
    until = until_of(connection)
    first = _first_hour(connection)
    if until is None or first is None:
        return 0
    hours = range(int(first), int(until), HOUR)
    for start in hours:
        recompute_hour(connection, start, (table,))
        if (start + HOUR) % DAY == 0:
            recompute_day(connection, start + HOUR - DAY, (table,))
    return len(hours)
