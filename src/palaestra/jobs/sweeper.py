"""The sweeper: finds the work dead workers left behind, and kicks the job that moves it on.

It only reads and kicks; the jobs it kicks decide from the database whether
there is anything to do, so a sweep that kicks live work only wastes a
little time. What it looks for:

- open matches whose current turn's lease has run out (its worker died
  mid-turn: the referee re-sends the turn with the same idempotency key and
  payload), or that have no current turn and have not moved for a sweep
  interval (the job that should have played it was lost);
- runs that are due (a task of theirs came due, or the kick that should
  have stepped them was lost) and not leased: one ``step_runs`` job takes
  them.
"""

from __future__ import annotations

from sqlalchemy import and_, or_, select

from palaestra.engine.cage.turns import LEASE_GRACE_S
from palaestra.engine.runs.stepper import BATCH
from palaestra.jobs.kicks import Kicks
from palaestra.platform import Platform
from palaestra.rules.matchflow import OPEN_MATCH_STATUSES, MatchStatus, TurnStatus
from palaestra.rules.runflow import RunStatus
from palaestra.store.models import Match, Run, Turn

__all__ = ["due_runs", "orphaned_matches", "pending_matches", "sweep"]


async def orphaned_matches(platform: Platform, now: float, stall_s: float) -> list[str]:
    """Open matches nobody is playing: an expired turn lease, or no turn and no move lately."""
    query = (
        select(
            Match.id,
            Match.deadline_ms,
            Match.updated_at,
            Turn.status,
            Turn.started_at,
        )
        .outerjoin(Turn, and_(Turn.match_id == Match.id, Turn.turn == Match.next_turn))
        .where(Match.status.in_(OPEN_MATCH_STATUSES))
        .order_by(Match.created_at)
    )
    found = []
    async with platform.db.session() as session:
        for row in await session.execute(query):
            if row.status is None:
                if row.updated_at <= now - stall_s:
                    found.append(row.id)
            elif row.status == TurnStatus.RUNNING.value:
                lease = row.deadline_ms / 1000 + LEASE_GRACE_S
                if row.started_at + lease <= now:
                    found.append(row.id)
    return found


async def pending_matches(platform: Platform) -> list[str]:
    """Matches created and not started."""
    query = (
        select(Match.id).where(Match.status == MatchStatus.PENDING.value).order_by(Match.created_at)
    )
    async with platform.db.session() as session:
        return list((await session.scalars(query)).all())


async def sweep(platform: Platform, kicks: Kicks) -> dict[str, int]:
    """Kick a job for every piece of orphaned work; return how many of each kind."""
    now = platform.clock.now()
    stall = platform.settings.sweep_interval_s
    matches = await orphaned_matches(platform, now, stall)
    for match_id in matches:
        await kicks.kick_turn(match_id)
    runs = await due_runs(platform, now)
    if runs:
        await kicks.kick_step()
    return {"matches": len(matches), "runs": runs}


async def due_runs(platform: Platform, now: float) -> int:
    """How many RUNNING runs are due and not leased (the first batch's worth at most)."""
    free = or_(Run.lease_until.is_(None), Run.lease_until <= now)
    query = (
        select(Run.id)
        .where(Run.status == RunStatus.RUNNING.value, Run.due_at <= now, free)
        .limit(BATCH)
    )
    async with platform.db.engine.connect() as connection:
        return len((await connection.execute(query)).all())
