"""cage.v1 matches: creating one with its secret material, and reading them back.

A match is refused unless both fighters are cage fighters, ACTIVE, not held,
distinct and not co-owned, and every harness among them has proven its
endpoint with the nonce challenge. An owner may only start matches in which
one of its own fighters plays, against another owner's fighter that consents
(:mod:`palaestra.rules.cage.challenges`: each of its turns spends what its owner pays
for, a model fighter's provider key above all); the admin may pair anyone.

Rated play is the arena's: the matchmaker's and the admin's matches are rated, an
owner's are friendlies. An owner may ask for a rated match only when the operator
enables owner-rated matches, against another owner's fighter that accepts rated
challenges, and within the cap of rated matches between the same two owners per
24 hours; otherwise the request is refused (403, or 429 past the cap).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import aliased

from palaestra.engine.accounts import Caller
from palaestra.engine.cage.entrants import executor_of
from palaestra.engine.cage.fighters import get_fighter
from palaestra.errors import Conflict, Forbidden, InvalidRequest, NotFound, TooManyRequests
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import CAGE_RULESET
from palaestra.rules.cage import EntrantType
from palaestra.rules.cage.challenges import Challenged, challenge_refusal
from palaestra.rules.cage.matchflow import MatchKind, MatchStatus
from palaestra.rules.cage.material import Material, draw_material
from palaestra.rules.quotas import Quota
from palaestra.rules.status import Status
from palaestra.store.models import Agent, Match, Turn
from palaestra.store.paging import Key, Page, keyset, page_of

__all__ = [
    "MatchTranscript",
    "create_match",
    "fighters_read_by",
    "get_match",
    "list_matches",
    "material_of",
]


_DAY = 86400.0


@dataclass(frozen=True, slots=True)
class MatchTranscript:
    """A match and its turns, in order."""

    match: Match
    turns: Sequence[Turn]

    @property
    def finished(self) -> bool:
        return MatchStatus(self.match.status).finished


def material_of(match: Match) -> Material:
    return Material.from_dict(match.material["secret"])


def _entrant(platform: Platform, fighter: Agent) -> dict[str, Any]:
    """The public facts about an entrant, as they stood when the match was made."""
    return {
        "fighter_id": fighter.id,
        "name": fighter.name,
        "entrant_type": fighter.entrant_type,
        "class": fighter.fighter_class,
        "sandbox_attested": fighter.sandbox_attested,
        "harness_name": fighter.harness_name,
        "executor": executor_of(platform.settings, fighter),
    }


def _check_ready(fighter: Agent) -> None:
    if fighter.status != Status.ACTIVE or fighter.hold:
        raise Conflict(f"fighter {fighter.id} is {fighter.status}, not ACTIVE")
    if fighter.entrant_type == EntrantType.HARNESS and fighter.endpoint_url is None:
        raise Conflict(f"fighter {fighter.id} has not proven its endpoint")


async def create_match(
    platform: Platform,
    caller: Caller,
    attacker_id: str,
    defender_id: str,
    *,
    deadline_ms: int | None = None,
    rated: bool | None = None,
) -> Match:
    """A new PENDING match with fresh secret material; the referee plays it.

    ``rated`` None: rated for the admin, a friendly for an owner (see the module)."""
    attacker = await get_fighter(platform, attacker_id)
    defender = await get_fighter(platform, defender_id)
    if attacker_id == defender_id:
        raise InvalidRequest("a fighter cannot fight itself")
    if attacker.owner_id == defender.owner_id:
        raise InvalidRequest("co-owned fighters cannot fight each other")
    if not caller.is_admin and caller.owner_id not in (attacker.owner_id, defender.owner_id):
        raise Forbidden("an owner can only start matches in which one of its fighters plays")
    for fighter in (attacker, defender):
        _check_ready(fighter)
    kind = await _kind(platform, caller, attacker, defender, rated)
    seed = secrets.randbits(62)
    now = platform.clock.now()
    match = Match(
        id=new_id(),
        attacker_id=attacker.id,
        defender_id=defender.id,
        requested_by=caller.owner_id,
        ruleset=CAGE_RULESET,
        kind=kind,
        status=MatchStatus.PENDING,
        seed=seed,
        material={
            "secret": draw_material(seed).as_dict(),
            "entrants": {
                "attacker": _entrant(platform, attacker),
                "defender": _entrant(platform, defender),
            },
        },
        deadline_ms=deadline_ms or platform.settings.cage_turn_deadline_ms,
        next_turn=1,
        created_at=now,
        updated_at=now,
    )
    async with platform.db.session() as session, session.begin():
        session.add(match)
    return match


async def _kind(
    platform: Platform, caller: Caller, attacker: Agent, defender: Agent, rated: bool | None
) -> MatchKind:
    if caller.is_admin:
        return MatchKind.FRIENDLY if rated is False else MatchKind.RATED
    kind = MatchKind.RATED if rated else MatchKind.FRIENDLY
    if kind is MatchKind.RATED and not platform.settings.owner_rated_matches:
        raise Forbidden(
            "rated matches are the arena's here: an owner's match is a friendly "
            "(the operator has not enabled owner-rated matches)"
        )
    opponent = defender if attacker.owner_id == caller.owner_id else attacker
    challenged = Challenged(opponent.id, opponent.friendly_challenges, opponent.rated_challenges)
    refusal = challenge_refusal(challenged, kind)
    if refusal is not None:
        raise Forbidden(refusal)
    if kind is MatchKind.RATED:
        await _check_pair_cap(platform, attacker.owner_id, defender.owner_id)
    return kind


async def _check_pair_cap(platform: Platform, first: str, second: str) -> None:
    """Rated matches owners started between these two owners in the last 24 hours."""
    cap = platform.settings.owner_rated_per_pair_per_day
    quota = Quota("rated matches between the same two owners", 0, cap, _DAY)
    now = platform.clock.now()
    seats = aliased(Agent), aliased(Agent)
    query = (
        select(Match.created_at)
        .join(seats[0], seats[0].id == Match.attacker_id)
        .join(seats[1], seats[1].id == Match.defender_id)
        .where(
            Match.kind == MatchKind.RATED,
            Match.requested_by.is_not(None),
            Match.created_at > now - _DAY,
            seats[0].owner_id.in_((first, second)),
            seats[1].owner_id.in_((first, second)),
        )
    )
    async with platform.db.session() as session:
        started = list(await session.scalars(query))
    refusal = quota.decide(0, started, now)
    if refusal is not None:
        raise TooManyRequests(f"Cap reached: {refusal.reason}", retry_after=refusal.retry_after_s)


async def get_match(platform: Platform, match_id: str) -> MatchTranscript:
    async with platform.db.session() as session:
        match = await session.get(Match, match_id)
        if match is None:
            raise NotFound(f"Match {match_id} not found")
        turns = (
            await session.scalars(select(Turn).where(Turn.match_id == match_id).order_by(Turn.turn))
        ).all()
    return MatchTranscript(match, turns)


async def fighters_read_by(platform: Platform, caller: Caller, match: Match) -> frozenset[str]:
    """The fighters of ``match`` whose failures ``caller`` reads in whole: the admin both, an
    owner its own."""
    fighters = (match.attacker_id, match.defender_id)
    if caller.is_admin:
        return frozenset(fighters)
    async with platform.db.session() as session:
        owned = await session.scalars(
            select(Agent.id).where(Agent.id.in_(fighters), Agent.owner_id == caller.owner_id)
        )
        return frozenset(owned)


async def list_matches(
    platform: Platform, limit: int = 50, cursor: str | None = None
) -> Page[Match]:
    """A page of matches, newest first."""
    async with platform.db.session() as session:
        query = keyset(select(Match), Match.created_at, Match.id, cursor, limit)
        rows = (await session.scalars(query)).all()
    return page_of(rows, limit, lambda match: Key(match.created_at, match.id))
