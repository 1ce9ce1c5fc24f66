"""the runs rolled up per hour and day, so the overview's count of runs reads no history

``run_rollups`` is created and filled, from the runs already stored, for every hour and
day before the roll-ups' watermark (``store.rollups.backfill_table``: each hour a range
of ``ix_runs_created``); from then on the roll-up job keeps it with the other tables.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from palaestra.store.rollups import backfill_table

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_rollups",
        sa.Column("span", sa.Integer(), primary_key=True),
        sa.Column("start", sa.BigInteger(), primary_key=True),
        sa.Column("runs", sa.BigInteger(), nullable=False),
    )
    backfill_table(op.get_bind(), "run_rollups")


def downgrade() -> None:
    op.drop_table("run_rollups")
