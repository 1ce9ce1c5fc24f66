"""Response bodies of the leaderboard and matchmaking endpoints (also their OpenAPI schemas)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from palaestra.rules.ratings.agent_stats import AgentRow

__all__ = [
    "CageRow",
    "DifferenceRow",
    "GroupRow",
    "Interval",
    "LeaderboardOut",
    "LiveRow",
    "MatchmakingOut",
    "PublishedOut",
]


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Interval(_Out):
    """A strength in log-odds with its 95% bootstrap interval."""

    value: float
    low: float
    high: float


class SideCounts(_Out):
    attack: int
    defence: int


class CageRow(_Out):
    """A fighter in the published (Bradley-Terry) table.

    ``rank`` is 1 + the number of fighters whose overall interval lies wholly
    above this one's. A side never played has no interval (``null``), and
    then neither has ``overall`` nor ``rank``: such fighters come last.
    """

    rank: int | None
    fighter_id: str
    name: str
    entrant_type: str | None
    fighter_class: str | None = Field(alias="class")
    matches: SideCounts
    overall: Interval | None
    attack: Interval | None
    defence: Interval | None


class LiveRating(_Out):
    """An OpenSkill rating (``conservative`` = mu - 3 sigma) and its record on that side."""

    mu: float
    sigma: float
    conservative: float
    matches: int
    wins: int
    draws: int
    losses: int


class LiveRow(_Out):
    """A fighter in the live table, ordered by ``score``: the mean of its conservative estimates."""

    rank: int
    fighter_id: str
    name: str
    entrant_type: str | None
    fighter_class: str | None = Field(alias="class")
    status: str
    score: float
    attack: LiveRating
    defence: LiveRating


class GroupRow(_Out):
    """Mean strengths of the fighters of one entrant type, with intervals."""

    group: str
    fighters: int
    overall: Interval
    attack: Interval
    defence: Interval


class DifferenceRow(_Out):
    """``first`` minus ``second``: the difference of their mean strengths, with intervals."""

    first: str
    second: str
    overall: Interval
    attack: Interval
    defence: Interval


class LeaderboardOut(_Out):
    """The latest published leaderboard of one arena, filtered, with its computation time.

    cage: ``fighters`` (published), ``summary`` and ``differences`` (entrant
    types compared), ``advantage`` (log-odds of the average attacker beating
    the average defender) and ``live`` (OpenSkill, read now). edgearena:
    ``agents``. ``match_count`` is the scored matches (cage) or finished
    tasks (edgearena) behind the snapshot.
    """

    arena: str
    computed_at: float
    match_count: int
    filters: dict[str, str | None]
    method: dict[str, Any]
    advantage: Interval | None = None
    fighters: list[CageRow] = Field(default_factory=list)
    summary: list[GroupRow] = Field(default_factory=list)
    differences: list[DifferenceRow] = Field(default_factory=list)
    live: list[LiveRow] = Field(default_factory=list)
    # The rules' rows, as ranked: the table is published in the shape it is computed in.
    agents: list[AgentRow] = Field(default_factory=list)
    next_cursor: str | None = Field(
        default=None,
        description="With limit: the cursor of the published table's next page (fighters or "
        "agents), null on its last page.",
    )
    live_next_cursor: str | None = Field(
        default=None,
        description="cage: ``live`` is the live table's first page (limit rows, 200 without "
        "limit); this cursor continues it in GET /api/leaderboard/live, null when it is whole.",
    )


class PublishedOut(_Out):
    """A freshly computed snapshot."""

    arena: str
    computed_at: float
    match_count: int


class MatchmakingOut(_Out):
    """Whether the matchmaker schedules matches now."""

    enabled: bool
    paused: bool
    scheduling: bool
    open_matches: int
