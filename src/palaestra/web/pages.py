"""The public, read-only pages: overview, agents, an agent, a fighter, runs, matches, leaderboard.

The overview, the lists, the leaderboard, and a run's and a match's page while they are
under way poll with their tag (the same URL asked with ``HX-Request`` answers only the
live part) and are answered ``304`` until what they show changes (:mod:`.live`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from palaestra.engine.quotas import quota_use
from palaestra.http.deps import PlatformDep
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage.matchflow import OPEN_MATCH_STATUSES
from palaestra.rules.ratings import MU, SIGMA
from palaestra.rules.ratings.leaderboard_tables import ENTRANT_TYPES
from palaestra.rules.runs.runflow import RunStatus, TaskStatus
from palaestra.web import (
    board_queries,
    fighter_queries,
    list_queries,
    match_queries,
    queries,
    run_queries,
)
from palaestra.web.charts import LatencyPoint, latency_chart, status_spans, status_strip
from palaestra.web.failure_queries import failure_split
from palaestra.web.forms import FormText, SenderDep
from palaestra.web.live import Topic, live_for, run_owner, show
from palaestra.web.picture_queries import agent_hours, rating_history
from palaestra.web.queries import MatchRow
from palaestra.web.reasons import Audience, audience_for
from palaestra.web.rendering import render
from palaestra.web.session import current

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/")
async def overview(request: Request, platform: PlatformDep) -> Response:
    live = await live_for(request, (Topic.RUNS, Topic.MATCHES, Topic.AGENTS, Topic.EVENTS))
    if live.unchanged:
        return live.not_modified()
    view = await queries.overview(platform)
    if not platform.settings.public_runs:
        view = replace(view, runs=[])  # the count stays; the goals do not
    signed = current(request)
    owner_id = signed.caller.owner_id if signed else None
    mine = [] if owner_id is None else await list_queries.recent_runs_of(platform, owner_id)
    return show(request, live, "overview.html", view=view, mine=mine)


@router.get("/agents")
async def agents(
    request: Request,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    fighters_cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """Agents and fighters, newest first, each list a page at a time."""
    live = await live_for(request, (Topic.AGENTS,))
    if live.unchanged:
        return live.not_modified()
    return show(
        request,
        live,
        "agents.html",
        agents=await list_queries.agents_page(platform, Arena.EDGEARENA, cursor),
        fighters=await list_queries.agents_page(platform, Arena.CAGE, fighters_cursor),
        agents_total=await list_queries.agents_total(platform, Arena.EDGEARENA),
        fighters_total=await list_queries.agents_total(platform, Arena.CAGE),
        cursor=cursor,
        fighters_cursor=fighters_cursor,
    )


@router.get("/agents/{agent_id}")
async def agent(
    request: Request,
    agent_id: str,
    platform: PlatformDep,
    failures_cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """An agent's page for anyone: each failure's kind and status, not what the agent sent;
    its failures a page at a time. A browser signed in as its owner or the admin reads the
    whole reasons (redacted)."""
    signed = current(request)
    audience = await audience_for(platform, signed.caller if signed else None, agent_id)
    return await _agent_page(request, platform, agent_id, audience, failures_cursor=failures_cursor)


@router.post("/agents/{agent_id}")
async def agent_for_owner(
    agent_id: str, sender: SenderDep, failures_cursor: FormText = ""
) -> Response:
    """The same page for the agent's owner or the admin, with the whole reasons (redacted);
    without a session, its failures are paged by posting the token again with the cursor."""
    audience = await sender.owner_view(agent_id)
    if isinstance(audience, Response):
        return audience
    return await _agent_page(
        sender.request,
        sender.platform,
        agent_id,
        audience,
        sender.shown_token,
        failures_cursor=failures_cursor or None,
    )


async def _agent_page(
    request: Request,
    platform: Platform,
    agent_id: str,
    audience: Audience,
    token: str | None = None,
    *,
    failures_cursor: str | None = None,
) -> Response:
    page = await queries.agent_page(
        platform, agent_id, audience=audience, failures_cursor=failures_cursor
    )
    if page is None:
        return not_found(request, "No such agent.")
    now = platform.clock.now()
    points = [
        LatencyPoint(e.at, e.latency_ms or 0.0, e.outcome == "success", e.kind, e.reason)
        for e in page.timed
    ]
    changes = [
        (e.at, str((e.detail or {}).get("from", "")), e.outcome) for e in page.status_changes
    ]
    first = page.status_changes[0] if page.status_changes else None
    initial = (
        str((first.detail or {}).get("from", page.agent.status)) if first else page.agent.status
    )
    since = page.agent.created_at if len(page.status_changes) < 200 or first is None else first.at
    spans = status_spans(changes, since=since, now=now, initial=initial)
    return render(
        request,
        "agent.html",
        page=page,
        chart=latency_chart(points, now=now),
        chart_narrow=latency_chart(points, now=now, width=360, height=200, narrow=True),
        strip=status_strip(spans, now=now),
        spans=spans,
        split=await failure_split(platform, agent_id),
        hours=await agent_hours(platform, agent_id, now) if page.agent.role else [],
        token=token,
        private=audience is Audience.OWNER,
    )


@router.get("/fighters/{fighter_id}")
async def fighter(
    request: Request,
    fighter_id: str,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """A fighter, its live ratings and record, and its matches a page at a time."""
    live = await live_for(request, (Topic.MATCHES, Topic.RATINGS, Topic.AGENTS))
    if live.unchanged:
        return live.not_modified()
    page = await fighter_queries.fighter_page(platform, fighter_id, cursor)
    if page is None:
        return not_found(request, "No such fighter.")
    ratings = await match_queries.fighter_ratings(platform, fighter_id)
    signed = current(request)
    owner_id = signed.caller.owner_id if signed else None
    mine = [] if owner_id is None else await fighter_queries.owned_fighters(platform, owner_id)
    own = page.fighter.id in {fighter for fighter, _ in mine}
    if own:
        mine = []  # its own fighter: the owner plays it against another's
    quotas = await quota_use(platform, owner_id) if mine and owner_id else []
    return show(
        request,
        live,
        "fighter.html",
        poll=cursor is None or _any_open(page.matches.items),
        page=page,
        ratings=ratings,
        history=await rating_history(platform, fighter_id) if ratings else [],
        start=(MU, SIGMA),
        mine=mine,
        own=own,
        quotas=quotas,
    )


@router.get("/runs")
async def runs(
    request: Request,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """Every run when runs are public; else a signed-in owner's own runs (the admin's: all)."""
    owner_id = None
    if not platform.settings.public_runs:
        signed = current(request)
        if signed is None:
            return private_runs(request)
        owner_id = signed.caller.owner_id  # None for the admin
    live = await live_for(request, (Topic.RUNS,))
    if live.unchanged:
        return live.not_modified()
    page = await list_queries.runs_page(platform, cursor, owner_id=owner_id)
    poll = cursor is None or any(run.status == RunStatus.RUNNING for run in page.items)
    return show(request, live, "runs.html", poll=poll, runs=page.items, page=page, cursor=cursor)


@router.get("/runs/{run_id}")
async def run(request: Request, run_id: str, platform: PlatformDep) -> Response:
    """A run's page; asked with its tag while the run is under way, 304 until it changed."""
    if not platform.settings.public_runs:
        signed = current(request)
        if signed is None:
            return private_runs(request)
        if not signed.caller.is_admin:
            owner_id = await run_owner(request, run_id)
            if owner_id != signed.caller.owner_id:
                return not_found(request, "No such run among yours.")
    live = await live_for(request, (Topic.RUNS,))
    if live.unchanged:
        return live.not_modified()
    page = await run_queries.run_page(platform, run_id)
    if page is None:
        return not_found(request, "No such run.")
    if any(t.status == TaskStatus.RUNNING and t.sent_at is None for t in page.tasks):
        # A task opened but not sent yet: its send moves no stamp, so this draw is not
        # kept as current and the next poll draws the page again (with its clock).
        live = live.provisional()
    name = "_run_live.html" if _htmx(request) else "run.html"
    return live.finish(render(request, name, run=page, facts=run_queries.output_facts, live=live))


@router.get("/matches")
async def matches(
    request: Request,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    live = await live_for(request, (Topic.MATCHES,))
    if live.unchanged:
        return live.not_modified()
    page = await list_queries.matches_page(platform, cursor)
    poll = cursor is None or _any_open(page.items)
    return show(
        request, live, "matches.html", poll=poll, matches=page.items, page=page, cursor=cursor
    )


@router.get("/matches/{match_id}")
async def match(request: Request, match_id: str, platform: PlatformDep) -> Response:
    """A match's page; asked with its tag while the match is open, 304 until it changed."""
    live = await live_for(request, (Topic.MATCHES,))
    if live.unchanged:
        return live.not_modified()
    page = await match_queries.match_page(platform, match_id)
    if page is None:
        return not_found(request, "No such match.")
    name = "_match_live.html" if _htmx(request) else "match.html"
    return live.finish(render(request, name, match=page, live=live))


Filter = Annotated[str | None, Query(max_length=64)]


@router.get("/leaderboard")
async def leaderboard(
    request: Request,
    platform: PlatformDep,
    entrant_type: Filter = None,
    fighter_class: Annotated[str | None, Query(alias="class", max_length=64)] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    live_cursor: Annotated[str | None, Query(max_length=200)] = None,
    edge_cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """Both arenas' tables, each a page at a time; each table's links keep the others' pages."""
    live = await live_for(request, (Topic.RATINGS, Topic.AGENTS))
    if live.unchanged:
        return live.not_modified()
    cage = await board_queries.cage_board(
        platform,
        entrant_type=entrant_type or None,
        fighter_class=fighter_class or None,
        cursor=cursor,
        live_cursor=live_cursor,
    )
    return show(
        request,
        live,
        "leaderboard.html",
        cage=cage,
        edge=await board_queries.edgearena_board(platform, edge_cursor),
        entrant_types=ENTRANT_TYPES,
        interval_s=platform.settings.leaderboard_interval_s,
        state={
            "entrant_type": cage.entrant_type,
            "class": cage.fighter_class,
            "cursor": cursor,
            "live_cursor": live_cursor,
            "edge_cursor": edge_cursor,
        },
    )


def _any_open(matches: list[MatchRow]) -> bool:
    return any(match.status in OPEN_MATCH_STATUSES for match in matches)


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def private_runs(request: Request) -> Response:
    message = (
        "Runs on this arena are private: sign in to read your own, or read them through the "
        "API (GET /api/runs/{run_id}). The operator can publish them with "
        "PALAESTRA_PUBLIC_RUNS=true."
    )
    return render(
        request, "error.html", 403, title="Runs are private", message=message, sign_in_link=True
    )


def not_found(request: Request, message: str) -> Response:
    return render(request, "error.html", 404, title="Not found", message=message)
