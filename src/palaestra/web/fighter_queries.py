"""A fighter's page: what it is, its record over every match, and its matches a page at a time."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import select

from palaestra.engine.cage.reading import FighterRead
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage.matchflow import MatchStatus
from palaestra.store.history import fighter_matches
from palaestra.store.models import Agent
from palaestra.store.paging import Page
from palaestra.web.list_queries import matches_page
from palaestra.web.queries import AgentView, MatchRow

__all__ = ["FighterPage", "fighter_page", "owned_fighters"]


@dataclass(frozen=True, slots=True)
class FighterPage:
    fighter: AgentView
    profile: FighterRead  # what the API shows of it
    model: str | None
    matches: Page[MatchRow]  # newest first, a page at a time
    record: dict[str, int]  # won, lost, drawn, voided: over all its matches


async def fighter_page(
    platform: Platform, fighter_id: str, cursor: str | None = None
) -> FighterPage | None:
    """The fighter's page, its matches from ``cursor`` on; ``None`` for no such fighter."""
    async with platform.db.session() as session:
        fighter = await session.get(Agent, fighter_id)
        if fighter is None or fighter.arena != Arena.CAGE:
            return None
        row = AgentView.of(fighter)
        model = (fighter.provider or {}).get("model") if fighter.provider else None
    return FighterPage(
        fighter=row,
        profile=FighterRead.model_validate(fighter),
        model=str(model) if model else None,
        matches=await matches_page(platform, cursor, fighter_id=fighter_id),
        record=await _record(platform, fighter_id),
    )


async def _record(platform: Platform, fighter_id: str) -> dict[str, int]:
    tally: Counter[str] = Counter(won=0, lost=0, drawn=0, voided=0)
    async with platform.db.session() as session:
        counted = await fighter_matches(session, fighter_id)  # roll-ups and the tail
    for (status, outcome, side), count in counted.items():
        if status == MatchStatus.VOIDED:
            tally["voided"] += count
        elif outcome == "draw":
            tally["drawn"] += count
        elif outcome in ("attacker", "defender"):
            tally["won" if outcome == side else "lost"] += count
    return dict(tally)


async def owned_fighters(platform: Platform, owner_id: str) -> list[tuple[str, str]]:
    """The owner's fighters, (id, name) by name: those it may send into a match."""
    query = (
        select(Agent.id, Agent.name)
        .where(Agent.owner_id == owner_id, Agent.arena == Arena.CAGE.value)
        .order_by(Agent.name)
    )
    async with platform.db.read() as connection:
        return [(row.id, row.name) for row in await connection.execute(query)]
