"""owners, agents and their history"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import (
    columns,
    create_indexes,
    drop_indexes,
    serial_id,
    uuid,
)

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "owners",
        uuid("id"),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "agents",
        uuid("id"),
        uuid("owner_id"),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("arena", sa.String(length=16), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=True),
        sa.Column("entrant_type", sa.String(length=16), nullable=True),
        sa.Column("fighter_class", sa.String(length=32), nullable=True),
        sa.Column("endpoint_url", sa.Text(), nullable=True),
        sa.Column("harness_name", sa.String(length=200), nullable=True),
        sa.Column("sandbox_attested", sa.Boolean(), nullable=False),
        sa.Column("provider", sa.JSON(), nullable=True),
        sa.Column("provider_key_sealed", sa.Text(), nullable=True),
        sa.Column("key_sealed", sa.Text(), nullable=True),
        sa.Column("claim_code_hash", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("paused_from", sa.String(length=16), nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("cooldown_until", sa.Float(), nullable=True),
        sa.Column("last_heartbeat", sa.Float(), nullable=True),
        sa.Column("hold", sa.Boolean(), nullable=False),
        sa.Column("next_ping_at", sa.Float(), nullable=True),
        sa.Column("reputation", sa.Float(), nullable=False),
        sa.Column("wizard_passed_at", sa.Float(), nullable=True),
        *columns(sa.Float(), "created_at", "updated_at"),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes(
        "agents",
        {
            "ix_agents_arena_role_status": ["arena", "role", "status"],
            "ix_agents_next_ping": ["next_ping_at"],
            "ix_agents_owner": ["owner_id"],
        },
    )
    op.create_table(
        "agent_events",
        serial_id(),
        uuid("agent_id"),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes("agent_events", {"ix_agent_events_agent_at": ["agent_id", "at"]})


def downgrade() -> None:
    drop_indexes("agent_events", "ix_agent_events_agent_at")
    op.drop_table("agent_events")
    drop_indexes("agents", "ix_agents_owner", "ix_agents_next_ping", "ix_agents_arena_role_status")
    op.drop_table("agents")
    op.drop_table("owners")
    op.drop_table("meta")
