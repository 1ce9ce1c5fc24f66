"""edgearena runs: start one, list them, follow one, read one task."""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Depends, Query

from palaestra.api.contract import errors
from palaestra.api.paging import PAGED, KeysetCursorQuery, PagerDep
from palaestra.api.run_schemas import (
    NewRun,
    RunCreated,
    RunDetailOut,
    RunOut,
    TaskDetailOut,
)
from palaestra.engine.history import task_bodies_archive
from palaestra.engine.quotas import check_run_quota
from palaestra.engine.runs import service
from palaestra.engine.runs.driver import Runs
from palaestra.http.deps import AnyCaller, PlatformDep, ServicesDep

__all__ = ["PREFIX", "RunsDep", "get_runs", "router"]

router = APIRouter(prefix="/api", tags=["runs"])
#: Every path of this router: its requests touch only the store (see ``limits.InTurn``).
PREFIX: Final = "/api/runs"


async def get_runs(services: ServicesDep) -> Runs:
    return services.runs


RunsDep = Annotated[Runs, Depends(get_runs)]


@router.post("/runs", status_code=202, response_model=RunCreated, responses=errors(400, 403))
async def start(
    body: NewRun, platform: PlatformDep, caller: AnyCaller, runs: RunsDep
) -> RunCreated:
    """Start a run: the goal goes to the scouts, and on through the phases to a ranked report.

    An owner's runs are limited in flight and per hour: past a quota, 429 with Retry-After."""
    sizes = body.sizes.given() if body.sizes else None
    await check_run_quota(platform, caller)
    run = await service.start_run(platform, caller, body.goal, body.launchpad, sizes)
    runs.kick(run.id)
    return RunCreated(run_id=run.id)


@router.get("/runs", response_model=list[RunOut], responses=PAGED)
async def recent(
    pager: PagerDep,
    platform: PlatformDep,
    caller: AnyCaller,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: KeysetCursorQuery = None,
) -> list[RunOut]:
    """The caller's runs (the admin's: all), newest first, a page at a time."""
    page = await service.list_runs(platform, caller, limit, cursor)
    return pager.rows(page, limit, RunOut.of)


@router.get("/runs/{run_id}", response_model=RunDetailOut)
async def one(run_id: str, platform: PlatformDep, caller: AnyCaller) -> RunDetailOut:
    """The run: its phases, every task, the candidates and, once finished, the report."""
    return RunDetailOut.of_detail(await service.get_run(platform, caller, run_id))


@router.get("/runs/{run_id}/tasks/{task_id}", response_model=TaskDetailOut)
async def task(
    run_id: str, task_id: str, platform: PlatformDep, caller: AnyCaller
) -> TaskDetailOut:
    """One task: the payload that was signed and sent, and the output that came back (or,
    once history retention archived them, where they went)."""
    found = await service.get_task(platform, caller, run_id, task_id)
    archived = await task_bodies_archive(platform, run_id) if found.payload is None else None
    return TaskDetailOut.of(found, archived.words if archived else None)
