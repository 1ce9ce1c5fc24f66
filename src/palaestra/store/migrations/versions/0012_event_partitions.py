"""event partitions: agent_events partitioned by day on PostgreSQL; the archive log

On PostgreSQL the table is rewritten: every event is copied into a day partition (or the
default partition), under an exclusive lock for the whole copy. See "History retention"
in docs/operators/index.md for the time it takes per million events and how to run it.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import serial_id
from palaestra.store.partitions import (
    DAY_S,
    DEFAULT_PARTITION,
    EVENTS,
    create_day,
    day_of,
    partitions,
)

revision = "0012"
down_revision = "0011"

#: Day partitions made for the days ahead of the migration (the retention job keeps it up).
_AHEAD_DAYS = 7
#: Older events than this many days before the migration go to the default partition
#: rather than to a partition of their own (a clock gone wrong should not make thousands).
_BACK_DAYS = 400
_OLD = "agent_events_unpartitioned"
_COLUMNS = "id, agent_id, at, kind, outcome, latency_ms, reason, detail"


def upgrade() -> None:
    op.create_table(
        "history_archives",
        serial_id(),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("first_at", sa.Float(), nullable=False),
        sa.Column("until_at", sa.Float(), nullable=False),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("first_id", sa.BigInteger(), nullable=True),
        sa.Column("last_id", sa.BigInteger(), nullable=True),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("archived_at", sa.Float(), nullable=False),
        sa.Column("removed_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_history_archives_kind_until", "history_archives", ["kind", "until_at"], unique=False
    )
    if op.get_bind().dialect.name == "postgresql":
        _partition()


def _partition() -> None:
    connection = op.get_bind()
    run = op.execute
    run(f"LOCK TABLE {EVENTS} IN ACCESS EXCLUSIVE MODE")
    run(f"ALTER TABLE {EVENTS} RENAME TO {_OLD}")
    run(f"ALTER TABLE {_OLD} RENAME CONSTRAINT agent_events_pkey TO {_OLD}_pkey")
    run(f"ALTER TABLE {_OLD} RENAME CONSTRAINT agent_events_agent_id_fkey TO {_OLD}_fkey")
    run(f"ALTER INDEX ix_agent_events_agent_at RENAME TO ix_{_OLD}_agent_at")
    run("ALTER SEQUENCE agent_events_id_seq OWNED BY NONE")
    run(
        f"CREATE TABLE {EVENTS} ("
        "id BIGINT NOT NULL DEFAULT nextval('agent_events_id_seq'), "
        "agent_id VARCHAR(36) NOT NULL, at FLOAT NOT NULL, kind VARCHAR(32) NOT NULL, "
        "outcome VARCHAR(32) NOT NULL, latency_ms FLOAT, reason TEXT, detail JSON"
        ") PARTITION BY RANGE (at)"
    )
    run(f"ALTER SEQUENCE agent_events_id_seq OWNED BY {EVENTS}.id")
    run(f"CREATE TABLE {DEFAULT_PARTITION} PARTITION OF {EVENTS} DEFAULT")
    today = day_of(time.time())
    oldest = connection.execute(sa.text(f"SELECT min(at) FROM {_OLD}")).scalar()  # noqa: S608
    first = max(day_of(oldest), today - _BACK_DAYS * DAY_S) if oldest is not None else today
    day = first
    while day <= today + _AHEAD_DAYS * DAY_S:
        create_day(connection, day)
        day += DAY_S
    # Copied before the keys and indexes exist: each is then built once, partition by
    # partition, rather than kept up row by row.
    run(f"INSERT INTO {EVENTS} ({_COLUMNS}) SELECT {_COLUMNS} FROM {_OLD}")  # noqa: S608
    run(f"ALTER TABLE {EVENTS} ADD CONSTRAINT agent_events_pkey PRIMARY KEY (id, at)")
    run(f"CREATE INDEX ix_agent_events_agent_at ON {EVENTS} (agent_id, at)")
    run(
        f"ALTER TABLE {EVENTS} ADD CONSTRAINT agent_events_agent_id_fkey FOREIGN KEY (agent_id) "
        "REFERENCES agents (id) ON DELETE CASCADE"
    )
    run(f"DROP TABLE {_OLD}")
    run(f"ANALYZE {EVENTS}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _unpartition()
    op.drop_index("ix_history_archives_kind_until", table_name="history_archives")
    op.drop_table("history_archives")


def _unpartition() -> None:
    run = op.execute
    days = partitions(op.get_bind())
    run(f"LOCK TABLE {EVENTS} IN ACCESS EXCLUSIVE MODE")
    run(f"CREATE TABLE {_OLD} (LIKE {EVENTS} INCLUDING DEFAULTS)")
    run(f"INSERT INTO {_OLD} SELECT * FROM {EVENTS}")  # noqa: S608
    run("ALTER SEQUENCE agent_events_id_seq OWNED BY NONE")
    for day in days:
        run(f"DROP TABLE {day.name}")
    run(f"DROP TABLE {EVENTS}")
    run(f"ALTER TABLE {_OLD} RENAME TO {EVENTS}")
    run(f"ALTER SEQUENCE agent_events_id_seq OWNED BY {EVENTS}.id")
    run(f"ALTER TABLE {EVENTS} ADD CONSTRAINT agent_events_pkey PRIMARY KEY (id)")
    run(f"CREATE INDEX ix_agent_events_agent_at ON {EVENTS} (agent_id, at)")
    run(
        f"ALTER TABLE {EVENTS} ADD CONSTRAINT agent_events_agent_id_fkey FOREIGN KEY (agent_id) "
        "REFERENCES agents (id) ON DELETE CASCADE"
    )
