"""live ratings, rated-match markers and leaderboard snapshots"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "fighter_ratings",
        sa.Column("fighter_id", sa.String(length=36), nullable=False),
        sa.Column("side", sa.String(length=8), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["fighter_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("fighter_id", "side"),
    )
    op.create_table(
        "rated_matches",
        sa.Column("match_id", sa.String(length=36), nullable=False),
        sa.Column("result", sa.String(length=16), nullable=True),
        sa.Column("attack_mu_before", sa.Float(), nullable=True),
        sa.Column("attack_sigma_before", sa.Float(), nullable=True),
        sa.Column("defence_mu_before", sa.Float(), nullable=True),
        sa.Column("defence_sigma_before", sa.Float(), nullable=True),
        sa.Column("attack_mu_after", sa.Float(), nullable=True),
        sa.Column("attack_sigma_after", sa.Float(), nullable=True),
        sa.Column("defence_mu_after", sa.Float(), nullable=True),
        sa.Column("defence_sigma_after", sa.Float(), nullable=True),
        sa.Column("rated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("match_id"),
    )
    op.create_table(
        "leaderboard_snapshots",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("arena", sa.String(length=16), nullable=False),
        sa.Column("computed_at", sa.Float(), nullable=False),
        sa.Column("match_count", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("leaderboard_snapshots", schema=None) as batch_op:
        batch_op.create_index(
            "ix_leaderboard_snapshots_arena_at", ["arena", "computed_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("leaderboard_snapshots", schema=None) as batch_op:
        batch_op.drop_index("ix_leaderboard_snapshots_arena_at")
    op.drop_table("leaderboard_snapshots")
    op.drop_table("rated_matches")
    op.drop_table("fighter_ratings")
