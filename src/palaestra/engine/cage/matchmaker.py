"""The matchmaker: keeps cage.v1 matches flowing among eligible fighters.

Each round reads the eligible fighters (see :mod:`palaestra.rules.cage.matchmaking`),
their live ratings, how many open matches each is in and how often each pair
has met, asks the pure selection for the most uncertain pairings, and
creates both seat orders of each through ``create_match``, the referee's
entry point: an async callable ``(attacker_id, defender_id)`` that makes a
PENDING match or raises :class:`~palaestra.errors.PalaestraError` to refuse
it (a refused match is logged and skipped; the round goes on).

Matchmaking can be switched off by setting (``matchmaking_enabled``) and
paused at runtime (a flag in the ``meta`` table, so every process and
restart sees it): :func:`set_paused`, behind ``POST /api/matchmaking/pause``
and ``palaestra matchmaking --pause``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from sqlalchemy import func, select

from palaestra.engine.accounts import Caller
from palaestra.engine.cage.entrants import house_plays_baseline
from palaestra.engine.cage.matches import create_match
from palaestra.engine.loops import every
from palaestra.engine.ratings.live import live_ratings
from palaestra.errors import PalaestraError
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage import EntrantType
from palaestra.rules.cage.matchflow import OPEN_MATCH_STATUSES
from palaestra.rules.cage.matchmaking import EligibleFighter, eligible, select_pairings
from palaestra.rules.ratings import FighterRatings
from palaestra.rules.status import Status
from palaestra.store.history import pairs_played
from palaestra.store.models import Agent, Match, Meta

__all__ = [
    "CreateMatch",
    "Matchmaker",
    "MatchmakingState",
    "is_paused",
    "matchmaking_state",
    "set_paused",
    "through_referee",
]

log = structlog.get_logger(__name__)

CreateMatch = Callable[[str, str], Awaitable[object]]
_PAUSED_KEY = "matchmaking_paused"


def through_referee(
    platform: Platform, wake: Callable[[], None] | None = None
) -> Callable[[str, str], Awaitable[str]]:
    """The referee's ``create_match``, as the arena itself (the one place the arena makes a
    match), returning its id; ``wake`` nudges a local referee."""
    arena = Caller(owner_id=None, is_admin=True)

    async def create(attacker_id: str, defender_id: str) -> str:
        match = await create_match(platform, arena, attacker_id, defender_id)
        if wake is not None:
            wake()
        return match.id

    return create


@dataclass(frozen=True, slots=True)
class MatchmakingState:
    enabled: bool
    paused: bool
    open_matches: int

    @property
    def scheduling(self) -> bool:
        return self.enabled and not self.paused


async def is_paused(platform: Platform) -> bool:
    async with platform.db.session() as session:
        row = await session.get(Meta, _PAUSED_KEY)
    return row is not None and row.value == "1"


async def set_paused(platform: Platform, paused: bool) -> MatchmakingState:
    """Pause or resume matchmaking for every process; matches already made play on."""
    async with platform.db.session() as session, session.begin():
        row = await session.get(Meta, _PAUSED_KEY)
        if row is None:
            session.add(Meta(key=_PAUSED_KEY, value="1" if paused else "0"))
        else:
            row.value = "1" if paused else "0"
    return await matchmaking_state(platform)


async def matchmaking_state(platform: Platform) -> MatchmakingState:
    async with platform.db.session() as session:
        open_matches = await session.scalar(
            select(func.count()).select_from(Match).where(Match.status.in_(OPEN_MATCH_STATUSES))
        )
    return MatchmakingState(
        enabled=platform.settings.matchmaking_enabled,
        paused=await is_paused(platform),
        open_matches=int(open_matches or 0),
    )


@dataclass
class Matchmaker:
    """Creates matches. ``run_once`` does one round now (tests, CLI); ``run`` loops."""

    platform: Platform
    create_match: CreateMatch

    async def run_once(self) -> list[tuple[str, str]]:
        """One round; returns the (attacker, defender) matches created."""
        platform = self.platform
        settings = platform.settings
        if not settings.matchmaking_enabled or await is_paused(platform):
            return []
        entrants, open_total, played = await self._read()
        room = settings.matchmaking_max_matches - open_total
        pairings = select_pairings(
            entrants,
            max_per_fighter=settings.matchmaking_max_per_fighter,
            limit=room // 2,
            played=played,
        )
        created: list[tuple[str, str]] = []
        for pairing in pairings:
            for attacker, defender in pairing.matches:
                try:
                    await self.create_match(attacker, defender)
                except PalaestraError as exc:
                    log.info("match refused", attacker=attacker, defender=defender, reason=str(exc))
                    continue
                created.append((attacker, defender))
        if created:
            log.info("matches scheduled", matches=len(created))
        return created

    async def _read(self) -> tuple[list[EligibleFighter], int, dict[tuple[str, str], int]]:
        query = select(
            Agent.id,
            Agent.owner_id,
            Agent.status,
            Agent.hold,
            Agent.entrant_type,
            Agent.endpoint_url,
        ).where(Agent.arena == Arena.CAGE, Agent.status == Status.ACTIVE, Agent.hold.is_(False))
        open_query = select(Match.attacker_id, Match.defender_id).where(
            Match.status.in_(OPEN_MATCH_STATUSES)
        )
        # A match the house baseline plays is never rated (rules.producers): scheduling it
        # would only make matches that tell the ratings nothing.
        baseline = house_plays_baseline(self.platform.settings)
        async with self.platform.db.session() as session:
            fighters = [
                r
                for r in await session.execute(query)
                if eligible(r.status, r.hold, r.entrant_type, r.endpoint_url)
                and not (baseline and r.entrant_type == EntrantType.HOUSE)
            ]
            busy: Counter[str] = Counter()
            open_total = 0
            for attacker, defender in await session.execute(open_query):
                busy[attacker] += 1
                busy[defender] += 1
                open_total += 1
            # Every match ever played, by pair: the roll-ups and the open hours' rows.
            played = await pairs_played(session)
        ratings = await live_ratings(self.platform, [f.id for f in fighters])
        entrants = []
        for fighter in fighters:
            rating = ratings.get(fighter.id) or FighterRatings()
            entrants.append(
                EligibleFighter(
                    fighter.id, fighter.owner_id, rating.attack, rating.defence, busy[fighter.id]
                )
            )
        return entrants, open_total, dict(played)

    async def run(self, stop: asyncio.Event) -> None:
        """A round every ``matchmaking_interval_s`` (the first one after one interval)."""
        await every(
            self.platform.settings.matchmaking_interval_s, stop, self.run_once, "matchmaking round"
        )
