"""Liveness of the platform itself, and its metrics."""

from __future__ import annotations

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import func, select, text

from palaestra.http.deps import PlatformDep
from palaestra.jobs.broker import StreamBroker, queue_depth
from palaestra.rules.runflow import RunStatus, TaskStatus
from palaestra.store.models import Run, Task

router = APIRouter(tags=["system"])
log = structlog.get_logger(__name__)


@router.get("/healthz")
async def healthz(request: Request, platform: PlatformDep) -> JSONResponse:
    """200 when the server, its database and its broker answer.

    ``broker`` is ``in-process`` in the embedded mode (no broker to reach).
    """
    body = {"status": "ok", "database": "ok", "broker": "in-process"}
    try:
        async with platform.db.session() as session:
            await session.execute(text("SELECT 1"))
    except Exception as exc:
        body |= {"status": "error", "database": f"unavailable: {type(exc).__name__}"}
    broker = getattr(request.app.state, "broker", None)
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
async def metrics(request: Request, platform: PlatformDep) -> Response:
    """Prometheus metrics: this process's counters, and the cluster's queue and dispatches."""
    gauges = platform.metrics
    broker = getattr(request.app.state, "broker", None)
    if broker is not None:
        try:
            depth = await queue_depth(broker)
            gauges.queue_depth.labels("waiting").set(depth.waiting)
            gauges.queue_depth.labels("running").set(depth.running)
        except Exception:  # the broker is down: /healthz says so; the metrics still answer
            log.warning("queue depth unavailable", exc_info=True)
    try:
        async with platform.db.session() as session:
            # Through the running runs (an index each way): no index covers a task's status,
            # which changes as it ends (see the Task model).
            running = await session.scalar(
                select(func.count())
                .select_from(Task)
                .join(Run, Run.id == Task.run_id)
                .where(
                    Run.status == RunStatus.RUNNING,
                    Task.status == TaskStatus.RUNNING,
                    Task.agent_id.is_not(None),
                )
            )
        gauges.dispatches_in_flight.set(running or 0)
    except Exception:
        log.warning("dispatches in flight unavailable", exc_info=True)
    return Response(gauges.render(), media_type=CONTENT_TYPE_LATEST)
