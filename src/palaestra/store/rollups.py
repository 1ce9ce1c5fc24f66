"""Roll-ups: history summed as it is written, so that no page reads history to count it.

Three tables, each kept by triggers in the same transaction as the rows it sums
(migration 0012 creates them and fills them from the rows already there):

- ``agent_rollups``: an agent's events per hour and per day (``span``), by kind,
  outcome, failure kind (:class:`~palaestra.protocol.failures.CallFailure`, from the
  reason line, for failures) and latency bucket (:data:`LATENCY_BOUNDS_MS`): counts,
  failures by kind, and the histogram that latency percentiles are read from. Events
  are only ever added: an event archived and removed stays counted.
- ``task_rollups``: an agent's tasks per hour and per day of their creation, by status,
  with their contributions; a task that changes status moves from one row to another.
- ``match_rollups``: matches per (attacker, defender) pair, by kind, status and outcome.

On PostgreSQL one statement-level trigger per table and operation sums a statement's
rows (its transition tables) and adds them in one upsert, in key order (so two writers
lock shared rows in one order); on SQLite a row trigger adds each row. The SQL that sums
is the same for the triggers and the back-fill, so a roll-up is the aggregate of its rows
by construction; the property tests compare them on both stores.
"""

# The SQL here is built from this module's constants only; no value comes from outside.
# ruff: noqa: S608

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Final

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.protocol.failures import REASON_PREFIXES
from palaestra.store.models import Base

__all__ = [
    "DAY",
    "HOUR",
    "LATENCY_BOUNDS_MS",
    "AgentRollup",
    "MatchRollup",
    "TaskRollup",
    "backfill_sql",
    "latency_bucket",
    "percentile",
    "trigger_sql",
]

HOUR: Final = 3600
DAY: Final = 86400
SPANS: Final = (HOUR, DAY)
#: Upper bounds (inclusive) of the latency histogram's buckets; a last bucket holds the
#: rest, and bucket -1 the events without a latency.
LATENCY_BOUNDS_MS: Final = (10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
NO_LATENCY: Final = -1

_ID = String(36)
inf: Final = float("inf")


class AgentRollup(Base):
    """An agent's events of one kind, outcome, failure kind and latency bucket in one span."""

    __tablename__ = "agent_rollups"

    agent_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    span: Mapped[int] = mapped_column(Integer, primary_key=True)  # HOUR | DAY
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # unix seconds
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32), primary_key=True)
    failure: Mapped[str] = mapped_column(String(32), primary_key=True)  # '' unless a failure
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)  # NO_LATENCY or an index
    events: Mapped[int] = mapped_column(BigInteger)
    latency_ms_sum: Mapped[float] = mapped_column(Float)


class TaskRollup(Base):
    """An agent's tasks of one status created in one span, with their contributions."""

    __tablename__ = "task_rollups"

    agent_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    span: Mapped[int] = mapped_column(Integer, primary_key=True)
    start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    tasks: Mapped[int] = mapped_column(BigInteger)
    contributed: Mapped[int] = mapped_column(BigInteger)  # tasks with a contribution
    contribution_sum: Mapped[float] = mapped_column(Float)


class MatchRollup(Base):
    """Matches between one attacker and one defender of one kind, status and outcome."""

    __tablename__ = "match_rollups"

    attacker_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    defender_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32), primary_key=True)  # '' while none
    matches: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_match_rollups_defender", "defender_id"),)


def latency_bucket(latency_ms: float | None) -> int:
    """The histogram bucket of ``latency_ms``, as the triggers compute it."""
    if latency_ms is None:
        return NO_LATENCY
    return bisect_left(LATENCY_BOUNDS_MS, latency_ms)


def percentile(histogram: Iterable[tuple[int, int]], fraction: float) -> float | None:
    """The upper bound of the bucket holding the ``fraction`` quantile of ``(bucket, count)``
    pairs (``inf`` past the last bound); ``None`` for no latency at all."""
    counts: dict[int, int] = {}
    for bucket, count in histogram:
        if bucket != NO_LATENCY and count:
            counts[bucket] = counts.get(bucket, 0) + count
    total = sum(counts.values())
    if not total:
        return None
    rank = max(1, -(-fraction * total // 1))  # the ceil(fraction * total)-th smallest
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            return float(LATENCY_BOUNDS_MS[bucket]) if bucket < len(LATENCY_BOUNDS_MS) else inf
    return inf  # pragma: no cover - the loop reaches the total


# -- the SQL: one aggregate per table, read from a source of rows ---------------------------

_SPANS_SQL: Final = " UNION ALL ".join(f"SELECT {s} AS span" for s in SPANS)


def _start(dialect: str, at: str) -> str:
    if dialect == "postgresql":
        return f"(floor({at} / w.span) * w.span)::bigint"
    return f"CAST({at} / w.span AS INTEGER) * w.span"


def _failure_sql() -> str:
    cases = " ".join(
        f"WHEN substr(coalesce(n.reason, ''), 1, {len(prefix)}) = '{prefix}' THEN '{kind.value}'"
        for prefix, kind in REASON_PREFIXES
    )
    return f"CASE WHEN n.outcome <> 'failure' THEN '' {cases} ELSE 'other' END"


def _bucket_sql() -> str:
    cases = " ".join(
        f"WHEN n.latency_ms <= {bound} THEN {i}" for i, bound in enumerate(LATENCY_BOUNDS_MS)
    )
    return (
        f"CASE WHEN n.latency_ms IS NULL THEN {NO_LATENCY} {cases} "
        f"ELSE {len(LATENCY_BOUNDS_MS)} END"
    )


def _upsert(table: str, keys: Sequence[str], sums: Sequence[str], select: str) -> str:
    columns = ", ".join((*keys, *sums))
    added = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in sums)
    return (
        f"INSERT INTO {table} ({columns}) {select} "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {added}"
    )


_EVENT_KEYS: Final = ("agent_id", "span", "start", "kind", "outcome", "failure", "bucket")
_TASK_KEYS: Final = ("agent_id", "span", "start", "status")
_MATCH_KEYS: Final = ("attacker_id", "defender_id", "kind", "status", "outcome")


def _events_sql(dialect: str, source: str, *, ordered: bool = True) -> str:
    """The events of ``source`` (rows aliased ``n``) added to their agents' roll-ups; in key
    order unless not ``ordered`` (the back-fill, which nothing runs beside)."""
    keys = ", ".join(str(i) for i in range(1, len(_EVENT_KEYS) + 1))
    select = (
        f"SELECT n.agent_id, w.span, {_start(dialect, 'n.at')}, n.kind, n.outcome, "
        f"{_failure_sql()}, {_bucket_sql()}, count(*), coalesce(sum(n.latency_ms), 0) "
        f"FROM {source} n CROSS JOIN ({_SPANS_SQL}) w WHERE true "
        f"GROUP BY {keys}" + (f" ORDER BY {keys}" if ordered else "")
    )
    return _upsert("agent_rollups", _EVENT_KEYS, ("events", "latency_ms_sum"), select)


def _tasks_sql(dialect: str, source: str) -> str:
    """``source``: task rows (``n``) with a ``sign``, +1 to add them and -1 to take them out;
    only agents that still exist are counted (a deleted agent's roll-ups go with it)."""
    keys = ", ".join(str(i) for i in range(1, len(_TASK_KEYS) + 1))
    select = (
        f"SELECT n.agent_id, w.span, {_start(dialect, 'n.created_at')}, n.status, "
        "sum(n.sign), sum(CASE WHEN n.contribution IS NULL THEN 0 ELSE n.sign END), "
        "coalesce(sum(n.sign * n.contribution), 0) "
        f"FROM {source} n CROSS JOIN ({_SPANS_SQL}) w "
        "WHERE n.agent_id IN (SELECT id FROM agents) "
        f"GROUP BY {keys} "
        "HAVING sum(n.sign) <> 0 OR coalesce(sum(n.sign * n.contribution), 0) <> 0 "
        "OR sum(CASE WHEN n.contribution IS NULL THEN 0 ELSE n.sign END) <> 0 "
        f"ORDER BY {keys}"
    )
    return _upsert("task_rollups", _TASK_KEYS, ("tasks", "contributed", "contribution_sum"), select)


def _matches_sql(source: str) -> str:
    keys = ", ".join(str(i) for i in range(1, len(_MATCH_KEYS) + 1))
    select = (
        "SELECT n.attacker_id, n.defender_id, n.kind, n.status, coalesce(n.outcome, ''), "
        f"sum(n.sign) FROM {source} n "
        "WHERE n.attacker_id IN (SELECT id FROM agents) "
        "AND n.defender_id IN (SELECT id FROM agents) "
        f"GROUP BY {keys} HAVING sum(n.sign) <> 0 ORDER BY {keys}"
    )
    return _upsert("match_rollups", _MATCH_KEYS, ("matches",), select)


_TASK_COLUMNS: Final = ("agent_id", "created_at", "status", "contribution")
_MATCH_COLUMNS: Final = ("attacker_id", "defender_id", "kind", "status", "outcome")


def _signed(columns: Sequence[str], parts: Sequence[tuple[str, int]], row_sql: bool) -> str:
    """A source of rows with a sign: each part a table (or, with ``row_sql``, a trigger's
    NEW or OLD row) taken with its sign."""
    selects = []
    for part, sign in parts:
        picked = ", ".join(f"{part}.{c} AS {c}" for c in columns)
        selects.append(f"SELECT {picked}, {sign} AS sign" + ("" if row_sql else f" FROM {part}"))
    return "(" + " UNION ALL ".join(selects) + ")"


def backfill_sql(dialect: str) -> list[str]:
    """The statements that fill the (empty) roll-ups from the rows already stored (on
    PostgreSQL with room to sort and group in memory, for this transaction only)."""
    memory = ["SET LOCAL work_mem = '256MB'"] if dialect == "postgresql" else []
    return [
        *memory,
        _events_sql(dialect, "agent_events", ordered=False),
        _tasks_sql(dialect, _signed(_TASK_COLUMNS, [("tasks", 1)], row_sql=False)),
        _matches_sql(_signed(_MATCH_COLUMNS, [("matches", 1)], row_sql=False)),
    ]


# (table, operation, the trigger's parts: transition table or row, with its sign)
_Parts = tuple[tuple[str, int], ...]
_OPERATIONS: Final[tuple[tuple[str, _Parts], ...]] = (
    ("INSERT", (("new_rows", 1),)),
    ("UPDATE", (("old_rows", -1), ("new_rows", 1))),
    ("DELETE", (("old_rows", -1),)),
)
_SQLITE_ROWS: Final = {"new_rows": "NEW", "old_rows": "OLD"}


def _changed(columns: Sequence[str]) -> str:
    return " WHEN " + " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in columns)


#: On SQLite an update of a task or match that changes none of the summed columns (a task
#: sent, its output written) skips the trigger.
_SQLITE_WHEN: Final = {
    ("tasks", "UPDATE"): _changed(_TASK_COLUMNS),
    ("matches", "UPDATE"): _changed(_MATCH_COLUMNS),
}


def _body(dialect: str, table: str, parts: Sequence[tuple[str, int]]) -> str:
    if dialect == "sqlite":
        parts = [(_SQLITE_ROWS[part], sign) for part, sign in parts]
    row_sql = dialect == "sqlite"
    if table == "agent_events":
        (part, _sign), *_ = parts
        source = (
            f"(SELECT {part}.agent_id AS agent_id, {part}.at AS at, {part}.kind AS kind, "
            f"{part}.outcome AS outcome, {part}.reason AS reason, "
            f"{part}.latency_ms AS latency_ms)"
            if row_sql
            else part
        )
        return _events_sql(dialect, source)
    if table == "tasks":
        return _tasks_sql(dialect, _signed(_TASK_COLUMNS, parts, row_sql))
    return _matches_sql(_signed(_MATCH_COLUMNS, parts, row_sql))


def _triggers() -> list[tuple[str, str, _Parts]]:
    found: list[tuple[str, str, _Parts]] = [
        ("agent_events", "INSERT", _OPERATIONS[0][1])
    ]  # events are never taken out
    for table in ("tasks", "matches"):
        found += [(table, operation, parts) for operation, parts in _OPERATIONS]
    return found


def trigger_sql(dialect: str) -> tuple[list[str], list[str]]:
    """The statements that create the triggers keeping the roll-ups, and those that drop them."""
    create: list[str] = []
    drop: list[str] = []
    for table, operation, parts in _triggers():
        name = f"rollup_{table}_{operation.lower()}"
        body = _body(dialect, table, parts)
        if dialect == "sqlite":
            when = _SQLITE_WHEN.get((table, operation), "")
            create.append(
                f"CREATE TRIGGER {name} AFTER {operation} ON {table} FOR EACH ROW{when} "
                f"BEGIN {body}; END"
            )
            drop.append(f"DROP TRIGGER IF EXISTS {name}")
            continue
        referencing = " ".join(
            f"{'OLD' if part == 'old_rows' else 'NEW'} TABLE AS {part}" for part, _ in parts
        )
        create.append(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$"
        )
        create.append(
            f"CREATE TRIGGER {name} AFTER {operation} ON {table} "
            f"REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
        )
        drop.append(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        drop.append(f"DROP FUNCTION IF EXISTS {name}()")
    return create, drop
