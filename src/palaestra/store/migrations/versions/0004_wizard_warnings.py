"""the wizard's advisory findings on each agent"""

from __future__ import annotations

import sqlalchemy as sa

from palaestra.store.migrations.columns import adding_columns

revision = "0004"
down_revision = "0003"

upgrade, downgrade = adding_columns(
    "agents", sa.Column("wizard_warnings", sa.JSON(), nullable=True)
)
