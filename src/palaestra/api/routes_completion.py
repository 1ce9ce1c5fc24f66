"""Seed: the async completion callback of edgearena-v1 (checks in ``engine.completion``).

Agents call this route once per deferred task, so it is kept lean: the raw body
and the two signature headers are read from the request itself (the signature
covers the raw bytes), no dependency is solved, and the answer is pre-encoded.
The app registers this router first, so its path is matched before all others.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import Response

from palaestra.api.contract import errors
from palaestra.api.errors import ApiError
from palaestra.api.limits import RouteCap
from palaestra.api.run_schemas import Accepted
from palaestra.engine.runs.completion import (
    COMPLETION_BODY_CAP_BYTES,
    CompletionRejected,
)
from palaestra.http.deps import services_of
from palaestra.protocol import SIGNATURE_HEADER, TIMESTAMP_HEADER, CompletionBody

__all__ = ["BODY_CAP", "router"]

router = APIRouter(prefix="/api", tags=["agent tasks"])

#: This route's body cap, above the seed's limit on ``output`` (``engine.completion``, step 0).
BODY_CAP: Final = RouteCap("/api/agent-tasks/", "/complete", COMPLETION_BODY_CAP_BYTES)

_ACCEPTED: Final = b'{"accepted":true}'
_DOCUMENTED: Final = {
    "parameters": [
        {
            "name": SIGNATURE_HEADER,
            "in": "header",
            "required": True,
            "schema": {"type": "string"},
            "description": "sha256=<hex HMAC-SHA256 of timestamp, host+pathname of the "
            "platform's public URL and the raw body, with the agent's key>",
        },
        {
            "name": TIMESTAMP_HEADER,
            "in": "header",
            "required": True,
            "schema": {"type": "string"},
            "description": "Unix seconds at signing, within ±300 s of the platform's clock",
        },
    ],
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": CompletionBody.model_json_schema()}},
    },
}


@router.post(
    "/agent-tasks/{task_id}/complete",
    response_model=Accepted,
    openapi_extra=_DOCUMENTED,
    responses=errors(400, 401),
)
async def complete(task_id: str, request: Request) -> Response:
    """Seed: an agent that answered 202 delivers its output, signed with its key."""
    # The services read as ``get_services`` does, without a dependency: the hottest route.
    desk = services_of(request).runs.completions
    raw = await request.body()
    headers = request.headers
    try:
        await desk.complete(
            task_id, raw, headers.get(SIGNATURE_HEADER), headers.get(TIMESTAMP_HEADER)
        )
    except CompletionRejected as exc:
        raise ApiError(exc.status, exc.message, exc.code) from None
    return Response(_ACCEPTED, media_type="application/json")
