"""an agent's tasks, newest first, read from one index: (agent_id, created_at, id)

An agent's page lists the tasks it served a page at a time, newest first, by the keyset
``(created_at, id)``. With ``ix_tasks_agent`` on ``agent_id`` alone, each page read every
task the agent ever served and sorted them; this index hands a page out in order and stops
after it. It replaces ``ix_tasks_agent``, whose column it leads with (the foreign key's
``ON DELETE SET NULL`` still finds an agent's tasks by it). Neither ``created_at`` nor ``id``
changes when a task is sent, ends or is settled, so updates stay in place (0007).
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"


def upgrade() -> None:
    op.create_index("ix_tasks_agent_created", "tasks", ["agent_id", "created_at", "id"])
    op.drop_index("ix_tasks_agent", table_name="tasks")


def downgrade() -> None:
    op.create_index("ix_tasks_agent", "tasks", ["agent_id"])
    op.drop_index("ix_tasks_agent_created", table_name="tasks")
