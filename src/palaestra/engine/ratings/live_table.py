"""The live table (OpenSkill, read now) a page at a time, behind a cursor of rank.

The table is ordered by score, best first, then by name and id; a page's cursor
is the place of its last row (its score and id: a fighter's name never changes),
and the next page holds the rows ranked below it.
While no rating moves, walking the pages sees every fighter exactly once; a
fighter whose rating moves during the walk is shown where it stands when its page
is read (a live table has no snapshot to hold still).

The table is ranked again only when a fighter or a live rating changed: each process
keeps the ranked rows of the tables asked for (:class:`_Ranked`) with the state they
were read in (how many fighters and ratings there are and their latest write, as the
live pages' stamps are), and a read checks that state first. So a page costs what it
shows, not what every fighter's rating costs to read and rank.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from weakref import WeakKeyDictionary

from sqlalchemy import select

from palaestra.engine.ratings.live import live_ratings
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.ratings.leaderboard_tables import FighterFacts, live_rows
from palaestra.rules.status import Status
from palaestra.store.db import Database
from palaestra.store.models import Agent
from palaestra.store.paging import FIRST_PAGE, Page, decode_ranked, encode_ranked
from palaestra.store.stamps import RECENT_S, agents_written, ratings_written

__all__ = ["cage_fighters", "fighter_classes", "live_table"]

#: Filtered tables kept ranked per state of the fighters and their ratings.
_TABLES_KEPT: Final = 32
#: The fighters are read again at least this often, in seconds, as the live pages are
#: drawn again (``web.live.AGE_STEP_S``).
_REREAD_S: Final = 60.0


async def cage_fighters(platform: Platform) -> list[FighterFacts]:
    """Every fighter, what the tables show of it (they filter it themselves)."""
    query = select(
        Agent.id, Agent.name, Agent.entrant_type, Agent.fighter_class, Agent.status
    ).where(Agent.arena == Arena.CAGE)
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


@dataclass(slots=True)
class _Ranked:
    """Every fighter, as read while the fighters and their live ratings were in one state
    (``stamp``), and the tables ranked from them so far, by filters."""

    stamp: tuple[object, ...]
    fighters: list[FighterFacts]
    tables: OrderedDict[
        tuple[str | None, str | None], tuple[list[dict[str, Any]], dict[str, str]]
    ] = field(default_factory=OrderedDict)

    def table(
        self, ratings: Mapping[str, Any] | None, entrant_type: str | None, fighter_class: str | None
    ) -> tuple[list[dict[str, Any]], dict[str, str]] | None:
        """The ranked rows and names of the table the filters make; None while unranked
        and ``ratings`` not given."""
        key = (entrant_type, fighter_class)
        found = self.tables.get(key)
        if found is not None:
            self.tables.move_to_end(key)
            return found
        if ratings is None:
            return None
        fighters = [
            f
            for f in self.fighters
            if f.status != Status.PENDING
            and (entrant_type is None or f.entrant_type == entrant_type)
            and (fighter_class is None or f.fighter_class == fighter_class)
        ]
        found = live_rows(fighters, ratings), {f.fighter_id: f.name for f in fighters}
        self.tables[key] = found
        if len(self.tables) > _TABLES_KEPT:
            self.tables.popitem(last=False)
        return found


_ranked: WeakKeyDictionary[Database, _Ranked] = WeakKeyDictionary()


async def _current(platform: Platform) -> _Ranked:
    """The fighters as they stand, reread when one of them or a live rating changed, and
    at least every :data:`_REREAD_S` (a write committed more than ``RECENT_S`` after a
    later one leaves the stamp as it was: :mod:`palaestra.store.stamps`)."""
    now = platform.clock.now()
    stamp_query = select(
        *ratings_written(now - RECENT_S), *agents_written(now - RECENT_S, [Arena.CAGE])
    )
    async with platform.db.read() as connection:
        stamp = (*(await connection.execute(stamp_query)).one(), int(now // _REREAD_S))
    known = _ranked.get(platform.db)
    if known is not None and known.stamp == stamp:
        return known
    _ranked[platform.db] = ranked = _Ranked(stamp, await cage_fighters(platform))
    return ranked


async def fighter_classes(platform: Platform) -> set[str]:
    """The classes the fighters declare."""
    return {f.fighter_class for f in (await _current(platform)).fighters if f.fighter_class}


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
    ranked = await _current(platform)
    table = ranked.table(None, entrant_type, fighter_class)
    if table is None:
        ids = [f.fighter_id for f in ranked.fighters if f.status != Status.PENDING]
        table = ranked.table(await live_ratings(platform, ids), entrant_type, fighter_class)
        assert table is not None
    rows, names = table
    return _page_of_ranked(rows, names, limit, cursor)
