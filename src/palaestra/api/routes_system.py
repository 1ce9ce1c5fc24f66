"""Liveness of the platform itself, and its metrics."""

from __future__ import annotations

import structlog
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import Select, func, select, text

from palaestra.http.deps import PlatformDep, ServicesDep
from palaestra.jobs.broker import StreamBroker, queue_depth
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.store.models import RUNNING_RUNS, Run, Task

router = APIRouter(tags=["system"])
log = structlog.get_logger(__name__)


def dispatches_in_flight() -> Select[int]:
    """The agents' tasks RUNNING in the running runs.

    Counted run by run: the running runs through ``ix_runs_running``, each one's tasks
    through ``ix_tasks_run``, so the read costs what is running, not the history (no index
    covers a task's status, which changes as it ends: see the Task model). As a join, or
    with the run's status as a parameter, SQLite read every run or every task.
    """
    per_run = (
        select(func.count())
        .where(Task.run_id == Run.id, Task.status == TaskStatus.RUNNING, Task.agent_id.is_not(None))
        .correlate(Run)
        .scalar_subquery()
    )
    return select(func.coalesce(func.sum(per_run), 0)).select_from(Run).where(text(RUNNING_RUNS))


@router.get("/healthz")
async def healthz(services: ServicesDep, platform: PlatformDep) -> JSONResponse:
    """200 when the server, its database and its broker answer.

    ``broker`` is ``in-process`` in the embedded mode (no broker to reach).
    """
    body = {"status": "ok", "database": "ok", "broker": "in-process"}
    try:
        async with platform.db.session() as session:
            await session.execute(text("SELECT 1"))
    except Exception as exc:
        body |= {"status": "error", "database": f"unavailable: {type(exc).__name__}"}
    broker = services.broker
    if isinstance(broker, StreamBroker):
        try:
            await broker.ping()
            body["broker"] = "ok"
        except Exception as exc:
            body |= {"status": "error", "broker": f"unavailable: {type(exc).__name__}"}
    return JSONResponse(body, 200 if body["status"] == "ok" else 503)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text"}},
)
async def metrics(services: ServicesDep, platform: PlatformDep) -> Response:
    """Prometheus metrics: this process's counters, and the cluster's queue and dispatches."""
    gauges = platform.metrics
    broker = services.broker
    if broker is not None:
        try:
            depth = await queue_depth(broker)
            gauges.queue_depth.labels("waiting").set(depth.waiting)
            gauges.queue_depth.labels("running").set(depth.running)
        except Exception:  # the broker is down: /healthz says so; the metrics still answer
            log.warning("queue depth unavailable", exc_info=True)
    try:
        async with platform.db.session() as session:
            running = await session.scalar(dispatches_in_flight())
        gauges.dispatches_in_flight.set(running or 0)
    except Exception:
        log.warning("dispatches in flight unavailable", exc_info=True)
    return Response(gauges.render(), media_type=CONTENT_TYPE_LATEST)
