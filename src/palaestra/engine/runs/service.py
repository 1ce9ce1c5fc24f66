"""edgearena runs for owners and the admin: start one, list them, read one and its tasks.

Owners see and start their own runs; the admin sees all. A run of another
owner is answered as not found, as agents are.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from functools import partial
from typing import Any, Final, cast

from sqlalchemy import JSON, Table, select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.accounts import Caller
from palaestra.engine.batcher import Batcher
from palaestra.engine.runs.reading import RunDetail, RunRead, read_run
from palaestra.errors import InvalidRequest, NotFound, StoreClosed
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS
from palaestra.rules.runs.runflow import (
    DEFAULT_MAX_REROUTES,
    CandidateStatus,
    RunSizes,
    RunStatus,
    TaskStatus,
    TaskView,
    phase_done,
)
from palaestra.store.bulk import insert_values, json_text
from palaestra.store.db import Database
from palaestra.store.models import Run, Task
from palaestra.store.paging import Key, Page, keyset, page_of

__all__ = [
    "MAX_GOAL_CHARS",
    "SIZE_LIMITS",
    "get_run",
    "get_task",
    "list_runs",
    "phase_summary",
    "start_run",
]

MAX_GOAL_CHARS: Final = 4000
#: Bounds of the sizes a run may ask for: (lowest, highest).
SIZE_LIMITS: Final = {
    "scouts": (1, 20),
    "shortlist": (1, 20),
    "builds": (1, 3),
    "verifies": (1, 3),
    "critiques": (1, 5),
}


def _sizes(base: RunSizes, overrides: Mapping[str, int] | None) -> RunSizes:
    values = base.as_dict()
    for key, value in (overrides or {}).items():
        if key not in SIZE_LIMITS:
            raise InvalidRequest(f"sizes.{key} is not a run size ({', '.join(SIZE_LIMITS)})")
        low, high = SIZE_LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidRequest(f"sizes.{key} must be an integer from {low} to {high}")
        values[key] = value
    if "shortlist" not in (overrides or {}):
        values["shortlist"] = min(values["shortlist"], values["scouts"])  # fewer scouts
    if values["shortlist"] > values["scouts"]:
        raise InvalidRequest("sizes.shortlist must not exceed sizes.scouts")
    return RunSizes(**values)


async def start_run(
    platform: Platform,
    caller: Caller,
    goal: str,
    launchpad: str | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Run:
    """Create a RUNNING run; the stepper takes it from there."""
    goal = goal.strip()
    if not goal or len(goal) > MAX_GOAL_CHARS:
        raise InvalidRequest(f"goal must be 1 to {MAX_GOAL_CHARS} characters")
    name = launchpad or DEFAULT_LAUNCHPAD
    preset = LAUNCHPADS.get(name)
    if preset is None:
        raise InvalidRequest(f"launchpad must be one of {', '.join(LAUNCHPADS)}")
    scale = platform.settings.dispatch_deadline_scale
    run_id = new_id()
    now = platform.clock.now()
    run = Run(
        id=run_id,
        owner_id=caller.owner_id,
        goal=goal,
        launchpad=preset.name,
        status=RunStatus.RUNNING,
        phase=Phase.SCOUT.value,
        config={
            "launchpad_title": preset.title,
            "sizes": _sizes(preset.sizes, sizes).as_dict(),
            "max_reroutes": DEFAULT_MAX_REROUTES,
            "deadlines_ms": {phase.value: round(phase.deadline_ms * scale) for phase in Phase},
            "seed": run_id,
        },
        created_at=now,
        updated_at=now,
        due_at=now,  # the stepper's next claim takes it
        kicks=0,
    )
    stored = _starts.get(platform.db)
    if stored is None:
        # The store by a weak reference: a strong one would keep the key alive for good.
        store = partial(_store_runs, weakref.ref(platform.db))
        stored = _starts[platform.db] = Batcher(store, alone_on_failure=True)
    await stored.submit(tuple(_stored(run, column) for column in _RUN_COLUMNS))
    return run


#: Runs started at once are stored together, one statement for a burst (group commit):
#: hundreds of runs started at once were as many transactions, which the run stepper's
#: first claim waited behind. A run that cannot be stored fails alone.
_starts: weakref.WeakKeyDictionary[Database, Batcher[tuple[Any, ...], None]] = (
    weakref.WeakKeyDictionary()
)


async def _store_runs(store: weakref.ref[Database], rows: list[tuple[Any, ...]]) -> list[None]:
    """Store ``rows``, through the store's writer as every write on the runs' hot path (on
    SQLite a write from another connection would wait on the writer's lock), in one
    statement (on PostgreSQL its own transaction)."""
    db = store()
    if db is None:
        raise StoreClosed
    insert = partial(insert_values, table=_RUNS, columns=_RUN_COLUMNS, values=rows)
    await db.transact(insert, single=True)
    return [None] * len(rows)


_RUNS = cast(Table, Run.__table__)
_RUN_COLUMNS: Final = tuple(column.key for column in _RUNS.columns)
_JSON_COLUMNS: Final = frozenset(c.key for c in _RUNS.columns if isinstance(c.type, JSON))


def _stored(run: Run, column: str) -> Any:
    """``run``'s value of ``column`` as the driver takes it: a JSON column's as JSON text, None
    as JSON's ``null`` (as SQLAlchemy's JSON type stores it)."""
    value = getattr(run, column)
    if column not in _JSON_COLUMNS:
        return value
    return "null" if value is None else json_text(value)


def _sees(caller: Caller, run: Run) -> bool:
    return caller.is_admin or run.owner_id == caller.owner_id


async def _owned(session: AsyncSession, caller: Caller, run_id: str) -> Run:
    run = await session.get(Run, run_id)
    if run is None or not _sees(caller, run):
        raise NotFound(f"Run {run_id} not found")
    return run


_SUMMARY: Final = select(
    Run.id, Run.status, Run.phase, Run.goal, Run.launchpad, Run.created_at, Run.finished_at
)


async def list_runs(
    platform: Platform, caller: Caller, limit: int = 50, cursor: str | None = None
) -> Page[RunRead]:
    """A page of the caller's runs (the admin's: all), newest first."""
    query = keyset(_SUMMARY, Run.created_at, Run.id, cursor, limit)
    if not caller.is_admin:
        query = query.where(Run.owner_id == caller.owner_id)
    async with platform.db.read() as connection:
        rows = [RunRead.model_validate(row) for row in await connection.execute(query)]
    return page_of(rows, limit, lambda run: Key(run.created_at, run.id))


async def get_run(platform: Platform, caller: Caller, run_id: str) -> RunDetail:
    """The run with its tasks and candidates, if the caller may see it."""
    detail = await read_run(platform, run_id)
    if detail is None or not _sees(caller, detail.run):
        raise NotFound(f"Run {run_id} not found")
    return detail


async def get_task(platform: Platform, caller: Caller, run_id: str, task_id: str) -> Task:
    async with platform.db.session() as session:
        await _owned(session, caller, run_id)
        task = await session.get(Task, task_id)
    if task is None or task.run_id != run_id:
        raise NotFound(f"Task {task_id} not found")
    return task


#: The candidates carried past the shortlist, whatever became of them later.
_CARRIED: Final = (CandidateStatus.SHORTLISTED, CandidateStatus.RANKED, CandidateStatus.ELIMINATED)


def phase_summary(detail: RunDetail) -> list[dict[str, Any]]:
    """Per phase: its slots, how many are done, running or failed, and its status."""
    run = detail.run
    sizes = RunSizes.of(run.config.get("sizes", {}))
    shortlisted = [c.id for c in detail.candidates if c.status in _CARRIED]
    views = [
        TaskView(t.id, t.phase, t.candidate_id, t.slot, t.attempt, t.status) for t in detail.tasks
    ]
    rows = []
    for phase in Phase:
        groups: list[str | None] = [None] if phase is Phase.SCOUT else list(shortlisted)
        expected = sizes.per_candidate(phase) * (
            1 if phase is Phase.SCOUT else (len(shortlisted) or sizes.shortlist)
        )
        mine = [t for t in detail.tasks if t.phase == phase]
        done = sum(1 for t in mine if t.status == TaskStatus.SUCCEEDED)
        finished = bool(groups) and all(phase_done(views, phase, g, sizes) for g in groups)
        status = "done" if finished and mine else ("running" if mine else "pending")
        rows.append(
            {
                "phase": phase.value,
                "status": status,
                "slots": expected,
                "done": done,
                "running": sum(1 for t in mine if t.status == TaskStatus.RUNNING),
                "failed": sum(
                    1 for t in mine if t.status in (TaskStatus.FAILED, TaskStatus.TIMEOUT)
                ),
                "rerouted": sum(1 for t in mine if t.attempt > 0),
            }
        )
    if run.status == RunStatus.COMPLETED:
        for row in rows:
            row["status"] = "done"
    return rows
