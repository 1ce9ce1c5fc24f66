"""Ratings: live OpenSkill ratings per match, and the published leaderboards.

- ``live``: every scored match applied once, in order;
- ``leaderboard``: recompute, store and read the published tables;
- ``live_table``: the live table a page at a time.
"""

from __future__ import annotations

from palaestra.engine.ratings.leaderboard import RatingsWorker, Snapshot, latest, recompute, view
from palaestra.engine.ratings.live import (
    live_ratings,
    rate_pending,
)
from palaestra.engine.ratings.live_table import live_table

__all__ = [
    "RatingsWorker",
    "Snapshot",
    "latest",
    "live_ratings",
    "live_table",
    "rate_pending",
    "recompute",
    "view",
]
