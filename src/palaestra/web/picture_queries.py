"""The rows behind the pictures: a fighter's ratings over its rated matches, an agent's
tasks by hour. Each read is bounded, and reads an index."""

from __future__ import annotations

import statistics
from typing import Final

from sqlalchemy import select

from palaestra.platform import Platform
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.store.models import Match, Task
from palaestra.store.rating_models import RatedMatch
from palaestra.web.pictures import HourBucket, RatingPoint

__all__ = ["HOURS", "RATED_MATCHES", "agent_hours", "rating_history"]

#: The rated matches a fighter's rating history shows on each side, the latest.
RATED_MATCHES: Final = 200
#: The hours an agent's activity shows, up to the current one.
HOURS: Final = 24


async def rating_history(
    platform: Platform, fighter_id: str, limit: int = RATED_MATCHES
) -> list[RatingPoint]:
    """The fighter's attack and defence ratings after each of its latest rated matches,
    in the order they were rated (``ix_matches_attacker``, ``ix_matches_defender``, then by
    primary key)."""
    points: list[RatingPoint] = []
    async with platform.db.read() as connection:
        for side, seat, mu, sigma in (
            (
                "attack",
                Match.attacker_id,
                RatedMatch.attack_mu_after,
                RatedMatch.attack_sigma_after,
            ),
            (
                "defence",
                Match.defender_id,
                RatedMatch.defence_mu_after,
                RatedMatch.defence_sigma_after,
            ),
        ):
            query = (
                select(RatedMatch.rated_at, mu, sigma)
                .join(Match, Match.id == RatedMatch.match_id)
                .where(seat == fighter_id, mu.is_not(None), sigma.is_not(None))
                .order_by(RatedMatch.rated_at.desc(), Match.finished_at.desc())
                .limit(limit)
            )
            rows = (await connection.execute(query)).all()
            points += [
                RatingPoint(at, side, m, s)
                for at, m, s in reversed(rows)
                if m is not None and s is not None  # (the query's filter, for the types)
            ]
    # Matches rated in one batch share a time: they stay in the order they finished.
    return sorted(points, key=lambda p: p.at)


async def agent_hours(
    platform: Platform, agent_id: str, now: float, hours: int = HOURS
) -> list[HourBucket]:
    """The agent's tasks begun in each of the last ``hours`` hours (the current one last):
    how many succeeded and failed, and their median latency. Read from its tasks
    (one range of ``ix_tasks_agent_created``); a roll-up by hour can answer the same later."""
    current = now - now % 3600
    since = current - (hours - 1) * 3600
    query = select(Task.created_at, Task.status, Task.latency_ms).where(
        Task.agent_id == agent_id, Task.created_at >= since
    )
    async with platform.db.read() as connection:
        rows = (await connection.execute(query)).all()
    ok = dict.fromkeys(_hours(since, hours), 0)
    bad = dict(ok)
    latencies: dict[float, list[float]] = {start: [] for start in ok}
    for created_at, status, latency_ms in rows:
        start = created_at - created_at % 3600
        if start not in ok:
            continue
        if status == TaskStatus.SUCCEEDED:
            ok[start] += 1
        elif status in (TaskStatus.FAILED, TaskStatus.TIMEOUT):
            bad[start] += 1
        else:
            continue  # under way, or voided (not the agent's doing)
        if latency_ms is not None:
            latencies[start].append(latency_ms)
    return [
        HourBucket(
            start,
            ok[start],
            bad[start],
            statistics.median(latencies[start]) if latencies[start] else None,
        )
        for start in ok
    ]


def _hours(since: float, hours: int) -> list[float]:
    return [since + i * 3600 for i in range(hours)]
