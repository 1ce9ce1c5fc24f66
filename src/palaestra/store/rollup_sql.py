"""The SQL of the roll-ups: the statements that sum an hour's raw rows into each table's
hourly rows, and a day's hourly rows into its day row (:mod:`palaestra.store.rollups`
runs them).

Built from this module's constants only; values are bound parameters.
"""

# ruff: noqa: S608

from __future__ import annotations

from typing import Final

from palaestra.protocol.failures import REASON_PREFIXES
from palaestra.store.rollup_models import DAY, HOUR, LATENCY_BOUNDS_MS, NO_LATENCY

__all__ = ["HOUR_SQL", "SUMS", "TABLES", "day_sql"]


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


#: The statements that sum an hour's raw rows into each table's roll-up rows.
HOUR_SQL: Final[dict[str, tuple[str, ...]]] = {
    "agent_rollups": (
        (
            "INSERT INTO agent_rollups (agent_id, span, start, kind, outcome, failure, bucket, "
            "events, latency_ms_sum, first_at, last_at) "
            f"SELECT agent_id, {HOUR}, CAST(:start AS BIGINT), kind, outcome, {_failure_sql()}, "
            f"{_bucket_sql()}, "
            "count(*), coalesce(sum(latency_ms), 0), min(at), max(at) "
            "FROM agent_events WHERE at >= :lo AND at < :hi GROUP BY 1, 4, 5, 6, 7"
        ),
    ),
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
SUMS: Final = {
    "agent_rollups": (
        ("agent_id", "kind", "outcome", "failure", "bucket"),
        "sum(events), sum(latency_ms_sum), min(first_at), max(last_at)",
        "events, latency_ms_sum, first_at, last_at",
    ),
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
TABLES: Final = tuple(HOUR_SQL)


def day_sql(table: str) -> str:
    keys, sums, columns = SUMS[table]
    listed = "".join(f"{key}, " for key in keys)
    # Without keys the sum is one row even over no hours: a day without rows has none.
    grouped = f"GROUP BY {', '.join(keys)}" if keys else "HAVING count(*) > 0"
    return (
        f"INSERT INTO {table} ({listed}span, start, {columns}) "
        f"SELECT {listed}{DAY}, CAST(:day AS BIGINT), {sums} FROM {table} "
        f"WHERE span = {HOUR} AND start >= :day AND start < :end {grouped}"
    )
