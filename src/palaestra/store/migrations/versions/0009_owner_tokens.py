"""owner tokens rotated and revoked: when the current token was issued, and when it was revoked"""

from __future__ import annotations

import sqlalchemy as sa

from palaestra.store.migrations.columns import adding_columns

revision = "0009"
down_revision = "0008"

upgrade, downgrade = adding_columns(
    "owners",
    sa.Column("token_rotated_at", sa.Float(), nullable=True),
    sa.Column("token_revoked_at", sa.Float(), nullable=True),
)
