"""Per-owner quotas on runs and matches: in flight at once and started per hour.

Checked where an owner starts one (the API); the admin, the matchmaker and the
command line (which acts as the admin) are exempt. A refusal is
:class:`~palaestra.errors.TooManyRequests` with the seconds until a place frees.
The check and the insert that follows are not one transaction: concurrent starts
may pass a quota by the few that raced, which bounds the load all the same.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute

from palaestra.engine.accounts import Caller
from palaestra.errors import TooManyRequests
from palaestra.platform import Platform
from palaestra.rules.matchflow import OPEN_MATCH_STATUSES
from palaestra.rules.quotas import Quota
from palaestra.rules.runflow import RunStatus
from palaestra.store.models import Match, Run

__all__ = ["check_match_quota", "check_run_quota"]

HOUR = 3600.0


async def check_run_quota(platform: Platform, caller: Caller) -> None:
    """Raise :class:`TooManyRequests` if the caller may not start a run now."""
    settings = platform.settings
    quota = Quota("runs", settings.owner_runs_in_flight, settings.owner_runs_per_hour, HOUR)
    if caller.is_admin or caller.owner_id is None:
        return
    open_runs = Run.status == RunStatus.RUNNING.value
    await _check(platform, quota, Run.owner_id, caller.owner_id, open_runs, Run.created_at)


async def check_match_quota(platform: Platform, caller: Caller) -> None:
    """Raise :class:`TooManyRequests` if the caller may not start a match now."""
    settings = platform.settings
    quota = Quota(
        "matches", settings.owner_matches_in_flight, settings.owner_matches_per_hour, HOUR
    )
    if caller.is_admin or caller.owner_id is None:
        return
    open_matches = Match.status.in_(OPEN_MATCH_STATUSES)
    await _check(
        platform, quota, Match.requested_by, caller.owner_id, open_matches, Match.created_at
    )


async def _check(
    platform: Platform,
    quota: Quota,
    owner_column: InstrumentedAttribute[str | None],
    owner_id: str,
    in_flight: object,
    created: InstrumentedAttribute[float],
) -> None:
    if not quota.in_flight and not quota.per_window:
        return
    now = platform.clock.now()
    table = owner_column.class_
    async with platform.db.session() as session:
        running = 0
        if quota.in_flight:
            running = (
                await session.scalar(
                    select(func.count())
                    .select_from(table)
                    .where(owner_column == owner_id, in_flight)  # type: ignore[arg-type]
                )
            ) or 0
        started: list[float] = []
        if quota.per_window:
            query = select(created).where(owner_column == owner_id, created > now - quota.window_s)
            started = list(await session.scalars(query))
    refusal = quota.decide(running, started, now)
    if refusal is not None:
        raise TooManyRequests(f"Quota reached: {refusal.reason}", retry_after=refusal.retry_after_s)
