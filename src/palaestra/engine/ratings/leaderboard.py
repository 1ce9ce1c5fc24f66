"""Leaderboards: published snapshots, recomputed on a schedule and on demand, and served filtered.

``recompute`` reads every scored, rated match in which the house baseline
played no turn (cage) or finished task (edgearena),
builds the table in a worker thread (the bootstrap is CPU work) and stores it
as a snapshot with its computation time and match count. ``view`` serves the
latest snapshot, filtered, with the live ratings read at request time; the
first request for an arena without a snapshot computes one.

:class:`RatingsWorker` keeps everything current inside ``palaestra serve``:
it applies newly scored matches to the live ratings every
``ratings_interval_s`` and republishes an arena's leaderboard when its latest
snapshot is older than ``leaderboard_interval_s``. Recomputing is idempotent,
so two workers that both decide to do it only waste a little time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy import delete, select

from palaestra.engine.loops import every
from palaestra.engine.ratings.live import BASELINE_PLAYED, rate_pending
from palaestra.engine.ratings.live_table import cage_fighters, live_table
from palaestra.errors import InvalidRequest
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage.matchflow import MatchKind, MatchStatus
from palaestra.rules.cage.outcome import Winner
from palaestra.rules.ratings import result_of
from palaestra.rules.ratings.agent_stats import FINISHED, AgentFacts, TaskOutcome
from palaestra.rules.ratings.head_to_head import head_to_head
from palaestra.rules.ratings.leaderboard_tables import (
    build_cage,
    build_edgearena,
    filter_agents,
    filter_cage,
)
from palaestra.store.models import Agent, Match, Task
from palaestra.store.paging import decode_position, encode_position
from palaestra.store.rating_models import LeaderboardSnapshot

__all__ = ["RatingsWorker", "Snapshot", "latest", "recompute", "view"]

log = structlog.get_logger(__name__)

BOOTSTRAP_SEED = 20_260_101
#: Rows of the live table in a leaderboard asked for without ``limit`` (the first page).
LIVE_ROWS = 200


@dataclass(frozen=True, slots=True)
class Snapshot:
    arena: Arena
    computed_at: float
    match_count: int
    data: dict[str, Any]


async def recompute(platform: Platform, arena: Arena, *, resamples: int | None = None) -> Snapshot:
    """Compute and store a fresh snapshot of ``arena``'s leaderboard."""
    if arena is Arena.CAGE:
        fighters = await cage_fighters(platform)
        scored = await _scored_matches(platform)
        records = [(a, d, result.score) for a, d, result, _ in scored]
        data = await asyncio.to_thread(
            build_cage,
            {f.fighter_id: f for f in fighters},
            records,
            resamples=resamples or platform.settings.leaderboard_resamples,
            seed=BOOTSTRAP_SEED,
        )
        names = {f.fighter_id: f.name for f in fighters}
        data["head_to_head"] = head_to_head(
            ((a, d, result.value, decided_by) for a, d, result, decided_by in scored), names
        )
        count = len(records)
    else:
        agents, tasks = await _edgearena_facts(platform)
        data = await asyncio.to_thread(build_edgearena, agents, tasks)
        count = len(tasks)
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        session.add(
            LeaderboardSnapshot(arena=arena.value, computed_at=now, match_count=count, data=data)
        )
        await session.flush()
        keep = (
            select(LeaderboardSnapshot.id)
            .where(LeaderboardSnapshot.arena == arena.value)
            .order_by(LeaderboardSnapshot.computed_at.desc(), LeaderboardSnapshot.id.desc())
            # Older ones are deleted as this one is stored.
            .limit(platform.settings.retention_leaderboard_snapshots)
        )
        kept = list(await session.scalars(keep))
        await session.execute(
            delete(LeaderboardSnapshot).where(
                LeaderboardSnapshot.arena == arena.value, LeaderboardSnapshot.id.not_in(kept)
            )
        )
    log.info("leaderboard published", arena=arena.value, matches=count)
    return Snapshot(arena, now, count, data)


async def latest(platform: Platform, arena: Arena) -> Snapshot | None:
    """The most recent snapshot of ``arena``, if any."""
    async with platform.db.session() as session:
        row = await session.scalar(
            select(LeaderboardSnapshot)
            .where(LeaderboardSnapshot.arena == arena.value)
            .order_by(LeaderboardSnapshot.computed_at.desc(), LeaderboardSnapshot.id.desc())
            .limit(1)
        )
    if row is None:
        return None
    return Snapshot(arena, row.computed_at, row.match_count, row.data)


async def _latest_time(platform: Platform, arena: Arena) -> float | None:
    async with platform.db.session() as session:
        return await session.scalar(
            select(LeaderboardSnapshot.computed_at)
            .where(LeaderboardSnapshot.arena == arena.value)
            .order_by(LeaderboardSnapshot.computed_at.desc())
            .limit(1)
        )


async def view(
    platform: Platform,
    arena: str,
    *,
    entrant_type: str | None = None,
    fighter_class: str | None = None,
    role: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    """What ``GET /api/leaderboard`` answers: the latest snapshot, filtered, plus live ratings.

    With ``limit``, the published table (``fighters`` or ``agents``) is one page of it,
    from ``cursor`` on, and ``next_cursor`` says where the next page starts. ``live`` is
    the live table's first page (``limit`` rows, or :data:`LIVE_ROWS`), and
    ``live_next_cursor`` where ``live_table`` goes on.
    """
    try:
        chosen = Arena(arena)
    except ValueError:
        raise InvalidRequest("arena must be cage or edgearena") from None
    if chosen is Arena.CAGE and role is not None:
        raise InvalidRequest("role filters the edgearena leaderboard")
    if chosen is Arena.EDGEARENA and (entrant_type is not None or fighter_class is not None):
        raise InvalidRequest("entrant_type and class filter the cage leaderboard")
    snapshot = await latest(platform, chosen) or await recompute(platform, chosen)
    out: dict[str, Any] = {
        "arena": chosen.value,
        "computed_at": snapshot.computed_at,
        "match_count": snapshot.match_count,
        "filters": {"entrant_type": entrant_type, "class": fighter_class, "role": role},
    }
    if chosen is Arena.EDGEARENA:
        out |= filter_agents(snapshot.data, role=role)
        return _paged(out, "agents", snapshot.computed_at, limit, cursor)
    out |= filter_cage(snapshot.data, entrant_type=entrant_type, fighter_class=fighter_class)
    _paged(out, "fighters", snapshot.computed_at, limit, cursor)
    live = await live_table(
        platform, entrant_type=entrant_type, fighter_class=fighter_class, limit=limit or LIVE_ROWS
    )
    out["live"], out["live_next_cursor"] = live.items, live.next_cursor
    return out


def _paged(
    out: dict[str, Any], table: str, snapshot: float, limit: int | None, cursor: str | None
) -> dict[str, Any]:
    start = 0 if cursor is None else decode_position(cursor, snapshot)
    rows = out[table]
    end = len(rows) if limit is None else start + limit
    out[table] = rows[start:end]
    out["next_cursor"] = encode_position(snapshot, end) if end < len(rows) else None
    return out


async def _scored_matches(platform: Platform) -> list[tuple[str, str, Winner, str | None]]:
    """The rated matches: attacker, defender, result and what decided it."""
    query = select(
        Match.attacker_id, Match.defender_id, Match.status, Match.outcome, Match.decided_by
    ).where(Match.status == MatchStatus.SCORED, Match.kind == MatchKind.RATED, ~BASELINE_PLAYED)
    scored = []
    async with platform.db.session() as session:
        for row in await session.execute(query):
            result = result_of(row.status, row.outcome)
            if result is not None:
                scored.append((row.attacker_id, row.defender_id, result, row.decided_by))
    return scored


async def _edgearena_facts(platform: Platform) -> tuple[list[AgentFacts], list[TaskOutcome]]:
    agents_query = select(Agent.id, Agent.name, Agent.role, Agent.status, Agent.reputation).where(
        Agent.arena == Arena.EDGEARENA
    )
    tasks_query = select(Task.agent_id, Task.status, Task.latency_ms, Task.contribution).where(
        Task.agent_id.is_not(None), Task.status.in_(sorted(FINISHED))
    )
    async with platform.db.session() as session:
        agents = [
            AgentFacts(r.id, r.name, r.role or "", r.status, r.reputation)
            for r in await session.execute(agents_query)
        ]
        tasks = [
            TaskOutcome(r.agent_id, r.status, r.latency_ms, r.contribution)
            for r in await session.execute(tasks_query)
        ]
    return agents, tasks


@dataclass
class RatingsWorker:
    """Live ratings every tick; each arena republished when its snapshot is due.

    ``run_once`` does one round now (tests, CLI); ``run`` waits a tick, then
    does a round, until ``stop`` is set.
    """

    platform: Platform
    rounds: int = field(default=0, init=False)

    async def run_once(self) -> None:
        platform = self.platform
        await rate_pending(platform)
        interval = platform.settings.leaderboard_interval_s
        if interval > 0:
            now = platform.clock.now()
            for arena in Arena:
                last = await _latest_time(platform, arena)
                if last is None or now - last >= interval:
                    await recompute(platform, arena)
        self.rounds += 1

    async def run(self, stop: asyncio.Event) -> None:
        await every(self.platform.settings.ratings_interval_s, stop, self.run_once, "ratings round")
