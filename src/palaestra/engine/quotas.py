"""Per-owner quotas on runs and matches: in flight at once and started per hour.

Checked where an owner starts one (the API); the admin, the matchmaker and the
command line (which acts as the admin) are exempt. A refusal is
:class:`~palaestra.errors.TooManyRequests` with the seconds until a place frees.
The check and the insert that follows are not one transaction: concurrent starts
may pass a quota by the few that raced, which bounds the load all the same. The
check is one query, and none when the quota is off: it stands before every start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Boolean, ColumnElement, and_, bindparam, or_, select

from palaestra.engine.accounts import Caller
from palaestra.errors import TooManyRequests
from palaestra.platform import Platform
from palaestra.rules.cage.matchflow import OPEN_MATCH_STATUSES
from palaestra.rules.quotas import Quota
from palaestra.rules.runs.runflow import RunStatus
from palaestra.store.models import Match, Run

__all__ = ["QuotaUse", "check_match_quota", "check_run_quota", "quota_use"]

HOUR = 3600.0


def _counted(owner: Any, in_flight: ColumnElement[bool], created: Any) -> Any:
    """An owner's rows that count against a quota, each with its start time and whether it is
    in flight: those in flight and those started since ``since``. A quota that is off is
    given an impossible bound (no status, or no start after +inf)."""
    return select(created, in_flight).where(
        owner == bindparam("owner"),
        or_(and_(bindparam("in_flight", type_=Boolean), in_flight), created > bindparam("since")),
    )


_RUNS: Final = _counted(Run.owner_id, Run.status == RunStatus.RUNNING, Run.created_at)
_MATCHES: Final = _counted(
    Match.requested_by, Match.status.in_(OPEN_MATCH_STATUSES), Match.created_at
)


@dataclass(frozen=True, slots=True)
class QuotaUse:
    """How much of one quota an owner uses: in flight now, and started in the last hour
    (a limit of 0: unlimited)."""

    name: str
    in_flight: int
    in_flight_limit: int
    last_hour: int
    per_hour_limit: int


async def quota_use(platform: Platform, owner_id: str) -> list[QuotaUse]:
    """The owner's use of its runs' and its matches' quotas, counted as the checks count."""
    settings = platform.settings
    now = platform.clock.now()
    params = {"owner": owner_id, "in_flight": True, "since": now - HOUR}
    shown = []
    async with platform.db.read() as connection:
        for name, counted, in_flight_limit, per_hour_limit in (
            ("runs", _RUNS, settings.owner_runs_in_flight, settings.owner_runs_per_hour),
            (
                "matches",
                _MATCHES,
                settings.owner_matches_in_flight,
                settings.owner_matches_per_hour,
            ),
        ):
            rows = (await connection.execute(counted, params)).all()
            running = sum(1 for _, open_ in rows if open_)
            started = sum(1 for created, _ in rows if created > now - HOUR)
            shown.append(QuotaUse(name, running, in_flight_limit, started, per_hour_limit))
    return shown


async def check_run_quota(platform: Platform, caller: Caller) -> None:
    """Raise :class:`TooManyRequests` if the caller may not start a run now."""
    settings = platform.settings
    if caller.is_admin or caller.owner_id is None:
        return
    quota = Quota("runs", settings.owner_runs_in_flight, settings.owner_runs_per_hour, HOUR)
    await _check(platform, quota, _RUNS, caller.owner_id)


async def check_match_quota(platform: Platform, caller: Caller) -> None:
    """Raise :class:`TooManyRequests` if the caller may not start a match now."""
    settings = platform.settings
    if caller.is_admin or caller.owner_id is None:
        return
    quota = Quota(
        "matches", settings.owner_matches_in_flight, settings.owner_matches_per_hour, HOUR
    )
    await _check(platform, quota, _MATCHES, caller.owner_id)


async def _check(platform: Platform, quota: Quota, counted: Any, owner_id: str) -> None:
    if not quota.in_flight and not quota.per_window:
        return
    now = platform.clock.now()
    params = {
        "owner": owner_id,
        "in_flight": bool(quota.in_flight),
        "since": now - quota.window_s if quota.per_window else float("inf"),
    }
    async with platform.db.read() as connection:
        rows = (await connection.execute(counted, params)).all()
    running = sum(1 for _, open_ in rows if open_) if quota.in_flight else 0
    started = [created for created, _ in rows] if quota.per_window else []
    refusal = quota.decide(running, started, now)
    if refusal is not None:
        raise TooManyRequests(f"Quota reached: {refusal.reason}", retry_after=refusal.retry_after_s)
