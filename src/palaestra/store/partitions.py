"""PostgreSQL's daily partitions of ``agent_events`` (declarative, by range of ``at``).

Each UTC day of events has a partition of its own, ``agent_events_pYYYYMMDD``, holding the
events whose ``at`` (unix seconds) falls in that day; events outside every day partition
land in ``agent_events_default``, so that no insert is ever refused. The retention job
creates the partitions of the coming days ahead of time; a day past the window is
detached (a brief lock), archived, then dropped whole instead of deleting its rows one by
one. SQLite has no partitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from sqlalchemy import Connection, text

__all__ = [
    "DAY_S",
    "DEFAULT_PARTITION",
    "EVENTS",
    "LOCK_TIMEOUT",
    "Partition",
    "create_day",
    "day_of",
    "detach",
    "detached",
    "drop",
    "include_name",
    "is_partitioned",
    "partition_day",
    "partition_name",
    "partitions",
]

DAY_S: Final = 86_400.0
EVENTS: Final = "agent_events"
DEFAULT_PARTITION: Final = "agent_events_default"
_PREFIX: Final = "agent_events_p"
#: How long a partition's creation or detachment waits for the table's lock before giving
#: up (the next pass tries again): never long enough to hold up the arena's writes.
LOCK_TIMEOUT: Final = "2s"
_BOUND: Final = re.compile(r"FROM \('?([-0-9.e+]+)'?\) TO \('?([-0-9.e+]+)'?\)")


@dataclass(frozen=True, slots=True)
class Partition:
    """One day's partition: the events with ``first_at <= at < until_at``."""

    name: str
    first_at: float
    until_at: float


def day_of(at: float) -> float:
    """The start (unix seconds, UTC) of the day ``at`` falls in."""
    return (at // DAY_S) * DAY_S


def partition_name(day: float) -> str:
    return _PREFIX + datetime.fromtimestamp(day, UTC).strftime("%Y%m%d")


def partition_day(name: str) -> float:
    """The start of the day the partition ``name`` holds (the inverse of partition_name)."""
    _day_partition(name)
    return datetime.strptime(name[len(_PREFIX) :], "%Y%m%d").replace(tzinfo=UTC).timestamp()


def include_name(name: str | None, type_: str, _parents: object = None) -> bool:
    """For Alembic's comparisons: the partitions are the partitioned table's, not tables of
    their own in the models."""
    return not (type_ == "table" and name is not None and name.startswith(EVENTS + "_"))


def is_partitioned(connection: Connection) -> bool:
    if connection.dialect.name != "postgresql":
        return False
    found = connection.execute(
        text(
            "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
            "WHERE c.relname = :name AND pg_table_is_visible(c.oid)"
        ),
        {"name": EVENTS},
    )
    return found.first() is not None


def partitions(connection: Connection) -> list[Partition]:
    """The day partitions, oldest first (the default partition is not one of them)."""
    rows = connection.execute(
        text(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
            "WHERE p.relname = :name AND pg_table_is_visible(p.oid)"
        ),
        {"name": EVENTS},
    )
    found = []
    for name, bound in rows:
        match = _BOUND.search(bound or "")
        if match is not None:
            found.append(Partition(name, float(match[1]), float(match[2])))
    return sorted(found, key=lambda p: p.first_at)


def create_day(connection: Connection, day: float) -> bool:
    """Create the partition of the day starting at ``day`` unless it exists; ``True`` if made.

    Events of that day already in the default partition (written before their partition
    existed) move into it, in the same transaction.
    """
    name = partition_name(day)
    exists = connection.execute(text("SELECT to_regclass(:name)"), {"name": name}).scalar()
    if exists is not None:
        return False
    bounds = {"first": day, "until": day + DAY_S}
    connection.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    strays = connection.execute(
        text(
            f"SELECT 1 FROM {DEFAULT_PARTITION} WHERE at >= :first AND at < :until LIMIT 1"  # noqa: S608
        ),
        bounds,
    ).first()
    if strays is None:
        connection.execute(
            text(
                f"CREATE TABLE {name} PARTITION OF {EVENTS} "
                f"FOR VALUES FROM ({day!r}) TO ({day + DAY_S!r})"
            )
        )
        return True
    connection.execute(text(f"CREATE TABLE {name} (LIKE {EVENTS} INCLUDING DEFAULTS)"))
    connection.execute(
        text(
            f"WITH moved AS (DELETE FROM {DEFAULT_PARTITION} "  # noqa: S608
            "WHERE at >= :first AND at < :until RETURNING *) "
            f"INSERT INTO {name} SELECT * FROM moved"
        ),
        bounds,
    )
    connection.execute(
        text(
            f"ALTER TABLE {EVENTS} ATTACH PARTITION {name} "
            f"FOR VALUES FROM ({day!r}) TO ({day + DAY_S!r})"
        )
    )
    return True


def detach(connection: Connection, name: str) -> None:
    """Detach the day partition ``name``: a brief lock of the table, whatever the rows. From
    then on nothing writes into it (an event of that day lands in the default partition)."""
    _day_partition(name)
    connection.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    connection.execute(text(f"ALTER TABLE {EVENTS} DETACH PARTITION {name}"))


def detached(connection: Connection) -> list[str]:
    """Day partitions detached and not yet dropped (a pass was cut short), oldest first."""
    rows = connection.execute(
        text(
            "SELECT relname FROM pg_class WHERE relname LIKE :pattern AND relkind = 'r' "
            "AND NOT relispartition AND pg_table_is_visible(oid) ORDER BY relname"
        ),
        {"pattern": _PREFIX + "%"},
    )
    return [name for (name,) in rows]


def drop(connection: Connection, name: str) -> None:
    """Drop a detached day partition."""
    _day_partition(name)
    connection.execute(text(f"DROP TABLE IF EXISTS {name}"))


def _day_partition(name: str) -> None:
    if not re.fullmatch(_PREFIX + r"\d{8}", name):
        raise ValueError(f"not a day partition: {name}")
