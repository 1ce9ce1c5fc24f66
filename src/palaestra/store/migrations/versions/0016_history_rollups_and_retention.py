"""arena-wide roll-ups of runs and matches; retention's indexes of receipts and sessions

``arena_rollups`` is created and filled, from the runs and matches already stored, for
every hour and day before the roll-ups' watermark (``store.rollups.backfill_table``:
each hour a range of ``ix_runs_created`` and ``ix_matches_created``); from then on the
roll-up job keeps it with the other tables, and the overview's counts read a row a
day. ``completion_receipts`` is indexed by when each was received and ``web_sessions``
by expiry, the ranges retention archives and deletes; ``agents`` by arena and latest
write and ``fighter_ratings`` by latest write, the live table's stamp.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import columns, span_key
from palaestra.store.rollups import backfill_table

revision = "0016"
down_revision = "0015"


def upgrade() -> None:
    op.create_table(
        "arena_rollups",
        *span_key(),
        *columns(sa.BigInteger(), "runs", "matches"),
    )
    backfill_table(op.get_bind(), "arena_rollups")
    op.create_index("ix_completion_receipts_received", "completion_receipts", ["received_at"])
    op.create_index("ix_web_sessions_expires", "web_sessions", ["expires_at"])
    op.create_index("ix_agents_arena_updated", "agents", ["arena", "updated_at"])
    op.create_index("ix_fighter_ratings_updated", "fighter_ratings", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_fighter_ratings_updated", table_name="fighter_ratings")
    op.drop_index("ix_agents_arena_updated", table_name="agents")
    op.drop_index("ix_web_sessions_expires", table_name="web_sessions")
    op.drop_index("ix_completion_receipts_received", table_name="completion_receipts")
    op.drop_table("arena_rollups")
