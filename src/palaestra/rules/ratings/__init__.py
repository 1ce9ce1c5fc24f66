"""Ratings and the leaderboard tables, pure.

- ``live``: OpenSkill live ratings, one update per scored match;
- ``bradley_terry`` (with its Newton ``solver``): the published fit and its intervals;
- ``head_to_head``: the attacker-by-defender grid;
- ``agent_stats``: the edgearena table; ``leaderboard_tables``: the tables as data.

``__all__`` holds what other packages use; the rest is imported from its module.
"""

from __future__ import annotations

from palaestra.rules.ratings.agent_stats import FINISHED, AgentFacts, TaskOutcome
from palaestra.rules.ratings.head_to_head import head_to_head
from palaestra.rules.ratings.leaderboard_tables import (
    ENTRANT_TYPES,
    FighterFacts,
    build_cage,
    build_edgearena,
    filter_agents,
    filter_cage,
    live_rows,
)
from palaestra.rules.ratings.live import (
    BETA,
    MU,
    SIGMA,
    FighterRatings,
    Rating,
    Record,
    rate,
    result_of,
)

__all__ = [
    "BETA",
    "ENTRANT_TYPES",
    "FINISHED",
    "MU",
    "SIGMA",
    "AgentFacts",
    "FighterFacts",
    "FighterRatings",
    "Rating",
    "Record",
    "TaskOutcome",
    "build_cage",
    "build_edgearena",
    "filter_agents",
    "filter_cage",
    "head_to_head",
    "live_rows",
    "rate",
    "result_of",
]
