"""The SQL of the roll-ups: the statements that sum an hour's raw rows into each table's
hourly rows, and a day's hourly rows into its day row (:mod:`palaestra.store.rollups`
runs them).

Built from this module's constants only; values are bound parameters. The statements of
``agent_rollups`` write and read its histograms with each store's own functions (joining
strings, reading JSON), so they are built for a store; both write the same text.
"""

# ruff: noqa: S608

from __future__ import annotations

from typing import Final

from palaestra.protocol.failures import REASON_PREFIXES
from palaestra.store.rollup_models import DAY, HOUR, LATENCY_BOUNDS_MS, NO_LATENCY

__all__ = [
    "BUCKET_SQL",
    "FAILURE_SQL",
    "TABLES",
    "day_sql",
    "histogram_pairs_sql",
    "histogram_sql",
    "hour_sql",
]


def _failure_sql() -> str:
    cases = " ".join(
        f"WHEN substr(coalesce(reason, ''), 1, {len(prefix)}) = '{prefix}' THEN '{kind.value}'"
        for prefix, kind in REASON_PREFIXES
    )
    return f"CASE WHEN outcome <> 'failure' THEN '' {cases} ELSE 'other' END"


def _bucket_sql() -> str:
    cases = " ".join(
        f"WHEN latency_ms <= {bound!r} THEN {i}" for i, bound in enumerate(LATENCY_BOUNDS_MS)
    )
    return (
        f"CASE WHEN latency_ms IS NULL THEN {NO_LATENCY} {cases} ELSE {len(LATENCY_BOUNDS_MS)} END"
    )


#: An event's failure kind ('' unless its outcome is a failure), from its reason line.
FAILURE_SQL: Final = _failure_sql()
#: An event's latency bucket (:func:`~palaestra.store.rollup_models.latency_bucket`).
BUCKET_SQL: Final = _bucket_sql()
_AGENT_KEYS: Final = "agent_id, kind, outcome, failure"


def histogram_sql(dialect: str, bucket: str = "bucket", count: str = "n") -> str:
    """The aggregate writing the ``bucket:count`` pairs of a group's rows as one histogram
    (:func:`~palaestra.store.rollup_models.histogram_text`). PostgreSQL orders the pairs
    itself; SQLite (before 3.44) joins them in the order its rows come, which the callers
    give by reading an ordered subquery."""
    pair = f"CAST({bucket} AS VARCHAR) || ':' || CAST({count} AS VARCHAR)"
    if dialect == "postgresql":
        return f"string_agg({pair}, ',' ORDER BY {bucket})"
    return f"group_concat({pair}, ',')"


def histogram_pairs_sql(dialect: str, histogram: str) -> str:
    """A FROM item of a histogram's pairs, as ``key`` (the bucket) and ``value`` (its
    count): the text made a JSON object (``-1:2,12:3`` as ``{"-1":2,"12":3}``), which
    both stores read as a table."""
    as_json = f"""'{{"' || replace(replace({histogram}, ',', ',"'), ':', '":') || '}}'"""
    if dialect == "postgresql":
        return f"json_each_text(CAST({as_json} AS json))"
    return f"json_each({as_json})"


def _agent_hour_sql(dialect: str) -> str:
    # The events summed by latency bucket first, then each group's buckets into one row.
    by_bucket = (
        f"SELECT agent_id, kind, outcome, {FAILURE_SQL} AS failure, {BUCKET_SQL} AS bucket, "
        "count(*) AS n, coalesce(sum(latency_ms), 0) AS ms, min(at) AS first_at, "
        "max(at) AS last_at FROM agent_events WHERE at >= :lo AND at < :hi "
        "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
    )
    return (
        f"INSERT INTO agent_rollups ({_AGENT_KEYS}, span, start, events, latency_ms_sum, "
        "first_at, last_at, latency_histogram) "
        f"SELECT {_AGENT_KEYS}, {HOUR}, CAST(:start AS BIGINT), sum(n), sum(ms), min(first_at), "
        f"max(last_at), {histogram_sql(dialect)} FROM ({by_bucket}) AS b GROUP BY {_AGENT_KEYS}"
    )


def _agent_day_sql(dialect: str) -> str:
    # The day's hour rows read twice: summed, and split into their buckets' counts.
    totals = (
        f"SELECT {_AGENT_KEYS}, sum(events) AS events, sum(latency_ms_sum) AS ms, "
        f"min(first_at) AS first_at, max(last_at) AS last_at FROM agent_rollups "
        f"WHERE span = {HOUR} AND start >= :day AND start < :end GROUP BY {_AGENT_KEYS}"
    )
    by_bucket = (
        "SELECT r.agent_id, r.kind, r.outcome, r.failure, CAST(p.key AS INTEGER) AS bucket, "
        "sum(CAST(p.value AS BIGINT)) AS n "
        f"FROM agent_rollups AS r, {histogram_pairs_sql(dialect, 'r.latency_histogram')} AS p "
        f"WHERE r.span = {HOUR} AND r.start >= :day AND r.start < :end "
        "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
    )
    histograms = (
        f"SELECT {_AGENT_KEYS}, {histogram_sql(dialect)} AS histogram "
        f"FROM ({by_bucket}) AS b GROUP BY {_AGENT_KEYS}"
    )
    joined = " AND ".join(f"h.{key} = t.{key}" for key in _AGENT_KEYS.split(", "))
    return (
        f"INSERT INTO agent_rollups ({_AGENT_KEYS}, span, start, events, latency_ms_sum, "
        "first_at, last_at, latency_histogram) "
        f"SELECT t.agent_id, t.kind, t.outcome, t.failure, {DAY}, CAST(:day AS BIGINT), "
        "t.events, t.ms, t.first_at, t.last_at, h.histogram "
        f"FROM ({totals}) AS t JOIN ({histograms}) AS h ON {joined}"
    )


#: The statements that sum an hour's raw rows into the other tables' roll-up rows.
_HOUR_SQL: Final[dict[str, tuple[str, ...]]] = {
    "task_rollups": (
        (
            "INSERT INTO task_rollups (agent_id, span, start, status, tasks, contributed, "
            "contribution_sum, first_ended, last_ended) "
            f"SELECT agent_id, {HOUR}, CAST(:start AS BIGINT), status, count(*), "
            "count(contribution), coalesce(sum(contribution), 0), "
            "min(coalesce(completed_at, created_at)), "
            "max(coalesce(completed_at, created_at)) "
            "FROM tasks WHERE created_at >= :lo AND created_at < :hi AND agent_id IS NOT NULL "
            "GROUP BY agent_id, status"
        ),
    ),
    "match_rollups": tuple(
        "INSERT INTO match_rollups (fighter_id, span, start, opponent_id, side, kind, status, "
        "outcome, matches) "
        f"SELECT {me}, {HOUR}, CAST(:start AS BIGINT), {them}, '{side}', kind, status, "
        "coalesce(outcome, ''), "
        "count(*) FROM matches WHERE created_at >= :lo AND created_at < :hi "
        f"GROUP BY {me}, {them}, kind, status, coalesce(outcome, '')"
        for me, them, side in (
            ("attacker_id", "defender_id", "attacker"),
            ("defender_id", "attacker_id", "defender"),
        )
    ),
    "arena_rollups": (
        (
            "INSERT INTO arena_rollups (span, start, runs, matches) "
            f"SELECT {HOUR}, CAST(:start AS BIGINT), r.n, m.n "
            "FROM (SELECT count(*) AS n FROM runs WHERE created_at >= :lo AND created_at < :hi) r, "
            "(SELECT count(*) AS n FROM matches WHERE created_at >= :lo AND created_at < :hi) m "
            "WHERE r.n + m.n > 0"
        ),
    ),
}
#: The other tables' day rows: their keys, the sums of their hours, and the columns summed.
_SUMS: Final = {
    "task_rollups": (
        ("agent_id", "status"),
        "sum(tasks), sum(contributed), sum(contribution_sum), min(first_ended), max(last_ended)",
        "tasks, contributed, contribution_sum, first_ended, last_ended",
    ),
    "match_rollups": (
        ("fighter_id", "opponent_id", "side", "kind", "status", "outcome"),
        "sum(matches)",
        "matches",
    ),
    "arena_rollups": ((), "sum(runs), sum(matches)", "runs, matches"),
}
TABLES: Final = ("agent_rollups", *_HOUR_SQL)


def hour_sql(table: str, dialect: str) -> tuple[str, ...]:
    """The statements that sum an hour's raw rows into ``table``'s hour rows, on the store
    ``dialect`` names (``sqlite`` or ``postgresql``)."""
    if table == "agent_rollups":
        return (_agent_hour_sql(dialect),)
    return _HOUR_SQL[table]


def day_sql(table: str, dialect: str) -> str:
    """The statement that sums a day's hour rows of ``table`` into its day rows."""
    if table == "agent_rollups":
        return _agent_day_sql(dialect)
    keys, sums, columns = _SUMS[table]
    listed = "".join(f"{key}, " for key in keys)
    # Without keys the sum is one row even over no hours: a day without rows has none.
    grouped = f"GROUP BY {', '.join(keys)}" if keys else "HAVING count(*) > 0"
    return (
        f"INSERT INTO {table} ({listed}span, start, {columns}) "
        f"SELECT {listed}{DAY}, CAST(:day AS BIGINT), {sums} FROM {table} "
        f"WHERE span = {HOUR} AND start >= :day AND start < :end {grouped}"
    )
