"""Re-judging stored cage.v1 matches with the current judge (``palaestra rejudge``).

Every SCORED match (or the ones named) is read with its turns, judged again by
``rules.cage.rejudge``, and, unless it is a dry run, written back: the defender turns' findings
and, where the outcome changed, the match's outcome and ``decided_by``. One transaction per
batch of matches. A match the new verdicts cannot decide is reported and left alone. The
live ratings keep the verdict they applied; the published leaderboard follows the new one at
its next recomputation (``engine.ratings.live``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.cage.matches import material_of
from palaestra.platform import Platform
from palaestra.rules.cage.matchflow import MatchStatus, TurnStatus
from palaestra.rules.cage.rejudge import PlayedTurn, RejudgeChange, Rejudged, rejudge
from palaestra.store.models import Match, Turn
from palaestra.store.rollups import mark_stale, recompute_marked

__all__ = ["MatchRejudged", "rejudge_matches"]

BATCH_SIZE = 200


@dataclass(frozen=True, slots=True)
class MatchRejudged:
    """One match judged again: what it recorded, and what the judge says now."""

    match_id: str
    outcome: str | None
    decided_by: str | None
    now: Rejudged


async def rejudge_matches(
    platform: Platform,
    *,
    apply: bool,
    match_ids: Sequence[str] | None = None,
    batch_size: int = BATCH_SIZE,
) -> list[MatchRejudged]:
    """Every scored match (or those of ``match_ids``) judged again, in id order; written
    back when ``apply``."""
    done: list[MatchRejudged] = []
    after = ""
    while True:
        async with platform.db.session() as session, session.begin():
            query = select(Match).where(Match.status == MatchStatus.SCORED, Match.id > after)
            if match_ids is not None:
                query = query.where(Match.id.in_(list(match_ids)))
            matches = list(await session.scalars(query.order_by(Match.id).limit(batch_size)))
            if not matches:
                return done
            batch = [await _rejudged(session, match) for match in matches]
            if apply:
                await _write(session, batch, platform.clock.now())
                # The roll-ups of the hours whose outcomes changed, recomputed by their job.
                created = {match.id: match.created_at for match in matches}
                await mark_stale(
                    session,
                    [
                        created[item.match_id]
                        for item in batch
                        if item.now.verdict is RejudgeChange.CHANGED
                    ],
                )
        if apply:  # the marked hours now, rather than at the roll-up job's next run
            await recompute_marked(platform.db, platform.clock.now())
        done += batch
        after = matches[-1].id


async def _rejudged(session: AsyncSession, match: Match) -> MatchRejudged:
    turns = await session.scalars(select(Turn).where(Turn.match_id == match.id).order_by(Turn.turn))
    played = [
        PlayedTurn(t.turn, t.status == TurnStatus.FAILED, t.message, t.findings or {})
        for t in turns
    ]
    now = rejudge(material_of(match), played, match.outcome, match.decided_by)
    return MatchRejudged(match.id, match.outcome, match.decided_by, now)


async def _write(session: AsyncSession, batch: Sequence[MatchRejudged], now: float) -> None:
    for item in batch:
        if item.now.verdict is RejudgeChange.UNDECIDABLE:
            continue
        for turn, findings in item.now.findings.items():
            await session.execute(
                update(Turn)
                .where(Turn.match_id == item.match_id, Turn.turn == turn)
                .values(findings=findings)
            )
        if item.now.verdict is RejudgeChange.CHANGED:
            await session.execute(
                update(Match)
                .where(Match.id == item.match_id)
                .values(outcome=item.now.outcome, decided_by=item.now.decided_by, updated_at=now)
            )
