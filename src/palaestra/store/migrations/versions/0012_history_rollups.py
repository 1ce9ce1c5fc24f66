"""history read without scanning it: roll-ups kept by triggers, and indexes for bounded reads

The roll-up tables (``store.rollups``) are created, filled from the rows already stored,
and kept from then on by triggers in the same transaction as each write. ``agent_events``
is indexed by agent and id, by agent, kind and id, by kind and time, and through two small
partial indexes (its failures, and the overview's notable rows); the index by agent and time
goes, as nothing reads by it. ``agents`` is indexed for its lists, newest first.

On a large database the back-fill reads each history table once and the new indexes are
built over ``agent_events`` in full: the migration holds the tables' write locks while it
runs (see the operations guide's maintenance step).

Revision ID: 0012
Revises: 0009
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from palaestra.store.models import FAILED_EVENTS, NOTABLE_EVENTS
from palaestra.store.rollups import backfill_sql, trigger_sql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _agent_fk() -> sa.ForeignKey:
    return sa.ForeignKey("agents.id", ondelete="CASCADE")


def _create_tables() -> None:
    op.create_table(
        "agent_rollups",
        sa.Column("agent_id", sa.String(36), _agent_fk(), primary_key=True),
        sa.Column("span", sa.Integer(), primary_key=True),
        sa.Column("start", sa.BigInteger(), primary_key=True),
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("outcome", sa.String(32), primary_key=True),
        sa.Column("failure", sa.String(32), primary_key=True),
        sa.Column("bucket", sa.Integer(), primary_key=True),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("latency_ms_sum", sa.Float(), nullable=False),
    )
    op.create_table(
        "task_rollups",
        sa.Column("agent_id", sa.String(36), _agent_fk(), primary_key=True),
        sa.Column("span", sa.Integer(), primary_key=True),
        sa.Column("start", sa.BigInteger(), primary_key=True),
        sa.Column("status", sa.String(16), primary_key=True),
        sa.Column("tasks", sa.BigInteger(), nullable=False),
        sa.Column("contributed", sa.BigInteger(), nullable=False),
        sa.Column("contribution_sum", sa.Float(), nullable=False),
    )
    op.create_table(
        "match_rollups",
        sa.Column("attacker_id", sa.String(36), _agent_fk(), primary_key=True),
        sa.Column("defender_id", sa.String(36), _agent_fk(), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("status", sa.String(16), primary_key=True),
        sa.Column("outcome", sa.String(32), primary_key=True),
        sa.Column("matches", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_match_rollups_defender", "match_rollups", ["defender_id"])


def _where(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    _create_tables()
    for statement in backfill_sql(dialect):
        op.execute(statement)
    create, _drop = trigger_sql(dialect)
    for statement in create:
        op.execute(statement)
    op.drop_index("ix_agent_events_agent_at", table_name="agent_events")
    op.create_index("ix_agent_events_agent_id", "agent_events", ["agent_id", "id"])
    op.create_index("ix_agent_events_agent_kind", "agent_events", ["agent_id", "kind", "id"])
    op.create_index("ix_agent_events_kind_at", "agent_events", ["kind", "at", "outcome"])
    op.create_index(
        "ix_agent_events_failures", "agent_events", ["agent_id", "id"], **_where(FAILED_EVENTS)
    )
    op.create_index("ix_agent_events_notable", "agent_events", ["id"], **_where(NOTABLE_EVENTS))
    op.create_index("ix_agents_created", "agents", ["created_at", "id"])
    op.create_index("ix_agents_arena_created", "agents", ["arena", "created_at", "id"])


def downgrade() -> None:
    for name in ("ix_agents_arena_created", "ix_agents_created"):
        op.drop_index(name, table_name="agents")
    for name in (
        "ix_agent_events_notable",
        "ix_agent_events_failures",
        "ix_agent_events_kind_at",
        "ix_agent_events_agent_kind",
        "ix_agent_events_agent_id",
    ):
        op.drop_index(name, table_name="agent_events")
    op.create_index("ix_agent_events_agent_at", "agent_events", ["agent_id", "at"])
    _create, drop = trigger_sql(op.get_bind().dialect.name)
    for statement in drop:
        op.execute(statement)
    for table in ("match_rollups", "task_rollups", "agent_rollups"):
        op.drop_table(table)
