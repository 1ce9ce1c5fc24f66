"""tasks: ``sent_at`` alone says when a task was sent; its deadline is kept as a duration

``tasks.dispatched_at`` was written beside ``sent_at`` (and, until the send, held the
creation time, so only ``dispatched_at <> created_at`` said "sent"); it is dropped. A
value it alone held (a send that ``sent_at`` did not record) is copied to ``sent_at``
first. A task's deadline is now stored when it is opened as ``deadline_s``, the seconds
it has to answer from its send, and ``deadline_at`` (``sent_at + deadline_s``) is written
once, by the send's claim; a task not sent has none.

What it costs on a large ``tasks`` table: adding ``deadline_s`` (nullable, no default)
and dropping ``dispatched_at`` rewrite no row on PostgreSQL (a catalog change; the
dropped column's bytes go as rows are next written); SQLite's ``DROP COLUMN`` rewrites
the table once. The two UPDATEs each scan the table once but write only tasks never
sent (``sent_at IS NULL``: the few opened and not yet sent, and those voided unsent),
not the millions sent before; those keep ``deadline_at`` as it was and no ``deadline_s``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"


def upgrade() -> None:
    op.add_column("tasks", sa.Column("deadline_s", sa.Float(), nullable=True))
    op.execute(
        "UPDATE tasks SET sent_at = dispatched_at WHERE sent_at IS NULL"
        " AND dispatched_at IS NOT NULL AND dispatched_at <> created_at"
    )
    op.execute(
        "UPDATE tasks SET deadline_s = deadline_at - created_at, deadline_at = NULL"
        " WHERE sent_at IS NULL"
    )
    op.drop_column("tasks", "dispatched_at")


def downgrade() -> None:
    op.add_column("tasks", sa.Column("dispatched_at", sa.Float(), nullable=True))
    op.execute("UPDATE tasks SET deadline_at = created_at + deadline_s WHERE sent_at IS NULL")
    op.execute("UPDATE tasks SET dispatched_at = coalesce(sent_at, created_at)")
    op.drop_column("tasks", "deadline_s")
