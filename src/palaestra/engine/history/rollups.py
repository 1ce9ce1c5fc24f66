"""The roll-up job, as the scheduler (scaled out) and ``palaestra serve`` (embedded) run it,
and the watermark that holds retention back from raw rows not yet summarised."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.platform import Platform
from palaestra.store.partitions import DAY_S
from palaestra.store.rollups import roll_up, rolled_up_until

__all__ = ["roll_up_history", "summarised_until"]


async def roll_up_history(platform: Platform) -> int:
    """Roll up the hours closed by now (``store.rollups``); how many were closed.

    Stale hours (a rejudged match's) older than the raw events' retention window keep
    their roll-ups rather than be recomputed from what retention left of their rows.
    """
    days = platform.settings.retention_events_days
    return await roll_up(
        platform.db,
        platform.clock.now(),
        grace_s=platform.settings.rollup_grace_s,
        keep_raw_s=days * DAY_S if days else None,
    )


async def summarised_until(session: AsyncSession) -> float:
    """The roll-ups' watermark in unix seconds: retention removes no raw row after it."""
    return (await rolled_up_until(session)).timestamp()
