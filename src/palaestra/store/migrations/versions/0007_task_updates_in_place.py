"""tasks updated in place: no index on what a send or an end changes; PostgreSQL pages half
free for the new versions, and payloads compressed with lz4 where the server has it

A task's row is written four times: opened (with its payload, about 4 KB of JSON), sent,
ended and settled. ``ix_tasks_status_deadline`` covered two columns those updates change,
so on PostgreSQL each wrote a new entry in every index of the table; nothing queries by it
(``/metrics`` counts the tasks in flight through their runs). Without it, and with room on
the page, PostgreSQL updates the row in place (a HOT update) and leaves the indexes alone.
pglz, PostgreSQL's default compression, cost about a third of a task's INSERT; lz4 about a
tenth, for somewhat larger rows.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0007"
down_revision = "0006"

_FILLFACTOR = 50
_COMPRESSED = ("payload", "output")


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_index("ix_tasks_status_deadline")
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE tasks SET (fillfactor = {_FILLFACTOR})")
    if _has_lz4(bind):
        for column in _COMPRESSED:
            op.execute(f"ALTER TABLE tasks ALTER COLUMN {column} SET COMPRESSION lz4")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("ALTER TABLE tasks RESET (fillfactor)")
        if _has_lz4(bind):
            for column in _COMPRESSED:
                op.execute(f"ALTER TABLE tasks ALTER COLUMN {column} SET COMPRESSION default")
    with op.batch_alter_table("tasks") as batch:
        batch.create_index("ix_tasks_status_deadline", ["status", "deadline_at"])


def _has_lz4(bind: object) -> bool:
    """Whether the server was built with lz4 (PostgreSQL 14 and later may be)."""
    query = text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    methods = bind.execute(query).scalar()  # type: ignore[attr-defined]
    return methods is not None and "lz4" in methods
