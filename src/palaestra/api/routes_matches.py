"""cage.v1 matches: start one, list them, read one's transcript."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request

from palaestra.api.contract import errors
from palaestra.api.match_schemas import MatchCreate, MatchCreated, MatchOut, MatchSummary
from palaestra.api.paging import PAGED, KeysetCursorQuery, PagerDep
from palaestra.engine.cage import matches as service
from palaestra.engine.quotas import check_match_quota
from palaestra.http.deps import AnyCaller, PlatformDep, ServicesDep, caller_of, guarded

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["matches"])


@router.post(
    "/matches", status_code=202, response_model=MatchCreated, responses=errors(400, 403, 404, 409)
)
async def create(
    body: MatchCreate, services: ServicesDep, platform: PlatformDep, caller: AnyCaller
) -> MatchCreated:
    """Start a match between two fighters; the referee plays it in the background.

    An owner's match is a friendly unless it asks to be rated (see ``rated``); an owner's
    matches are limited in flight and per hour: past a quota, 429 with Retry-After."""
    await check_match_quota(platform, caller)
    match = await service.create_match(
        platform, caller, body.attacker, body.defender, rated=body.rated
    )
    services.referee.wake()
    return MatchCreated(match_id=match.id)


@router.get(
    "/matches", response_model=list[MatchSummary], response_model_by_alias=True, responses=PAGED
)
async def recent(
    pager: PagerDep,
    platform: PlatformDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: KeysetCursorQuery = None,
) -> list[MatchSummary]:
    """Recent matches, newest first, a page at a time."""
    page = await service.list_matches(platform, limit, cursor)
    return pager.rows(page, limit, MatchSummary.of)


@router.get(
    "/matches/{match_id}",
    response_model=MatchOut,
    response_model_by_alias=True,
    responses=errors(401),
)
async def transcript(
    match_id: str,
    request: Request,
    platform: PlatformDep,
    authorization: Annotated[str | None, Header()] = None,
) -> MatchOut:
    """A match's turns, the judge's findings and the outcome; its secrets once it ended.

    A failed turn's reason is its kind and status for anyone; with the bearer token of the
    fighter's owner (or the admin's), the whole line, redacted."""
    view = await service.get_match(platform, match_id)
    readers_of: frozenset[str] = frozenset()
    if authorization is not None:
        async with guarded(request):
            caller = await caller_of(platform, authorization)
        readers_of = await service.fighters_read_by(platform, caller, view.match)
    return MatchOut.of_transcript(view, readers_of)
