"""Retention of tasks' payloads, signed request headers and outputs: archived by the day
their run finished, then cleared. The task rows stay (runs, reports and pages need them);
where a body is gone, the archive log says when it went and in which file
(:func:`archived_bodies`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, null, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.export.records import FINISHED_RUNS, task_record
from palaestra.engine.history.archive import ArchiveFile
from palaestra.engine.history.passes import RetentionPass, day_label
from palaestra.platform import Platform
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.models import Agent, Run, Task
from palaestra.store.partitions import DAY_S, day_of

__all__ = [
    "ArchivedBodies",
    "archive_task_bodies",
    "archived_bodies",
    "clear_day",
    "task_bodies_archive",
]

_RUNS_PER_BATCH = 100


@dataclass(frozen=True, slots=True)
class ArchivedBodies:
    """Where a run's task payloads and outputs went, and when."""

    archived_at: float
    file: str  # relative to the archive folder

    @property
    def words(self) -> str:
        return f"archived on {day_label(self.archived_at)}, in {self.file}"


async def task_bodies_archive(platform: Platform, run_id: str) -> ArchivedBodies | None:
    """Where the bodies of the tasks of run ``run_id`` went, if retention archived them."""
    async with platform.db.session() as session:
        finished = await session.scalar(select(Run.finished_at).where(Run.id == run_id))
        entry = await archived_bodies(session, finished)
    return None if entry is None else ArchivedBodies(entry.archived_at, entry.file)


async def archived_bodies(
    session: AsyncSession, finished_at: float | None
) -> HistoryArchive | None:
    """The archive holding the task bodies of a run that finished at ``finished_at``, if
    they were archived (and cleared)."""
    if finished_at is None:
        return None
    query = (
        select(HistoryArchive)
        .where(
            HistoryArchive.kind == ArchiveKind.TASK_BODIES.value,
            HistoryArchive.first_at <= finished_at,
            HistoryArchive.until_at > finished_at,
        )
        .limit(1)
    )
    return (await session.scalars(query)).first()


def _finished_between(first_at: float, until_at: float) -> Any:
    return select(Run.id, Run.finished_at).where(
        Run.status.in_(FINISHED_RUNS), Run.finished_at >= first_at, Run.finished_at < until_at
    )


async def _runs(p: RetentionPass, day: float, after: tuple[float, str] | None) -> list[Any]:
    query = _finished_between(day, day + DAY_S)
    if after is not None:
        query = query.where(
            or_(Run.finished_at > after[0], and_(Run.finished_at == after[0], Run.id > after[1]))
        )
    query = query.order_by(Run.finished_at, Run.id).limit(_RUNS_PER_BATCH)
    return await p.platform.db.query(lambda c: list(c.execute(query).all()))


async def archive_task_bodies(p: RetentionPass, cut: float) -> None:
    """Archive, then clear, the bodies of the tasks of runs finished on a day before ``cut``."""
    cut = day_of(cut)
    async with p.platform.db.session() as session:
        done = await session.scalar(
            select(func.max(HistoryArchive.until_at)).where(
                HistoryArchive.kind == ArchiveKind.TASK_BODIES.value
            )
        )
    since = done if done is not None else float("-inf")
    while True:
        async with p.platform.db.session() as session:
            first = await session.scalar(
                select(func.min(Run.finished_at)).where(
                    Run.status.in_(FINISHED_RUNS), Run.finished_at >= since, Run.finished_at < cut
                )
            )
        if first is None:
            return
        day = day_of(first)
        await _archive_day(p, day)
        since = day + DAY_S


async def _archive_day(p: RetentionPass, day: float) -> None:
    stem = f"task-bodies-{day_label(day)}"
    async with ArchiveFile(p.root, ArchiveKind.TASK_BODIES, stem) as file:
        after = None
        while runs := await _runs(p, day, after):
            await file.write(await _records(p, {r.id: r.finished_at for r in runs}))
            after = (runs[-1].finished_at, runs[-1].id)
            await p.pause()
        await file.close()
    archive_id = await p.log(
        ArchiveKind.TASK_BODIES,
        "tasks",
        file.relative,
        first_at=day,
        until_at=day + DAY_S,
        rows=file.rows,
    )
    p.report.task_bodies_archived += file.rows
    await clear_day(p, day)
    await p.removed(archive_id)


async def _records(p: RetentionPass, finished: dict[str, float]) -> list[dict[str, Any]]:
    """The archive's rows of the tasks of the runs ``finished`` (run id -> finished at)."""
    async with p.platform.db.session() as session:
        tasks = list(
            await session.scalars(
                select(Task)
                .where(Task.run_id.in_(list(finished)))
                .order_by(Task.run_id, Task.created_at, Task.phase, Task.slot, Task.attempt)
            )
        )
        agents = {t.agent_id for t in tasks if t.agent_id}
        roles: dict[str, str | None] = {}
        if agents:
            found = await session.execute(select(Agent.id, Agent.role).where(Agent.id.in_(agents)))
            roles = {r.id: r.role for r in found}
    return [
        {"run_id": t.run_id, "run_finished_at": finished[t.run_id]}
        | task_record(t, roles.get(t.agent_id) if t.agent_id else None)
        | {"request_headers": t.request_headers}
        for t in tasks
    ]


async def clear_day(p: RetentionPass, day: float) -> None:
    """Clear the payloads, signed headers and outputs of the tasks of the runs finished on
    ``day``, a batch of runs per transaction (again and again harmlessly: a pass cut short
    resumes it)."""
    after = None
    while runs := await _runs(p, day, after):
        ids = [r.id for r in runs]

        def work(connection: Connection, ids: list[str] = ids) -> int:
            cleared = connection.execute(
                update(Task)
                .where(
                    Task.run_id.in_(ids),
                    or_(
                        Task.payload.is_not(None),
                        Task.request_headers.is_not(None),
                        Task.output.is_not(None),
                    ),
                )
                .values(payload=null(), request_headers=null(), output=null())
            )
            return int(cleared.rowcount)

        p.report.task_bodies_cleared += await p.platform.db.transact(work)
        after = (runs[-1].finished_at, runs[-1].id)
        await p.pause()
