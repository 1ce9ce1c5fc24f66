"""Seed: the async completion callback of edgearena-v1 (checks in ``engine.completion``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request

from palaestra.api.errors import ApiError
from palaestra.api.routes_runs import RunsDep
from palaestra.api.run_schemas import Accepted
from palaestra.engine.completion import CompletionRejected

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["agent tasks"])


@router.post("/agent-tasks/{task_id}/complete", response_model=Accepted)
async def complete(
    task_id: str,
    request: Request,
    runs: RunsDep,
    x_edgearena_signature: Annotated[str | None, Header()] = None,
    x_edgearena_timestamp: Annotated[str | None, Header()] = None,
) -> Accepted:
    """Seed: an agent that answered 202 delivers its output, signed with its key."""
    raw = await request.body()
    try:
        await runs.completions.complete(task_id, raw, x_edgearena_signature, x_edgearena_timestamp)
    except CompletionRejected as exc:
        raise ApiError(exc.status, exc.message, exc.code) from None
    return Accepted()
