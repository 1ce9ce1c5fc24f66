"""Stamps of the tables that are written but never deleted from (agents, live ratings):
small reads that change whenever a row is written, at the cost of an index lookup however
many rows there are (a count of the whole table would cost as much as the arena is large).

A stamp is the latest write and the number of writes from a recent time on: a write that
commits after a later one (two transactions, two processes) leaves the latest time as
it was, but changes the count, when it commits within :data:`RECENT_S`. One committed
later still is seen at the next write, and within a minute in any case: the live pages
are drawn again every minute, and the live table reads its fighters again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from sqlalchemy import ScalarSelect, func, select

from palaestra.protocol.constants import Arena
from palaestra.store.models import Agent
from palaestra.store.rating_models import FighterRating

__all__ = ["RECENT_S", "agents_written", "ratings_written"]

#: How far back the stamps count writes, besides taking the latest: a write that commits
#: after a later one (two transactions, two processes) leaves the latest time as it was,
#: but changes the count, as long as it commits within this many seconds.
RECENT_S: Final = 10.0


def agents_written(since: float, arenas: Iterable[Arena] = Arena) -> list[ScalarSelect[Any]]:
    """The stamp of the agents of ``arenas``: each arena's latest write, and how many
    were written from ``since`` on (``ix_agents_arena_updated``, an arena at a time)."""
    values = [arena.value for arena in arenas]
    latest = [select(func.max(Agent.updated_at)).where(Agent.arena == value) for value in values]
    recent = select(func.count()).where(Agent.arena.in_(values), Agent.updated_at >= since)
    return [query.scalar_subquery() for query in (*latest, recent)]


def ratings_written(since: float) -> list[ScalarSelect[Any]]:
    """The live ratings' stamp: the latest write, and how many from ``since`` on."""
    latest = select(func.max(FighterRating.updated_at))
    recent = select(func.count()).where(FighterRating.updated_at >= since)
    return [latest.scalar_subquery(), recent.scalar_subquery()]
