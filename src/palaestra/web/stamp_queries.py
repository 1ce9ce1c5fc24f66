"""What the live pages watch: one small read that changes whenever something they show does.

Read from the database, the one place every process writes to (the server, its
embedded workers, and with PostgreSQL the separate workers): a stamp kept in one
process's memory would miss the runs, turns and pings written by another. Each
part reads an index, so the read costs the same whatever the number of rows the
pages list:

- runs: the newest run's creation (``ix_runs_created``) and, among the running
  runs (``ix_runs_running``), how many there are and their latest write: a run
  started, stepped or finished moves one of them;
- matches: the same, on ``ix_matches_created`` and ``ix_matches_open``;
- agents: the latest write of each arena's (``ix_agents_arena_updated``: every
  registration, status change and heartbeat writes ``updated_at``) and how many were
  written lately (:mod:`palaestra.store.stamps`);
- events: the latest agent event's id (the primary key): pings, dispatches, wizard
  steps;
- ratings: the latest live rating's write and how many were written lately
  (``ix_fighter_ratings_updated``), and the latest published leaderboard
  (``ix_leaderboard_snapshots_arena_at``).

Agents and ratings are never deleted, so their writes alone tell a change; none of these
parts counts a whole table, which would cost as much as the arena has agents.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ScalarSelect, func, select, text

from palaestra.platform import Platform
from palaestra.store.models import OPEN_MATCHES, RUNNING_RUNS, AgentEvent, Match, Run
from palaestra.store.rating_models import LeaderboardSnapshot
from palaestra.store.stamps import RECENT_S, agents_written, ratings_written

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
    running = text(RUNNING_RUNS)
    open_match = text(OPEN_MATCHES)
    since = platform.clock.now() - RECENT_S
    parts: dict[str, list[ScalarSelect[Any]]] = {
        "runs": [
            select(func.max(Run.created_at)).scalar_subquery(),
            select(func.count()).select_from(Run).where(running).scalar_subquery(),
            select(func.max(Run.updated_at)).where(running).scalar_subquery(),
        ],
        "matches": [
            select(func.max(Match.created_at)).scalar_subquery(),
            select(func.count()).select_from(Match).where(open_match).scalar_subquery(),
            select(func.max(Match.updated_at)).where(open_match).scalar_subquery(),
        ],
        "agents": agents_written(since),
        "events": [select(func.max(AgentEvent.id)).scalar_subquery()],
        "ratings": [
            *ratings_written(since),
            select(func.max(LeaderboardSnapshot.computed_at)).scalar_subquery(),
        ],
    }
    async with platform.db.read() as connection:
        row = iter((await connection.execute(select(*itertools.chain(*parts.values())))).one())
    return Stamps(**{name: tuple(itertools.islice(row, len(part))) for name, part in parts.items()})
