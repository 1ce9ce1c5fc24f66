"""``ratings``, ``retention`` and ``roll_up``: the arena's periodic upkeep, the same in
both modes.

- ``ratings``: one round of the ratings worker (live ratings, leaderboards);
- ``retention``: one pass of history retention (:mod:`palaestra.engine.history`), one
  runner at a time by its own lease; it ends at its next batch once the process stops;
- ``roll_up``: closes the hours of history whose grace passed (``store.rollups``); two at
  once take turns on an advisory lock, and the second finds the hours done.
"""

from __future__ import annotations

from palaestra.engine.history import roll_up_history
from palaestra.engine.history.retention import build_retention
from palaestra.engine.ratings.leaderboard import RatingsWorker
from palaestra.jobs.context import Work

__all__ = ["ratings", "retention", "roll_up"]


async def ratings(work: Work) -> None:
    await RatingsWorker(work.platform).run_once()


async def retention(work: Work) -> None:
    await build_retention(work.platform, work.stop).run_once()


async def roll_up(work: Work) -> int:
    return await roll_up_history(work.platform)
