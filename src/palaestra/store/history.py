"""History read exactly and within bounds: the roll-ups of the closed hours (``store.rollups``)
plus the raw rows after the watermark, read through an index that starts with the agent
(or the fighter) and the time, so a read costs the days kept plus the last open hours,
never the whole history.

Every function reads the watermark first and bounds both halves by that value: a roll-up
job committing meanwhile changes neither half (its new hour and day lie past the bound of
the roll-ups read, and the raw rows it summed are still read from the tail).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.protocol.failures import CallFailure
from palaestra.rules.cage.matchmaking import pair_key
from palaestra.store.models import AgentEvent, Match, Meta, Run, Task
from palaestra.store.rollup_models import (
    DAY,
    HOUR,
    AgentRollup,
    ArenaRollup,
    MatchRollup,
    TaskRollup,
    histogram_counts,
    latency_bucket,
    percentile,
)
from palaestra.store.rollups import UNTIL_KEY

__all__ = [
    "Tally",
    "agent_failures",
    "failures_total",
    "fighter_matches",
    "latency_percentiles",
    "matches_total",
    "pairs_played",
    "runs_total",
    "tasks_by_status",
    "watermark",
]


@dataclass(frozen=True, slots=True)
class Tally:
    """How many rows, and the first and last time among them."""

    count: int = 0
    first: float | None = None
    last: float | None = None

    def __add__(self, other: Tally) -> Tally:
        firsts = [t for t in (self.first, other.first) if t is not None]
        lasts = [t for t in (self.last, other.last) if t is not None]
        return Tally(
            self.count + other.count,
            min(firsts) if firsts else None,
            max(lasts) if lasts else None,
        )


async def watermark(session: AsyncSession) -> float:
    """Until when the roll-ups are closed (unix seconds; 0 before any)."""
    value = await session.scalar(select(Meta.value).where(Meta.key == UNTIL_KEY))
    return float(value) if value is not None else 0.0


def _closed(model: Any, until: float) -> ColumnElement[bool]:
    """The roll-up rows before ``until``: whole days, then the hours of ``until``'s day."""
    day = int(until // DAY) * DAY
    return or_(
        and_(model.span == DAY, model.start <= int(until) - DAY),
        and_(model.span == HOUR, model.start >= day, model.start < int(until)),
    )


async def agent_failures(
    session: AsyncSession, agent_id: str, kinds: Sequence[str]
) -> dict[tuple[str, CallFailure], Tally]:
    """The agent's failed events of ``kinds``, by (kind, failure kind)."""
    until = await watermark(session)
    found: dict[tuple[str, CallFailure], Tally] = {}

    def add(kind: str, failure: CallFailure, seen: Tally) -> None:
        found[kind, failure] = found.get((kind, failure), Tally()) + seen

    rolled = (
        select(
            AgentRollup.kind,
            AgentRollup.failure,
            func.sum(AgentRollup.events),
            func.min(AgentRollup.first_at),
            func.max(AgentRollup.last_at),
        )
        .where(
            AgentRollup.agent_id == agent_id,
            _closed(AgentRollup, until),
            AgentRollup.outcome == "failure",
            AgentRollup.kind.in_(kinds),
        )
        .group_by(AgentRollup.kind, AgentRollup.failure)
    )
    for kind, failure, count, first, last in await session.execute(rolled):
        add(kind, CallFailure(failure), Tally(int(count), first, last))
    tail = (
        select(
            AgentEvent.kind,
            AgentEvent.reason,
            func.count(),
            func.min(AgentEvent.at),
            func.max(AgentEvent.at),
        )
        .where(
            AgentEvent.agent_id == agent_id,
            AgentEvent.at >= until,
            AgentEvent.outcome == "failure",
            AgentEvent.kind.in_(kinds),
        )
        .group_by(AgentEvent.kind, AgentEvent.reason)
    )
    for kind, reason, count, first, last in await session.execute(tail):
        add(kind, CallFailure.of(reason), Tally(int(count), first, last))
    return found


async def failures_total(session: AsyncSession, agent_id: str) -> int:
    """How many of the agent's events failed, of every kind."""
    until = await watermark(session)
    rolled = select(func.coalesce(func.sum(AgentRollup.events), 0)).where(
        AgentRollup.agent_id == agent_id,
        _closed(AgentRollup, until),
        AgentRollup.outcome == "failure",
    )
    tail = select(func.count()).where(
        AgentEvent.agent_id == agent_id, AgentEvent.at >= until, AgentEvent.outcome == "failure"
    )
    return int(await session.scalar(rolled) or 0) + int(await session.scalar(tail) or 0)


async def tasks_by_status(session: AsyncSession, agent_id: str) -> dict[str, Tally]:
    """The agent's tasks by status, with when the first and the last of each ended."""
    until = await watermark(session)
    seen: dict[str, Tally] = {}
    rolled = (
        select(
            TaskRollup.status,
            func.sum(TaskRollup.tasks),
            func.min(TaskRollup.first_ended),
            func.max(TaskRollup.last_ended),
        )
        .where(TaskRollup.agent_id == agent_id, _closed(TaskRollup, until))
        .group_by(TaskRollup.status)
    )
    ended = func.coalesce(Task.completed_at, Task.created_at)
    tail = (
        select(Task.status, func.count(), func.min(ended), func.max(ended))
        .where(Task.agent_id == agent_id, Task.created_at >= until)
        .group_by(Task.status)
    )
    for query in (rolled, tail):
        for status, count, first, last in await session.execute(query):
            seen[status] = seen.get(status, Tally()) + Tally(int(count), first, last)
    return seen


async def fighter_matches(session: AsyncSession, fighter_id: str) -> Counter[tuple[str, str, str]]:
    """The fighter's matches by (status, outcome or '', its side)."""
    until = await watermark(session)
    found: Counter[tuple[str, str, str]] = Counter()
    rolled = (
        select(
            MatchRollup.status, MatchRollup.outcome, MatchRollup.side, func.sum(MatchRollup.matches)
        )
        .where(MatchRollup.fighter_id == fighter_id, _closed(MatchRollup, until))
        .group_by(MatchRollup.status, MatchRollup.outcome, MatchRollup.side)
    )
    for status, outcome, side, count in await session.execute(rolled):
        found[status, outcome, side] += int(count)
    for side, column in (("attacker", Match.attacker_id), ("defender", Match.defender_id)):
        decided = func.coalesce(Match.outcome, "")
        tail = (
            select(Match.status, decided, func.count())
            .where(column == fighter_id, Match.created_at >= until)
            .group_by(Match.status, decided)
        )
        for status, won, count in await session.execute(tail):
            found[status, won, side] += int(count)
    return found


async def matches_total(session: AsyncSession) -> int:
    """How many matches there are."""
    until = await watermark(session)
    rolled = select(func.coalesce(func.sum(ArenaRollup.matches), 0)).where(
        _closed(ArenaRollup, until)
    )
    tail = select(func.count()).select_from(Match).where(Match.created_at >= until)
    return int(await session.scalar(rolled) or 0) + int(await session.scalar(tail) or 0)


async def runs_total(session: AsyncSession) -> int:
    """How many runs there are."""
    until = await watermark(session)
    rolled = select(func.coalesce(func.sum(ArenaRollup.runs), 0)).where(_closed(ArenaRollup, until))
    tail = select(func.count()).select_from(Run).where(Run.created_at >= until)
    return int(await session.scalar(rolled) or 0) + int(await session.scalar(tail) or 0)


async def pairs_played(session: AsyncSession) -> Counter[tuple[str, str]]:
    """How many matches each pair of fighters played, either way round (``pair_key``)."""
    until = await watermark(session)
    played: Counter[tuple[str, str]] = Counter()
    rolled = (
        select(MatchRollup.fighter_id, MatchRollup.opponent_id, func.sum(MatchRollup.matches))
        .where(MatchRollup.side == "attacker", _closed(MatchRollup, until))
        .group_by(MatchRollup.fighter_id, MatchRollup.opponent_id)
    )
    for attacker, defender, count in await session.execute(rolled):
        played[pair_key(attacker, defender)] += int(count)
    # Counted here, not grouped in SQL: grouped, SQLite would rather walk a fighter index
    # in order than read the recent range by its time index.
    tail = select(Match.attacker_id, Match.defender_id).where(Match.created_at >= until)
    for attacker, defender in await session.execute(tail):
        played[pair_key(attacker, defender)] += 1
    return played


async def latency_percentiles(
    session: AsyncSession,
    agent_id: str,
    kinds: Sequence[str],
    fractions: Sequence[float] = (0.5, 0.95, 0.99),
) -> list[float | None]:
    """The agent's latency percentiles over its events of ``kinds``: from the histograms of
    the closed hours and days and the latencies after them (each a bucket's upper bound)."""
    until = await watermark(session)
    histogram: Counter[int] = Counter()
    # A row a closed day (or hour of today) and kind, outcome and failure kind: added here.
    rolled = select(AgentRollup.latency_histogram).where(
        AgentRollup.agent_id == agent_id,
        _closed(AgentRollup, until),
        AgentRollup.kind.in_(kinds),
    )
    for text in await session.scalars(rolled):
        histogram.update(histogram_counts(text))
    tail = select(AgentEvent.latency_ms).where(
        AgentEvent.agent_id == agent_id, AgentEvent.at >= until, AgentEvent.kind.in_(kinds)
    )
    for latency in await session.scalars(tail):
        histogram[latency_bucket(latency)] += 1
    return [percentile(histogram.items(), fraction) for fraction in fractions]
