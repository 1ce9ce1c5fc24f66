"""live ratings, rated-match markers and leaderboard snapshots"""

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

revision = "0003"
down_revision = "0002"

#: Both sides' ratings (mean and deviation) before and after a rated match.
_RATINGS = (
    "attack_mu_before",
    "attack_sigma_before",
    "defence_mu_before",
    "defence_sigma_before",
    "attack_mu_after",
    "attack_sigma_after",
    "defence_mu_after",
    "defence_sigma_after",
)


def upgrade() -> None:
    op.create_table(
        "fighter_ratings",
        uuid("fighter_id"),
        sa.Column("side", sa.String(length=8), nullable=False),
        *columns(sa.Float(), "mu", "sigma"),
        *columns(sa.Integer(), "matches", "wins", "draws", "losses"),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["fighter_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("fighter_id", "side"),
    )
    op.create_table(
        "rated_matches",
        uuid("match_id"),
        sa.Column("result", sa.String(length=16), nullable=True),
        *columns(sa.Float(), *_RATINGS, nullable=True),
        sa.Column("rated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("match_id"),
    )
    op.create_table(
        "leaderboard_snapshots",
        serial_id(),
        sa.Column("arena", sa.String(length=16), nullable=False),
        sa.Column("computed_at", sa.Float(), nullable=False),
        sa.Column("match_count", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes(
        "leaderboard_snapshots", {"ix_leaderboard_snapshots_arena_at": ["arena", "computed_at"]}
    )


def downgrade() -> None:
    drop_indexes("leaderboard_snapshots", "ix_leaderboard_snapshots_arena_at")
    op.drop_table("leaderboard_snapshots")
    op.drop_table("rated_matches")
    op.drop_table("fighter_ratings")
