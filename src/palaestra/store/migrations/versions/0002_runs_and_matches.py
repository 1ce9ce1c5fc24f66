"""runs, tasks, candidates, matches and turns"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import columns, create_indexes, drop_indexes, uuid

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.create_table(
        "completion_receipts",
        uuid("task_id"),
        sa.Column("signature", sa.String(length=128), nullable=False),
        sa.Column("received_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("task_id", "signature"),
    )
    op.create_table(
        "runs",
        uuid("id"),
        uuid("owner_id", nullable=True),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("launchpad", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        *columns(sa.Float(), "created_at", "updated_at"),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["owner_id"], ["owners.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes("runs", {"ix_runs_created": ["created_at"], "ix_runs_status": ["status"]})
    op.create_table(
        "candidates",
        uuid("id"),
        uuid("run_id"),
        uuid("source_task_id", nullable=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("scout_output", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("phase", sa.String(length=16), nullable=True),
        sa.Column("shortlist_score", sa.Float(), nullable=True),
        sa.Column("final_score", sa.Float(), nullable=True),
        sa.Column("rank", sa.Integer(), nullable=True),
        *columns(sa.Float(), "created_at", "updated_at"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes("candidates", {"ix_candidates_run": ["run_id"]})
    op.create_table(
        "matches",
        uuid("id"),
        uuid("attacker_id"),
        uuid("defender_id"),
        uuid("requested_by", nullable=True),
        sa.Column("ruleset", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=True),
        sa.Column("decided_by", sa.String(length=32), nullable=True),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("material", sa.JSON(), nullable=False),
        sa.Column("deadline_ms", sa.Integer(), nullable=False),
        sa.Column("next_turn", sa.Integer(), nullable=False),
        sa.Column("void_reason", sa.Text(), nullable=True),
        *columns(sa.Float(), "created_at", "updated_at"),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["attacker_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["defender_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes(
        "matches",
        {
            "ix_matches_attacker": ["attacker_id"],
            "ix_matches_created": ["created_at"],
            "ix_matches_defender": ["defender_id"],
            "ix_matches_status": ["status"],
        },
    )
    op.create_table(
        "tasks",
        uuid("id"),
        uuid("run_id"),
        uuid("candidate_id", nullable=True),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        uuid("agent_id", nullable=True),
        sa.Column("executor", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=True),
        sa.Column("dispatched_at", sa.Float(), nullable=True),
        sa.Column("deadline_at", sa.Float(), nullable=True),
        sa.Column("completed_at", sa.Float(), nullable=True),
        sa.Column("via", sa.String(length=16), nullable=True),
        sa.Column("output", sa.JSON(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("model_id", sa.String(length=200), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("contribution", sa.Float(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    create_indexes(
        "tasks",
        {
            "ix_tasks_agent": ["agent_id"],
            "ix_tasks_run": ["run_id"],
            "ix_tasks_status_deadline": ["status", "deadline_at"],
        },
    )
    op.create_table(
        "turns",
        uuid("match_id"),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("side", sa.String(length=16), nullable=False),
        uuid("fighter_id"),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("findings", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("match_id", "turn"),
    )


def downgrade() -> None:
    op.drop_table("turns")
    drop_indexes("tasks", "ix_tasks_status_deadline", "ix_tasks_run", "ix_tasks_agent")
    op.drop_table("tasks")
    drop_indexes(
        "matches",
        "ix_matches_status",
        "ix_matches_defender",
        "ix_matches_created",
        "ix_matches_attacker",
    )
    op.drop_table("matches")
    drop_indexes("candidates", "ix_candidates_run")
    op.drop_table("candidates")
    drop_indexes("runs", "ix_runs_status", "ix_runs_created")
    op.drop_table("runs")
    op.drop_table("completion_receipts")
