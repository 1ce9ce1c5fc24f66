"""Liveness of the platform itself, and its metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text

from palaestra.api.deps import PlatformDep

router = APIRouter(tags=["system"])


@router.get("/healthz")
async def healthz(platform: PlatformDep) -> JSONResponse:
    """200 when the server and its database answer."""
    try:
        async with platform.db.session() as session:
            await session.execute(text("SELECT 1"))
    except Exception as exc:
        return JSONResponse(
            {"status": "error", "database": f"unavailable: {type(exc).__name__}"}, 503
        )
    return JSONResponse({"status": "ok", "database": "ok"})


@router.get("/metrics")
async def metrics(platform: PlatformDep) -> Response:
    """Prometheus metrics."""
    return Response(platform.metrics.render(), media_type=CONTENT_TYPE_LATEST)
