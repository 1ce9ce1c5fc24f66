"""What the live pages watch: one small read that changes whenever something they show does.

Read from the database, the one place every process writes to (the server, its
embedded workers, and with PostgreSQL the separate workers): a stamp kept in one
process's memory would miss the runs, turns and pings written by another. Each
part reads an index or a small table, so the read costs the same whatever the
number of rows the pages list:

- runs: the newest run's creation (``ix_runs_created``) and, among the running
  runs (``ix_runs_status``), how many there are and their latest write: a run
  started, stepped or finished moves one of them;
- matches: the same, on ``ix_matches_created`` and ``ix_matches_status``;
- agents: how many there are and their latest write (a small table: every
  registration, status change and heartbeat writes ``updated_at``);
- events: the latest agent event's id (the primary key): pings, dispatches, wizard
  steps;
- ratings: the latest live rating's write (one row per fighter) and the latest
  published leaderboard (``ix_leaderboard_snapshots_arena_at``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from palaestra.platform import Platform
from palaestra.rules.matchflow import OPEN_MATCH_STATUSES
from palaestra.rules.runflow import RunStatus
from palaestra.store.models import Agent, AgentEvent, Match, Run
from palaestra.store.rating_models import FighterRating, LeaderboardSnapshot

__all__ = ["Stamps", "read_stamps"]


@dataclass(frozen=True, slots=True)
class Stamps:
    """The state of each thing the live pages show, as a value that changes with it."""

    runs: tuple[object, ...]
    matches: tuple[object, ...]
    agents: tuple[object, ...]
    events: tuple[object, ...]
    ratings: tuple[object, ...]


async def read_stamps(platform: Platform) -> Stamps:
    """Every part's stamp, in one statement."""
    running = Run.status == RunStatus.RUNNING.value
    open_match = Match.status.in_(OPEN_MATCH_STATUSES)
    query = select(
        select(func.max(Run.created_at)).scalar_subquery(),
        select(func.count()).select_from(Run).where(running).scalar_subquery(),
        select(func.max(Run.updated_at)).where(running).scalar_subquery(),
        select(func.max(Match.created_at)).scalar_subquery(),
        select(func.count()).select_from(Match).where(open_match).scalar_subquery(),
        select(func.max(Match.updated_at)).where(open_match).scalar_subquery(),
        select(func.count()).select_from(Agent).scalar_subquery(),
        select(func.max(Agent.updated_at)).scalar_subquery(),
        select(func.max(AgentEvent.id)).scalar_subquery(),
        select(func.count()).select_from(FighterRating).scalar_subquery(),
        select(func.max(FighterRating.updated_at)).scalar_subquery(),
        select(func.max(LeaderboardSnapshot.computed_at)).scalar_subquery(),
    )
    async with platform.db.read() as connection:
        row = (await connection.execute(query)).one()
    values = tuple(row)
    return Stamps(
        runs=values[0:3],
        matches=values[3:6],
        agents=values[6:8],
        events=values[8:9],
        ratings=values[9:12],
    )
