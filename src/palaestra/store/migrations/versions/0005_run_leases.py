"""run leases and due times, the send as a column of its own, one task per slot attempt"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(64), nullable=True))
        batch.add_column(sa.Column("lease_until", sa.Float(), nullable=True))
        batch.add_column(sa.Column("due_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("kicks", sa.Integer(), nullable=False, server_default="0"))
        batch.create_index("ix_runs_status_due", ["status", "due_at"])
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("sent_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("deferred_at", sa.Float(), nullable=True))
    # Tasks stored before this revision were sent when they were dispatched.
    op.execute("UPDATE tasks SET sent_at = dispatched_at")
    op.execute("UPDATE runs SET due_at = created_at WHERE status = 'RUNNING'")
    # One task per slot attempt. SCOUT tasks have no candidate, and NULLs are distinct in
    # a unique index: theirs is a partial index of its own.
    with op.batch_alter_table("tasks") as batch:
        batch.create_index(
            "ux_tasks_slot_attempt",
            ["run_id", "phase", "candidate_id", "slot", "attempt"],
            unique=True,
        )
        batch.create_index(
            "ux_tasks_scout_slot_attempt",
            ["run_id", "phase", "slot", "attempt"],
            unique=True,
            sqlite_where=sa.text("candidate_id IS NULL"),
            postgresql_where=sa.text("candidate_id IS NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_index("ux_tasks_scout_slot_attempt")
        batch.drop_index("ux_tasks_slot_attempt")
        batch.drop_column("deferred_at")
        batch.drop_column("sent_at")
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_status_due")
        batch.drop_column("kicks")
        batch.drop_column("due_at")
        batch.drop_column("lease_until")
        batch.drop_column("lease_owner")
