"""owner tokens rotated and revoked: when the current token was issued, and when it was revoked

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    with op.batch_alter_table("owners") as batch:
        batch.add_column(sa.Column("token_rotated_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("token_revoked_at", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("owners") as batch:
        batch.drop_column("token_revoked_at")
        batch.drop_column("token_rotated_at")
