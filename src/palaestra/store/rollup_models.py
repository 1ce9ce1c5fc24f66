"""The roll-up tables: history summed per closed hour and day (``store.rollups`` fills them).

- ``agent_rollups``: an agent's events of one hour or day (``span``), by kind, outcome and
  failure kind (:class:`~palaestra.protocol.failures.CallFailure`, from the reason line,
  for failures): counts, the first and last time, and in one column the histogram of
  their latencies (:data:`LATENCY_BOUNDS_MS`) that percentiles are read from (histograms
  add up across hours; percentiles would not). A day's rows are bounded by the agents'
  kinds, outcomes and failure kinds, however many events and latencies they had.
- ``task_rollups``: an agent's tasks created in one span, by status, with their
  contributions and when the first and the last of them ended.
- ``match_rollups``: a fighter's matches created in one span, by opponent, side, kind,
  status and outcome (each match twice: once for each of its fighters).
- ``arena_rollups``: the runs and the matches created in one span, arena-wide (the
  overview's counts: a row a span, however many fighters met).
- ``rollup_stale``: hours whose matches changed after they were rolled up (a rejudged
  outcome): the job recomputes them.

A span is keyed by its start (unix seconds, a multiple of its length).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from typing import Final

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.store.base import ID, Base

__all__ = [
    "DAY",
    "HOUR",
    "LATENCY_BOUNDS_MS",
    "NO_LATENCY",
    "AgentRollup",
    "ArenaRollup",
    "MatchRollup",
    "RollupStale",
    "TaskRollup",
    "histogram_counts",
    "histogram_text",
    "latency_bucket",
    "percentile",
]

HOUR: Final = 3600
DAY: Final = 86400
#: Upper bounds (inclusive, ms) of the latency histogram's buckets, log-spaced: eight per
#: decade from 1 ms to 100 s (each about 1.33 times the last, so a percentile read from
#: the histogram is within a third of the true one); a last bucket holds the rest, and
#: bucket -1 the events without a latency.
LATENCY_BOUNDS_MS: Final = tuple(float(f"{10 ** (k / 8):.4g}") for k in range(41))
NO_LATENCY: Final = -1


def _agent() -> ForeignKey:
    # An agent deleted takes its roll-ups, as it takes its events and matches.
    return ForeignKey("agents.id", ondelete="CASCADE")


class AgentRollup(Base):
    """An agent's events of one kind, outcome and failure kind in one span, with the
    histogram of their latencies."""

    __tablename__ = "agent_rollups"

    agent_id: Mapped[str] = mapped_column(ID, _agent(), primary_key=True)
    span: Mapped[int] = mapped_column(Integer, primary_key=True)  # HOUR | DAY
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32), primary_key=True)
    failure: Mapped[str] = mapped_column(String(32), primary_key=True)  # '' unless a failure
    events: Mapped[int] = mapped_column(BigInteger)
    latency_ms_sum: Mapped[float] = mapped_column(Float)
    first_at: Mapped[float] = mapped_column(Float)
    last_at: Mapped[float] = mapped_column(Float)
    #: The events by latency bucket (:func:`histogram_text`): its counts add up to ``events``.
    latency_histogram: Mapped[str] = mapped_column(Text)

    __table_args__ = (Index("ix_agent_rollups_span_start", "span", "start"),)


class TaskRollup(Base):
    """An agent's tasks of one status created in one span, with their contributions."""

    __tablename__ = "task_rollups"

    agent_id: Mapped[str] = mapped_column(ID, _agent(), primary_key=True)
    span: Mapped[int] = mapped_column(Integer, primary_key=True)
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    tasks: Mapped[int] = mapped_column(BigInteger)
    contributed: Mapped[int] = mapped_column(BigInteger)  # tasks with a contribution
    contribution_sum: Mapped[float] = mapped_column(Float)
    #: When the first and the last of them ended (completed, or else created).
    first_ended: Mapped[float] = mapped_column(Float)
    last_ended: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_task_rollups_span_start", "span", "start"),)


class MatchRollup(Base):
    """A fighter's matches against one opponent, on one side, of one kind, status and
    outcome, created in one span."""

    __tablename__ = "match_rollups"

    fighter_id: Mapped[str] = mapped_column(ID, _agent(), primary_key=True)
    span: Mapped[int] = mapped_column(Integer, primary_key=True)
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    opponent_id: Mapped[str] = mapped_column(ID, _agent(), primary_key=True)
    side: Mapped[str] = mapped_column(String(16), primary_key=True)  # attacker | defender
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32), primary_key=True)  # '' while none
    matches: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_match_rollups_span_start", "span", "start"),
        Index("ix_match_rollups_opponent", "opponent_id"),
    )


class ArenaRollup(Base):
    """The runs and the matches created in one span: counts that their later steps (a run
    ending, a match scored or rejudged) never change."""

    __tablename__ = "arena_rollups"

    span: Mapped[int] = mapped_column(Integer, primary_key=True)
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    runs: Mapped[int] = mapped_column(BigInteger)
    matches: Mapped[int] = mapped_column(BigInteger)


class RollupStale(Base):
    """An hour whose matches changed after it was rolled up: recomputed by the next job."""

    __tablename__ = "rollup_stale"

    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)


def latency_bucket(latency_ms: float | None) -> int:
    """The histogram bucket of ``latency_ms``, as the roll-ups' SQL computes it."""
    if latency_ms is None:
        return NO_LATENCY
    return bisect_left(LATENCY_BOUNDS_MS, latency_ms)


def histogram_text(counts: Mapping[int, int]) -> str:
    """A histogram as ``agent_rollups`` stores it: ``bucket:count`` pairs, the buckets
    ascending, joined by commas (``"-1:2,12:3"``); buckets without events left out."""
    return ",".join(f"{bucket}:{counts[bucket]}" for bucket in sorted(counts) if counts[bucket])


def histogram_counts(text: str) -> dict[int, int]:
    """The ``{bucket: count}`` of a histogram written as :func:`histogram_text` writes it."""
    counts: dict[int, int] = {}
    for pair in filter(None, text.split(",")):
        bucket, count = pair.split(":")
        counts[int(bucket)] = counts.get(int(bucket), 0) + int(count)
    return counts


def percentile(histogram: Iterable[tuple[int, int]], fraction: float) -> float | None:
    """The upper bound of the bucket holding the ``fraction`` quantile of ``(bucket, count)``
    pairs (``inf`` past the last bound); ``None`` for no latency at all."""
    counts: dict[int, int] = {}
    for bucket, count in histogram:
        if bucket != NO_LATENCY and count:
            counts[bucket] = counts.get(bucket, 0) + int(count)
    total = sum(counts.values())
    if not total:
        return None
    rank = max(1, -(-fraction * total // 1))  # the ceil(fraction * total)-th smallest
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            break
    return LATENCY_BOUNDS_MS[bucket] if bucket < len(LATENCY_BOUNDS_MS) else float("inf")
