"""fighters that accept friendly matches from other owners

Every fighter took them before this revision. Those that cost their owner nothing more
than the arena's play (harnesses, house fighters, the local model) keep taking them; a
model fighter that spends its owner's provider key does not until its owner allows it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(
            sa.Column(
                "friendly_challenges", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
    agents = sa.table(
        "agents",
        sa.column("arena", sa.String()),
        sa.column("provider_key_sealed", sa.Text()),
        sa.column("friendly_challenges", sa.Boolean()),
    )
    op.execute(
        agents.update()
        .where(agents.c.arena == "cage", agents.c.provider_key_sealed.is_(None))
        .values(friendly_challenges=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("friendly_challenges")
