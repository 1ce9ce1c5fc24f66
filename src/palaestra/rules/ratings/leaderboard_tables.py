"""Leaderboard tables as JSON-ready data: built from the fit (stored), then filtered (served).

Building is CPU work without I/O (it runs in a worker thread); filtering runs
per request. A stored cage table keeps, per fighter, its three intervals and
match counts, and the entrant-type summary for all fighters and for each
class, so that every filter the API offers is served without refitting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np

from palaestra.rules.cage.entrants import EntrantType
from palaestra.rules.ratings import bradley_terry as bt
from palaestra.rules.ratings.agent_stats import AgentFacts, TaskOutcome, rank_agents
from palaestra.rules.ratings.live import FighterRatings, Rating, live_score

__all__ = [
    "ENTRANT_TYPES",
    "FighterFacts",
    "build_cage",
    "build_edgearena",
    "filter_agents",
    "filter_cage",
    "live_rows",
]

#: The order entrant types are compared in (harness vs model vs house).
ENTRANT_TYPES: Final = tuple(EntrantType)
_ALL: Final = "all"


@dataclass(frozen=True, slots=True)
class FighterFacts:
    """What the tables show about a fighter besides its numbers."""

    fighter_id: str
    name: str
    entrant_type: EntrantType | None
    fighter_class: str | None
    status: str


def build_cage(
    fighters: Mapping[str, FighterFacts],
    records: Sequence[tuple[str, str, float]],
    *,
    resamples: int,
    seed: int,
    prior: bt.Prior | None = None,
) -> dict[str, Any]:
    """The published cage table: Bradley-Terry strengths with bootstrap intervals."""
    prior = prior or bt.Prior()
    ids, games = bt.Games.of(records)
    result = bt.bootstrap(games, resamples=resamples, seed=seed, prior=prior)
    attack_counts = np.bincount(games.attackers, minlength=len(ids))
    defence_counts = np.bincount(games.defenders, minlength=len(ids))
    facts = [fighters.get(i) or FighterFacts(i, i, None, None, "UNKNOWN") for i in ids]
    sides = {
        "overall": result.estimates(result.estimate.overall, result.overall),
        "attack": result.estimates(result.estimate.attack, result.attack),
        "defence": result.estimates(result.estimate.defence, result.defence),
    }
    rows = []
    for k, fact in enumerate(facts):
        row: dict[str, Any] = {
            "fighter_id": fact.fighter_id,
            "name": fact.name,
            "entrant_type": fact.entrant_type,
            "class": fact.fighter_class,
            "matches": {"attack": int(attack_counts[k]), "defence": int(defence_counts[k])},
        }
        for side, estimates in sides.items():
            row[side] = estimates[k].as_dict()
        # A side never played has no data behind it: its interval is unknown, not the prior.
        for side, count in (("attack", attack_counts[k]), ("defence", defence_counts[k])):
            if count == 0:
                row[side] = None
                row["overall"] = None
        rows.append(row)
    types = [f.entrant_type for f in facts]
    summaries = {_ALL: _summary(result, types)}
    for fighter_class in sorted({f.fighter_class for f in facts if f.fighter_class}):
        scoped = [f.entrant_type if f.fighter_class == fighter_class else None for f in facts]
        summaries[fighter_class] = _summary(result, scoped)
    return {
        "method": {
            "model": "bradley-terry, one attack and one defence strength per fighter",
            "draws": "half a win each",
            "identifiability": "mean zero on each side",
            "prior_sd": prior.strength_sd,
            "advantage_prior_sd": prior.advantage_sd,
            "intervals": "bootstrap percentile, matches resampled",
            "confidence": result.confidence,
            "resamples": resamples,
            "seed": seed,
            "rank": "1 + fighters whose overall interval lies wholly above",
        },
        "advantage": result.advantage_estimate().as_dict() if len(games) else None,
        "fighters": rows,
        "summaries": summaries,
    }


def _summary(result: bt.Bootstrap, labels: Sequence[str | None]) -> dict[str, Any]:
    groups = bt.group_estimates(result, labels, ENTRANT_TYPES)
    differences = bt.group_differences(result, labels, ENTRANT_TYPES)
    return {
        "groups": [
            {
                "group": g.group,
                "fighters": g.fighters,
                "overall": g.overall.as_dict(),
                "attack": g.attack.as_dict(),
                "defence": g.defence.as_dict(),
            }
            for g in groups
        ],
        "differences": [
            {
                "first": d.first,
                "second": d.second,
                "overall": d.overall.as_dict(),
                "attack": d.attack.as_dict(),
                "defence": d.defence.as_dict(),
            }
            for d in differences
        ],
    }


def filter_cage(
    data: Mapping[str, Any], *, entrant_type: str | None = None, fighter_class: str | None = None
) -> dict[str, Any]:
    """The stored table narrowed to a type and/or class, ranked again within what is left."""
    rows = [
        dict(row)
        for row in data.get("fighters", [])
        if (entrant_type is None or row["entrant_type"] == entrant_type)
        and (fighter_class is None or row["class"] == fighter_class)
    ]
    # A fighter with no overall interval (one side never played) has no rank, and comes last.
    rated = [row for row in rows if row["overall"]]
    low = np.array([r["overall"]["low"] for r in rated], dtype=float)
    high = np.array([r["overall"]["high"] for r in rated], dtype=float)
    for row in rows:
        row["rank"] = None
    for row, rank in zip(rated, bt.interval_ranks(low, high), strict=True):
        row["rank"] = int(rank)
    rows.sort(key=_cage_order)
    summaries = data.get("summaries", {})
    empty: dict[str, Any] = {"groups": [], "differences": []}
    summary = summaries.get(fighter_class or _ALL, empty)
    return {
        "method": data.get("method", {}),
        "advantage": data.get("advantage"),
        "fighters": rows,
        "summary": summary["groups"],
        "differences": summary["differences"],
    }


def _cage_order(row: Mapping[str, Any]) -> tuple[bool, int, float, str]:
    if row["rank"] is None:
        return True, 0, 0.0, str(row["name"])
    return False, int(row["rank"]), -float(row["overall"]["value"]), str(row["name"])


def live_rows(
    fighters: Sequence[FighterFacts], ratings: Mapping[str, FighterRatings]
) -> list[dict[str, Any]]:
    """The live table: ordered by the mean of the conservative estimates (mu - 3 sigma)."""
    rows: list[dict[str, Any]] = []
    for fact in fighters:
        rating = ratings.get(fact.fighter_id) or FighterRatings()
        rows.append(
            {
                "fighter_id": fact.fighter_id,
                "name": fact.name,
                "entrant_type": fact.entrant_type,
                "class": fact.fighter_class,
                "status": fact.status,
                "score": live_score(rating.attack, rating.defence),
                "attack": _live(rating.attack, asdict(rating.attack_record)),
                "defence": _live(rating.defence, asdict(rating.defence_record)),
            }
        )
    rows.sort(key=lambda r: (-float(r["score"]), str(r["name"]), str(r["fighter_id"])))
    for position, row in enumerate(rows, start=1):
        row["rank"] = position
    return rows


def _live(rating: Rating, record: dict[str, int]) -> dict[str, Any]:
    return {
        "mu": rating.mu,
        "sigma": rating.sigma,
        "conservative": rating.conservative,
        **record,
    }


def build_edgearena(agents: Sequence[AgentFacts], tasks: Sequence[TaskOutcome]) -> dict[str, Any]:
    """The edgearena table: agents per role, ranked by reputation."""
    return {
        "method": {
            "rank": "by reputation within each role",
            "validity": "succeeded / finished tasks, 95% Wilson interval",
            "latency": "p50 and p90 of finished tasks",
        },
        "agents": [asdict(row) for row in rank_agents(agents, tasks)],
    }


def filter_agents(data: Mapping[str, Any], *, role: str | None = None) -> dict[str, Any]:
    rows = [row for row in data.get("agents", []) if role is None or row["role"] == role]
    return {"method": data.get("method", {}), "agents": rows}
