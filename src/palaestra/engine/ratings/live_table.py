"""The live table (OpenSkill, read now) a page at a time, behind a cursor of rank.

The table is ordered by score, best first, then by name and id; a page's cursor
is the place of its last row (its score and id: a fighter's name never changes),
and the next page holds the rows ranked below it.
While no rating moves, walking the pages sees every fighter exactly once; a
fighter whose rating moves during the walk is shown where it stands when its page
is read (a live table has no snapshot to hold still).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select

from palaestra.engine.ratings.live import live_ratings
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.leaderboard_tables import FighterFacts, live_rows
from palaestra.rules.status import Status
from palaestra.store.models import Agent
from palaestra.store.paging import FIRST_PAGE, Page, decode_ranked, encode_ranked

__all__ = ["cage_fighters", "live_table"]


async def cage_fighters(
    platform: Platform, *, entrant_type: str | None = None, fighter_class: str | None = None
) -> list[FighterFacts]:
    """Every fighter (or those of one entrant type and/or class), what the tables show of it."""
    query = select(
        Agent.id, Agent.name, Agent.entrant_type, Agent.fighter_class, Agent.status
    ).where(Agent.arena == Arena.CAGE.value)
    if entrant_type is not None:
        query = query.where(Agent.entrant_type == entrant_type)
    if fighter_class is not None:
        query = query.where(Agent.fighter_class == fighter_class)
    async with platform.db.session() as session:
        rows = (await session.execute(query)).all()
    return [FighterFacts(r.id, r.name, r.entrant_type, r.fighter_class, r.status) for r in rows]


#: Sorts after every name and id.
_LAST = "\U0010ffff"


def _place(row: dict[str, Any]) -> tuple[float, str, str]:
    return -float(row["score"]), str(row["name"]), str(row["fighter_id"])


def _cursor(row: dict[str, Any]) -> str:
    return encode_ranked(float(row["score"]), str(row["fighter_id"]))


def _page_of_ranked(
    rows: Sequence[dict[str, Any]], names: Mapping[str, str], limit: int, cursor: str | None
) -> Page[dict[str, Any]]:
    """The page of the ranked ``rows`` below ``cursor``, with the cursors around it."""
    start = 0
    if cursor is not None:
        score, fighter_id = decode_ranked(cursor)
        # A fighter outside the table (gone since, or a cursor made to the pattern): the
        # page starts below its value, after every row of that value.
        place = (
            (-score, names[fighter_id], fighter_id)
            if fighter_id in names
            else (-score, _LAST, _LAST)
        )
        start = bisect_right(rows, place, key=_place)
    end = start + limit
    following = _cursor(rows[end - 1]) if end < len(rows) else None
    before: str | None = None
    if start > 0:
        before = FIRST_PAGE if start <= limit else _cursor(rows[start - limit - 1])
    return Page(list(rows[start:end]), following, before)


async def live_table(
    platform: Platform,
    *,
    entrant_type: str | None = None,
    fighter_class: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Page[dict[str, Any]]:
    """A page of the live table of admitted fighters, narrowed by entrant type and/or class.

    Each row's ``rank`` is its place in the whole (filtered) table. A cursor of a fighter
    outside the table starts the page below its value."""
    fighters = [
        fighter
        for fighter in await cage_fighters(
            platform, entrant_type=entrant_type, fighter_class=fighter_class
        )
        if fighter.status != Status.PENDING
    ]
    rows = live_rows(fighters, await live_ratings(platform, [f.fighter_id for f in fighters]))
    names = {fighter.fighter_id: fighter.name for fighter in fighters}
    return _page_of_ranked(rows, names, limit, cursor)
