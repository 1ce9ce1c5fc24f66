"""rated and friendly matches; fighters that accept rated challenges"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    # Every match played before this revision was rated: the default keeps them so.
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="rated"))
    with op.batch_alter_table("agents") as batch:
        batch.add_column(
            sa.Column("rated_challenges", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("rated_challenges")
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("kind")
