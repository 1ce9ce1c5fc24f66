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

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import columns, keys, span_key
from palaestra.store.models import FAILED_EVENTS, NOTABLE_EVENTS
from palaestra.store.rollups import DEFAULT_GRACE_S, backfill

revision = "0014"
down_revision = "0013"

_ID = sa.String(36)
#: The roll-up tables this revision creates (later revisions add theirs).
_TABLES = ("agent_rollups", "task_rollups", "match_rollups")


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
    for table in ("agent_rollups", "task_rollups", "match_rollups"):
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
    backfill(op.get_bind(), time.time(), DEFAULT_GRACE_S, _TABLES)


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
