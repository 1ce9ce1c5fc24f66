"""history read without scanning it: roll-ups of closed hours, and indexes for bounded reads

The roll-up tables (``store.rollup_models``) are created and filled from the rows already
stored, one closed hour at a time (``store.rollups.backfill``: each hour a range of the
new time indexes); from then on the roll-up job keeps them. ``agent_events`` is indexed
by time, by agent and id, by agent, kind and id, and through two small partial indexes
(its failures, and the overview's notable rows); ``tasks`` by creation (by agent and
creation since 0013); ``matches`` by each fighter and creation; ``agents``
for its lists, newest first.

On a large database the indexes are built over ``agent_events`` in full and the back-fill
reads each history table once, while the migration holds the tables' write locks: see
the operations guide's maintenance step.
"""

# The SQL here is built from the store's constants only; values are bound parameters.
# ruff: noqa: S608

from __future__ import annotations

import math
import time
from typing import Any

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import columns, keys, span_key
from palaestra.store.models import FAILED_EVENTS, NOTABLE_EVENTS
from palaestra.store.rollup_models import DAY, HOUR
from palaestra.store.rollup_sql import BUCKET_SQL, FAILURE_SQL
from palaestra.store.rollups import DEFAULT_GRACE_S, backfill, until_of

revision = "0014"
down_revision = "0013"

_ID = sa.String(36)
#: The roll-up tables this revision creates (later revisions add theirs).
_TABLES = ("agent_rollups", "task_rollups", "match_rollups")
#: ``agent_rollups`` as this revision shapes it, a row per latency bucket (0020 puts a
#: group's buckets in one column): its statements are kept here, as the store's write the
#: later shape.
_AGENT_COLUMNS = (
    "agent_id, span, start, kind, outcome, failure, bucket, events, latency_ms_sum, first_at, "
    "last_at"
)
_AGENT_HOUR = (
    f"INSERT INTO agent_rollups ({_AGENT_COLUMNS}) "
    f"SELECT agent_id, {HOUR}, CAST(:start AS BIGINT), kind, outcome, {FAILURE_SQL}, "
    f"{BUCKET_SQL}, count(*), coalesce(sum(latency_ms), 0), min(at), max(at) "
    "FROM agent_events WHERE at >= :lo AND at < :hi GROUP BY 1, 4, 5, 6, 7"
)
_AGENT_DAY = (
    f"INSERT INTO agent_rollups ({_AGENT_COLUMNS}) "
    f"SELECT agent_id, {DAY}, CAST(:day AS BIGINT), kind, outcome, failure, bucket, "
    "sum(events), sum(latency_ms_sum), min(first_at), max(last_at) FROM agent_rollups "
    f"WHERE span = {HOUR} AND start >= :day AND start < :end "
    "GROUP BY agent_id, kind, outcome, failure, bucket"
)


def _agent(name: str) -> sa.Column[Any]:
    return sa.Column(name, _ID, sa.ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True)


def _create_tables() -> None:
    op.create_table(
        "agent_rollups",
        _agent("agent_id"),
        *span_key(),
        *keys(sa.String(32), "kind", "outcome", "failure"),
        *keys(sa.Integer(), "bucket"),
        sa.Column("events", sa.BigInteger(), nullable=False),
        *columns(sa.Float(), "latency_ms_sum", "first_at", "last_at"),
    )
    op.create_table(
        "task_rollups",
        _agent("agent_id"),
        *span_key(),
        *keys(sa.String(16), "status"),
        *columns(sa.BigInteger(), "tasks", "contributed"),
        *columns(sa.Float(), "contribution_sum", "first_ended", "last_ended"),
    )
    op.create_table(
        "match_rollups",
        _agent("fighter_id"),
        *span_key(),
        _agent("opponent_id"),
        *keys(sa.String(16), "side", "kind", "status"),
        *keys(sa.String(32), "outcome"),
        sa.Column("matches", sa.BigInteger(), nullable=False),
    )
    op.create_table("rollup_stale", *keys(sa.BigInteger(), "start"))
    for table in _TABLES:
        op.create_index(f"ix_{table}_span_start", table, ["span", "start"])
    op.create_index("ix_match_rollups_opponent", "match_rollups", ["opponent_id"])


def _where(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


_EVENT_INDEXES: tuple[tuple[str, list[str]], ...] = (
    ("ix_agent_events_at", ["at"]),
    ("ix_agent_events_agent_id", ["agent_id", "id"]),
    ("ix_agent_events_agent_kind", ["agent_id", "kind", "id"]),
)


def upgrade() -> None:
    _create_tables()
    for name, indexed in _EVENT_INDEXES:
        op.create_index(name, "agent_events", indexed)
    op.create_index(
        "ix_agent_events_failures", "agent_events", ["agent_id", "id"], **_where(FAILED_EVENTS)
    )
    op.create_index("ix_agent_events_notable", "agent_events", ["id"], **_where(NOTABLE_EVENTS))
    op.create_index("ix_tasks_created", "tasks", ["created_at"])
    for side in ("attacker", "defender"):
        op.drop_index(f"ix_matches_{side}", table_name="matches")
        op.create_index(f"ix_matches_{side}_created", "matches", [f"{side}_id", "created_at"])
    op.create_index("ix_agents_created", "agents", ["created_at", "id"])
    op.create_index("ix_agents_arena_created", "agents", ["arena", "created_at", "id"])
    # The history already stored, rolled up to the hour that closes now (the rows carry
    # the wall clock's time); an empty database starts with the roll-up job.
    connection = op.get_bind()
    backfill(connection, time.time(), DEFAULT_GRACE_S, ("task_rollups", "match_rollups"))
    _backfill_agent_rollups(connection)


def _backfill_agent_rollups(connection: sa.Connection) -> None:
    """The events before the watermark ``backfill`` set, rolled up in this revision's shape:
    the hours one by one (each a range of ``ix_agent_events_at``), each day from its hours."""
    until = until_of(connection)
    oldest = connection.scalar(sa.text("SELECT min(at) FROM agent_events"))
    if until is None or oldest is None:
        return
    for start in range(math.floor(oldest / HOUR) * HOUR, int(until), HOUR):
        connection.execute(
            sa.text(_AGENT_HOUR), {"start": start, "lo": float(start), "hi": float(start + HOUR)}
        )
        if (start + HOUR) % DAY == 0:
            day = start + HOUR - DAY
            connection.execute(sa.text(_AGENT_DAY), {"day": day, "end": day + DAY})


def downgrade() -> None:
    for name in ("ix_agents_arena_created", "ix_agents_created"):
        op.drop_index(name, table_name="agents")
    for side in ("attacker", "defender"):
        op.drop_index(f"ix_matches_{side}_created", table_name="matches")
        op.create_index(f"ix_matches_{side}", "matches", [f"{side}_id"])
    op.drop_index("ix_tasks_created", table_name="tasks")
    for name in ("ix_agent_events_notable", "ix_agent_events_failures"):
        op.drop_index(name, table_name="agent_events")
    for name, _columns in reversed(_EVENT_INDEXES):
        op.drop_index(name, table_name="agent_events")
    op.execute("DELETE FROM meta WHERE key = 'rollups_until'")
    for table in ("rollup_stale", "match_rollups", "task_rollups", "agent_rollups"):
        op.drop_table(table)
