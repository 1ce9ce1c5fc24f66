"""What is kept, what is archived and when: the state of history retention, read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, func, make_url, select, text

from palaestra.engine.history.retention import auto_vacuum_mode
from palaestra.platform import Platform
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.models import AgentEvent
from palaestra.store.partitions import (
    DAY_S,
    DEFAULT_PARTITION,
    Partition,
    day_of,
    is_partitioned,
    partitions,
)

__all__ = ["KindStatus", "RetentionStatus", "retention_status"]

_RECENT = 5


@dataclass(frozen=True, slots=True)
class KindStatus:
    """One kind of history: its window, and what its archive holds."""

    kind: ArchiveKind
    window_days: int  # 0: kept for ever
    #: What is older than this (a day's start) goes at the next pass; None: nothing goes.
    next_cut: float | None
    files: int
    rows: int
    first_at: float | None
    last_at: float | None
    last_archived_at: float | None
    #: Files written whose rows are not all removed yet (a pass was cut short).
    unfinished: int


@dataclass(frozen=True, slots=True)
class RetentionStatus:
    store: str  # sqlite | postgresql
    archive_dir: Path
    interval_s: float
    kinds: list[KindStatus]
    web_sessions_days: int  # after expiry; 0: kept for ever
    leaderboard_snapshots: int  # kept per arena
    oldest_event_at: float | None
    partitions: list[Partition]
    default_partition_rows: int | None
    auto_vacuum: str | None  # SQLite's mode
    database_file: str | None  # SQLite's
    recent: list[HistoryArchive]


async def retention_status(platform: Platform) -> RetentionStatus:
    settings = platform.settings
    now = platform.clock.now()
    windows = {
        ArchiveKind.AGENT_EVENTS: settings.retention_events_days,
        ArchiveKind.TASK_BODIES: settings.retention_task_bodies_days,
        ArchiveKind.COMPLETION_RECEIPTS: settings.retention_receipts_days,
    }
    kinds = []
    async with platform.db.session() as session:
        for kind, days in windows.items():
            row = (
                await session.execute(
                    select(
                        func.count(),
                        func.coalesce(func.sum(HistoryArchive.rows), 0),
                        func.min(HistoryArchive.first_at),
                        func.max(HistoryArchive.until_at),
                        func.max(HistoryArchive.archived_at),
                        func.count().filter(HistoryArchive.removed_at.is_(None)),
                    ).where(HistoryArchive.kind == kind.value)
                )
            ).one()
            cut = day_of(now - days * DAY_S) if days else None
            kinds.append(KindStatus(kind, days, cut, row[0], int(row[1]), *row[2:5], row[5]))
        recent = list(
            await session.scalars(
                select(HistoryArchive).order_by(HistoryArchive.id.desc()).limit(_RECENT)
            )
        )
        # The first event written still kept (by id: no index orders events by time alone).
        oldest = await session.scalar(select(AgentEvent.at).order_by(AgentEvent.id).limit(1))
    store = "sqlite" if platform.db.is_sqlite else "postgresql"
    day_partitions, strays, vacuum = await platform.db.query(_store_facts)
    return RetentionStatus(
        store=store,
        archive_dir=settings.effective_archive_dir,
        interval_s=settings.retention_interval_s,
        kinds=kinds,
        web_sessions_days=settings.retention_web_sessions_days,
        leaderboard_snapshots=settings.retention_leaderboard_snapshots,
        oldest_event_at=oldest,
        recent=recent,
        database_file=make_url(platform.db.url).database if platform.db.is_sqlite else None,
        partitions=day_partitions,
        default_partition_rows=strays,
        auto_vacuum=vacuum,
    )


def _store_facts(connection: Connection) -> tuple[list[Partition], int | None, str | None]:
    """The day partitions, the default partition's events, SQLite's auto-vacuum mode."""
    if connection.dialect.name == "sqlite":
        return [], None, auto_vacuum_mode(connection)
    if not is_partitioned(connection):
        return [], None, None
    strays = connection.execute(text(f"SELECT count(*) FROM {DEFAULT_PARTITION}")).scalar_one()  # noqa: S608
    return partitions(connection), int(strays), None
