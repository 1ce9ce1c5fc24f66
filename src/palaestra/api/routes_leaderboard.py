"""Leaderboards (anyone), their recomputation and the matchmaker's pause switch (admin)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from palaestra.api.contract import errors
from palaestra.api.leaderboard_schemas import (
    LeaderboardOut,
    LiveRow,
    MatchmakingOut,
    PublishedOut,
)
from palaestra.api.paging import PAGED, PagerDep, PositionCursorQuery, RankedCursorQuery
from palaestra.engine.cage import matchmaker
from palaestra.engine.ratings import leaderboard
from palaestra.engine.ratings.live import rate_pending
from palaestra.engine.ratings.live_table import live_table
from palaestra.errors import InvalidRequest
from palaestra.http.deps import AdminCaller, PlatformDep
from palaestra.protocol.constants import Arena
from palaestra.rules.cage import EntrantType

#: The arenas, as the schema states them (an unknown one is a 422 before any rule runs).
ArenaName = Literal["cage", "edgearena"]

EntrantTypeQuery = Annotated[
    EntrantType | None,
    Query(description="cage only (given with arena=edgearena: 400)"),
]

router = APIRouter(prefix="/api", tags=["leaderboard"])


@router.get("/leaderboard", response_model=LeaderboardOut, responses=PAGED | errors(400, 409))
async def get_leaderboard(
    pager: PagerDep,
    platform: PlatformDep,
    arena: Annotated[ArenaName, Query(description="cage or edgearena")] = "cage",
    entrant_type: EntrantTypeQuery = None,
    fighter_class: Annotated[
        str | None,
        Query(alias="class", description="cage only: a class (given with arena=edgearena: 400)"),
    ] = None,
    role: Annotated[
        Literal["SCOUT", "BUILDER", "ANALYST"] | None,
        Query(description="edgearena only (given with arena=cage: 400)"),
    ] = None,
    limit: Annotated[
        int | None, Query(ge=1, le=1000, description="rows of the published table per page")
    ] = None,
    cursor: PositionCursorQuery = None,
) -> LeaderboardOut:
    """The latest published leaderboard, filtered, with its computation time and match count.

    With ``limit`` its published table (``fighters`` or ``agents``) comes a page at a time:
    ``next_cursor`` (and the ``Link`` and ``X-Next-Cursor`` headers) give the next page's
    start. A cursor outlives no republication: then the answer is a 409, start again."""
    data = await leaderboard.view(
        platform,
        arena,
        entrant_type=entrant_type or None,
        fighter_class=fighter_class or None,
        role=role or None,
        limit=limit,
        cursor=cursor,
    )
    if limit is not None:
        pager.announce(data["next_cursor"], limit)
    return LeaderboardOut.model_validate(data)


@router.get("/leaderboard/live", response_model=list[LiveRow], responses=PAGED)
async def live(
    pager: PagerDep,
    platform: PlatformDep,
    entrant_type: EntrantTypeQuery = None,
    fighter_class: Annotated[
        str | None, Query(alias="class", max_length=64, description="a class")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    cursor: RankedCursorQuery = None,
) -> list[LiveRow]:
    """The live cage table (OpenSkill, read now), best first, a page at a time.

    Ordered by score, then name and id; each row's ``rank`` is its place in the whole
    (filtered) table. The next page holds the fighters ranked below the cursor's."""
    page = await live_table(
        platform,
        entrant_type=entrant_type or None,
        fighter_class=fighter_class or None,
        limit=limit,
        cursor=cursor,
    )
    return pager.rows(page, limit, LiveRow.model_validate)


@router.post("/leaderboard/recompute", response_model=PublishedOut, responses=errors(400, 403))
async def recompute(
    platform: PlatformDep,
    _admin: AdminCaller,
    arena: Annotated[ArenaName, Query(description="cage or edgearena")] = "cage",
) -> PublishedOut:
    """Apply pending live ratings and publish a fresh snapshot of the arena now."""
    try:
        chosen = Arena(arena)
    except ValueError:
        raise InvalidRequest("arena must be cage or edgearena") from None
    await rate_pending(platform)
    snapshot = await leaderboard.recompute(platform, chosen)
    return PublishedOut(
        arena=chosen.value, computed_at=snapshot.computed_at, match_count=snapshot.match_count
    )


def _out(state: matchmaker.MatchmakingState) -> MatchmakingOut:
    return MatchmakingOut.model_validate(state, from_attributes=True)


@router.get("/matchmaking", response_model=MatchmakingOut, responses=errors(403))
async def matchmaking(platform: PlatformDep, _admin: AdminCaller) -> MatchmakingOut:
    """Whether the matchmaker schedules matches now."""
    return _out(await matchmaker.matchmaking_state(platform))


@router.post("/matchmaking/pause", response_model=MatchmakingOut, responses=errors(403))
async def pause(platform: PlatformDep, _admin: AdminCaller) -> MatchmakingOut:
    """Stop scheduling new matches (matches already made play on)."""
    return _out(await matchmaker.set_paused(platform, True))


@router.post("/matchmaking/resume", response_model=MatchmakingOut, responses=errors(403))
async def resume(platform: PlatformDep, _admin: AdminCaller) -> MatchmakingOut:
    """Schedule matches again."""
    return _out(await matchmaker.set_paused(platform, False))
