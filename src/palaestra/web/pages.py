"""The public, read-only pages: overview, agents, an agent, a fighter, runs, matches."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from palaestra.api.deps import PlatformDep
from palaestra.web import queries
from palaestra.web.charts import LatencyPoint, latency_chart, status_spans, status_strip
from palaestra.web.rendering import render

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/")
async def overview(request: Request, platform: PlatformDep) -> Response:
    return render(request, "overview.html", view=await queries.overview(platform))


@router.get("/agents")
async def agents(request: Request, platform: PlatformDep) -> Response:
    return render(
        request,
        "agents.html",
        agents=await queries.agent_rows(platform),
        fighters=await queries.fighter_rows(platform),
    )


@router.get("/agents/{agent_id}")
async def agent(request: Request, agent_id: str, platform: PlatformDep) -> Response:
    page = await queries.agent_page(platform, agent_id)
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
    )


@router.get("/fighters/{fighter_id}")
async def fighter(request: Request, fighter_id: str, platform: PlatformDep) -> Response:
    page = await queries.fighter_page(platform, fighter_id)
    if page is None:
        return not_found(request, "No such fighter.")
    return render(request, "fighter.html", page=page)


@router.get("/runs")
async def runs(request: Request, platform: PlatformDep) -> Response:
    return render(request, "runs.html", runs=await queries.recent_runs(platform, 50))


@router.get("/matches")
async def matches(request: Request, platform: PlatformDep) -> Response:
    return render(request, "matches.html", matches=await queries.recent_matches(platform, 50))


@router.get("/leaderboard")
async def leaderboard(request: Request) -> Response:
    return render(request, "leaderboard.html")


def not_found(request: Request, message: str) -> Response:
    return render(request, "error.html", 404, title="Not found", message=message)
