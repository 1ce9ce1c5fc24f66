"""web sessions: a browser signed in with an owner's or the admin's token (the id's hash only)"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column(
            "owner_id", sa.String(36), sa.ForeignKey("owners.id", ondelete="CASCADE"), nullable=True
        ),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_web_sessions_owner_id", "web_sessions", ["owner_id"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_owner_id", table_name="web_sessions")
    op.drop_table("web_sessions")
