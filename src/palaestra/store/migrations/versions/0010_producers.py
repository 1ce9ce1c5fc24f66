"""answers say who produced them: a task's and a turn's producer, and a turn's model id

Tasks and turns recorded before keep what can be told of them: a task answered by
the house by its executor (``house-baseline`` or the house model), an agent's by
how its answer came (``sync`` or ``callback``); a finished turn by the executor its
match was made with (``house-baseline``, ``house:<model>``, ``model:<model>``, or an
agent's harness). Unfinished ones are labelled when they finish.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"

_TASKS = """
UPDATE tasks SET producer = CASE
    WHEN via = 'house' AND executor = 'house-baseline' THEN 'house_baseline'
    WHEN via = 'house' THEN 'house_model'
    WHEN via IN ('sync', 'callback') THEN 'agent'
END
WHERE via IS NOT NULL
"""

#: The executor a turn's match was made with, for the turn's side.
_EXECUTOR = {
    "postgresql": "(SELECT CAST(m.material AS JSONB) -> 'entrants' -> turns.side ->> 'executor' "
    "FROM matches m WHERE m.id = turns.match_id)",
    "sqlite": "(SELECT json_extract(m.material, '$.entrants.' || turns.side || '.executor') "
    "FROM matches m WHERE m.id = turns.match_id)",
}

_TURNS = """
UPDATE turns SET
    producer = CASE
        WHEN {e} = 'house-baseline' THEN 'house_baseline'
        WHEN {e} LIKE 'house:%' THEN 'house_model'
        WHEN {e} IS NOT NULL THEN 'agent'
    END,
    model_id = CASE WHEN {e} LIKE 'house:%' OR {e} LIKE 'model:%' THEN substr({e}, 7) END
WHERE status <> 'RUNNING'
"""


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("producer", sa.String(length=16), nullable=True))
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("producer", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("model_id", sa.String(length=200), nullable=True))
    bind = op.get_bind()
    op.execute(_TASKS)
    executor = _EXECUTOR.get(bind.dialect.name)
    if executor is not None:
        op.execute(_TURNS.format(e=executor))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("model_id")
        batch.drop_column("producer")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("producer")
