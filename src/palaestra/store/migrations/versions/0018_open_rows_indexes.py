"""partial indexes of the open matches and the running runs

``ix_matches_open`` holds the matches not finished (PENDING, RUNNING) by creation, and
``ix_runs_running`` the running runs: the rows the referee, the sweeper, the live pages'
stamps and ``/metrics`` look for, few whatever the history. Building each reads its
table once; neither table is rewritten.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"

_OPEN_MATCH = "status IN ('PENDING', 'RUNNING')"
_RUNNING_RUN = "status = 'RUNNING'"


def _where(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


def upgrade() -> None:
    op.create_index("ix_matches_open", "matches", ["created_at"], **_where(_OPEN_MATCH))
    op.create_index("ix_runs_running", "runs", ["created_at"], **_where(_RUNNING_RUN))


def downgrade() -> None:
    op.drop_index("ix_runs_running", table_name="runs")
    op.drop_index("ix_matches_open", table_name="matches")
