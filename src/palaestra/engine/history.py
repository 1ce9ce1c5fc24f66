"""The roll-up job, as the scheduler (scaled out) and ``palaestra serve`` (embedded) run it."""

from __future__ import annotations

from palaestra.platform import Platform
from palaestra.store.rollups import roll_up

__all__ = ["roll_up_history"]


async def roll_up_history(platform: Platform, *, keep_raw_s: float | None = None) -> int:
    """Roll up the hours closed by now (``store.rollups``); how many were closed.

    ``keep_raw_s``: the raw rows' retention window, when raw rows are pruned; stale hours
    older than it keep their roll-ups rather than be recomputed from what is left.
    """
    return await roll_up(
        platform.db,
        platform.clock.now(),
        grace_s=platform.settings.rollup_grace_s,
        keep_raw_s=keep_raw_s,
    )
