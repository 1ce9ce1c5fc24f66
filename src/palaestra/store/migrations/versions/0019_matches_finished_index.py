"""an index of the matches by when they finished

``ix_matches_finished`` lets the live ratings read only the matches that finished
since the last ones they rated (``engine.ratings.live``), rather than every scored
match joined to its rating marker on each tick. Building it reads ``matches`` once;
the table is not rewritten.
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"


def upgrade() -> None:
    op.create_index("ix_matches_finished", "matches", ["finished_at"])


def downgrade() -> None:
    op.drop_index("ix_matches_finished", table_name="matches")
