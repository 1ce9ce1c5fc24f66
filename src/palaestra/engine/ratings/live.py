"""Live ratings: every scored match applied once, in the order matches finished.

A marker row (``rated_matches``) is written in the same transaction as the
ratings it moves, so re-processing a match changes nothing. Two workers
racing on the same batch cannot both apply it: the second one's marker
insert fails, its transaction rolls back, and it simply finds nothing left
to do next time. The marker keeps the ratings before and after the match,
which the dataset export publishes as "the ratings at the time".

A match whose outcome the ratings do not know is marked with no result and
never applied; so is a match in which the house baseline played a turn
(:data:`BASELINE_PLAYED`): its canned lines are no contestant's, and its results
must never count as the house model's (``rules.producers``). Voided matches
never qualify: only SCORED ones are read, and of those only rated ones (a
friendly never moves a rating). A verdict changed after the match was rated
reaches the published leaderboard at its next recomputation; the live ratings
keep the first verdict.

Each pass reads only the matches that finished since the newest one rated, less
:data:`LOOKBACK_S` (``ix_matches_finished``): that mark (in ``meta``) moves with
the markers, in their transaction, so a tick costs what finished since the last,
not every scored match of the arena's history. A match is written SCORED with its
``finished_at`` in one transaction, so none can appear behind the mark by more
than a commit's delay; the first pass, with no mark yet, reads them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import structlog
from sqlalchemy import Select, exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.platform import Platform
from palaestra.rules.cage.matchflow import MatchKind, MatchStatus
from palaestra.rules.cage.outcome import Winner
from palaestra.rules.producers import Producer
from palaestra.rules.ratings import MU, SIGMA, FighterRatings, Rating, Record, rate, result_of
from palaestra.rules.ratings.live import Skill
from palaestra.store.models import Match, Meta, Turn
from palaestra.store.rating_models import FighterRating, RatedMatch

__all__ = ["BASELINE_PLAYED", "live_ratings", "rate_pending"]

log = structlog.get_logger(__name__)

BATCH_SIZE = 500

#: How far behind the newest rated match a pass still looks for one not rated: far more
#: than a commit takes, or than two hosts' clocks may differ.
LOOKBACK_S: Final = 3600.0

#: The ``meta`` key of the newest rated match's ``finished_at``.
RATED_THROUGH: Final = "ratings.rated_through"

#: Whether the house baseline played a turn of the match: such a match is never rated.
BASELINE_PLAYED: Final = exists().where(
    Turn.match_id == Match.id, Turn.producer == Producer.HOUSE_BASELINE
)


async def rate_pending(platform: Platform, *, batch_size: int = BATCH_SIZE) -> int:
    """Apply every scored, not yet rated match; return how many were marked."""
    total = 0
    while True:
        marked = await _rate_batch(platform, batch_size)
        total += marked
        if marked < batch_size:
            return total


async def _rate_batch(platform: Platform, limit: int) -> int:
    now = platform.clock.now()
    try:
        async with platform.db.session() as session, session.begin():
            mark = await session.get(Meta, RATED_THROUGH)
            rows = (await session.execute(_unrated(mark, limit))).all()
            if not rows:
                return 0
            _move_mark(session, mark, max(r.finished_at or 0.0 for r in rows))
            fighters = {r.attacker_id for r in rows} | {r.defender_id for r in rows}
            ratings = await _load(session, fighters, lock=not platform.db.is_sqlite)
            for row in rows:
                result = result_of(row.status, row.outcome)
                if result is None or row.baseline_played:
                    if result is None:
                        log.warning("scored match with an unknown outcome", match_id=row.id)
                    session.add(RatedMatch(match_id=row.id, result=None, rated_at=now))
                    continue
                attack = _row(session, ratings, row.attacker_id, Skill.ATTACK, now)
                defence = _row(session, ratings, row.defender_id, Skill.DEFENCE, now)
                before = Rating(attack.mu, attack.sigma), Rating(defence.mu, defence.sigma)
                after = rate(*before, result)
                _apply(attack, after[0], result, won=Winner.ATTACKER, now=now)
                _apply(defence, after[1], result, won=Winner.DEFENDER, now=now)
                session.add(
                    RatedMatch(
                        match_id=row.id,
                        result=result.value,
                        attack_mu_before=before[0].mu,
                        attack_sigma_before=before[0].sigma,
                        defence_mu_before=before[1].mu,
                        defence_sigma_before=before[1].sigma,
                        attack_mu_after=after[0].mu,
                        attack_sigma_after=after[0].sigma,
                        defence_mu_after=after[1].mu,
                        defence_sigma_after=after[1].sigma,
                        rated_at=now,
                    )
                )
    except IntegrityError:
        # Another worker rated (part of) this batch first; what it did stands.
        log.info("rating batch raced another worker; skipped")
        return 0
    return len(rows)


def _unrated(
    mark: Meta | None, limit: int
) -> Select[str, str, str, MatchStatus, str | None, float | None, bool]:
    """The rated matches scored and not yet applied, oldest first, from the mark on."""
    query = (
        select(
            Match.id,
            Match.attacker_id,
            Match.defender_id,
            Match.status,
            Match.outcome,
            Match.finished_at,
            BASELINE_PLAYED.label("baseline_played"),
        )
        .outerjoin(RatedMatch, RatedMatch.match_id == Match.id)
        .where(
            Match.status == MatchStatus.SCORED,
            Match.kind == MatchKind.RATED,
            RatedMatch.match_id.is_(None),
        )
        .order_by(Match.finished_at, Match.id)
        .limit(limit)
    )
    if mark is None:
        return query
    return query.where(Match.finished_at >= float(mark.value) - LOOKBACK_S)


def _move_mark(session: AsyncSession, mark: Meta | None, finished_at: float) -> None:
    """Move the newest rated match's mark forward to ``finished_at`` (never back)."""
    if mark is None:
        session.add(Meta(key=RATED_THROUGH, value=repr(finished_at)))
    elif finished_at > float(mark.value):
        mark.value = repr(finished_at)


async def _load(
    session: AsyncSession, fighters: set[str], *, lock: bool
) -> dict[tuple[str, str], FighterRating]:
    found: dict[tuple[str, str], FighterRating] = {}
    ids = sorted(fighters)
    for start in range(0, len(ids), 500):
        query = (
            select(FighterRating)
            .where(FighterRating.fighter_id.in_(ids[start : start + 500]))
            .order_by(FighterRating.fighter_id, FighterRating.side)
        )
        if lock:
            query = query.with_for_update()
        for rating in await session.scalars(query):
            found[(rating.fighter_id, rating.side)] = rating
    return found


def _row(
    session: AsyncSession,
    ratings: dict[tuple[str, str], FighterRating],
    fighter_id: str,
    side: Skill,
    now: float,
) -> FighterRating:
    key = (fighter_id, side)
    rating = ratings.get(key)
    if rating is None:
        rating = FighterRating(
            fighter_id=fighter_id,
            side=side,
            mu=MU,
            sigma=SIGMA,
            matches=0,
            wins=0,
            draws=0,
            losses=0,
            updated_at=now,
        )
        session.add(rating)
        ratings[key] = rating
    return rating


def _apply(row: FighterRating, new: Rating, result: Winner, *, won: Winner, now: float) -> None:
    row.mu, row.sigma = new.mu, new.sigma
    row.matches += 1
    if result is Winner.DRAW:
        row.draws += 1
    elif result is won:
        row.wins += 1
    else:
        row.losses += 1
    row.updated_at = now


async def live_ratings(
    platform: Platform, fighter_ids: Iterable[str] | None = None
) -> dict[str, FighterRatings]:
    """The live ratings of the given fighters (all rated fighters when ``None``)."""
    query = select(FighterRating)
    wanted = None if fighter_ids is None else sorted(set(fighter_ids))
    rows: list[FighterRating] = []
    async with platform.db.session() as session:
        if wanted is None:
            rows = list(await session.scalars(query))
        else:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                rows.extend(await session.scalars(query.where(FighterRating.fighter_id.in_(chunk))))
    parts: dict[str, dict[str, FighterRating]] = {}
    for row in rows:
        parts.setdefault(row.fighter_id, {})[row.side] = row
    out = {}
    for fighter_id, sides in parts.items():
        attack, defence = sides.get(Skill.ATTACK), sides.get(Skill.DEFENCE)
        out[fighter_id] = FighterRatings(
            attack=_rating(attack),
            defence=_rating(defence),
            attack_record=_record(attack),
            defence_record=_record(defence),
        )
    return out


def _rating(row: FighterRating | None) -> Rating:
    return Rating() if row is None else Rating(row.mu, row.sigma)


def _record(row: FighterRating | None) -> Record:
    return Record() if row is None else Record(row.matches, row.wins, row.draws, row.losses)
