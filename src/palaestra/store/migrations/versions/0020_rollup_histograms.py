"""agent_rollups: a row per agent, span, kind, outcome and failure kind, its latency
histogram in one column

Until now a row also had a latency bucket in its key, so an agent with a few events a day
had about a row per event for ever (each in a bucket of its own). The rows of one (agent,
span, start, kind, outcome, failure) are merged into one: their events, latency sums,
first and last times summed as the job sums hours into days, and their buckets' counts
written as ``latency_histogram`` (``bucket:count`` pairs, ``store.rollup_models``), so
every count and every percentile read from them stays what it was; what a row kept for
its bucket alone (its latency sum, first and last time), which nothing read, is merged.

The table is rewritten: renamed aside, a new one created and filled from it by one
``INSERT ... SELECT`` grouped by the new key, the old one dropped, the index built again.
The downgrade writes a row per bucket again with its count, its group's first and last
time, and its group's latency sum on the highest bucket (so the groups' sums, counts and
percentiles are those of the merged row). See the operations guide's maintenance step.
"""

# The SQL here is built from this module's constants only.
# ruff: noqa: S608

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from palaestra.store.migrations.columns import columns, keys, span_key
from palaestra.store.rollup_sql import histogram_pairs_sql, histogram_sql

revision = "0020"
down_revision = "0019"

_TABLE = "agent_rollups"
_ASIDE = "agent_rollups_aside"
_INDEX = "ix_agent_rollups_span_start"
_KEYS = "agent_id, span, start, kind, outcome, failure"
_SUMS = "events, latency_ms_sum, first_at, last_at"


def _create(*shape: sa.Column[Any]) -> None:
    op.create_table(
        _TABLE,
        sa.Column(
            "agent_id",
            sa.String(36),
            sa.ForeignKey("agents.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        *span_key(),
        *keys(sa.String(32), "kind", "outcome", "failure"),
        *shape,
    )


def _set_aside() -> str:
    """The table renamed aside (its index dropped, its key's name freed): the dialect.

    On SQLite each statement before the copy commits on its own, so a migration cut short
    during the copy (a full disk, a killed process) has left the rows aside and is still
    to be run: it starts again from them, the half-made table dropped."""
    bind = op.get_bind()
    dialect = bind.dialect.name
    if sa.inspect(bind).has_table(_ASIDE):
        op.execute(f"DROP TABLE IF EXISTS {_TABLE}")
        return dialect
    op.execute(f"DROP INDEX IF EXISTS {_INDEX}")
    op.rename_table(_TABLE, _ASIDE)
    if dialect == "postgresql":  # the key's index keeps its name through the rename
        op.execute(f"ALTER TABLE {_ASIDE} RENAME CONSTRAINT {_TABLE}_pkey TO {_ASIDE}_pkey")
    return dialect


def _put_back() -> None:
    op.drop_table(_ASIDE)
    op.create_index(_INDEX, _TABLE, ["span", "start"])


def upgrade() -> None:
    dialect = _set_aside()
    _create(
        sa.Column("events", sa.BigInteger(), nullable=False),
        *columns(sa.Float(), "latency_ms_sum", "first_at", "last_at"),
        sa.Column("latency_histogram", sa.Text(), nullable=False),
    )
    # Read in key order, so SQLite joins each group's pairs with its buckets ascending.
    ordered = f"SELECT * FROM {_ASIDE} ORDER BY {_KEYS}, bucket"
    op.execute(
        f"INSERT INTO {_TABLE} ({_KEYS}, {_SUMS}, latency_histogram) "
        f"SELECT {_KEYS}, sum(events), sum(latency_ms_sum), min(first_at), max(last_at), "
        f"{histogram_sql(dialect, 'bucket', 'events')} FROM ({ordered}) AS b GROUP BY {_KEYS}"
    )
    _put_back()


def downgrade() -> None:
    dialect = _set_aside()
    _create(
        *keys(sa.Integer(), "bucket"),
        sa.Column("events", sa.BigInteger(), nullable=False),
        *columns(sa.Float(), "latency_ms_sum", "first_at", "last_at"),
    )
    keyed = ", ".join(f"r.{key}" for key in _KEYS.split(", "))
    pairs = (
        f"SELECT {keyed}, CAST(p.key AS INTEGER) AS bucket, CAST(p.value AS BIGINT) AS events, "
        "r.latency_ms_sum, r.first_at, r.last_at, "
        f"max(CAST(p.key AS INTEGER)) OVER (PARTITION BY {keyed}) AS highest "
        f"FROM {_ASIDE} AS r, {histogram_pairs_sql(dialect, 'r.latency_histogram')} AS p"
    )
    op.execute(
        f"INSERT INTO {_TABLE} ({_KEYS}, bucket, {_SUMS}) "
        f"SELECT {_KEYS}, bucket, events, "
        "CASE WHEN bucket = highest THEN latency_ms_sum ELSE 0 END, first_at, last_at "
        f"FROM ({pairs}) AS b"
    )
    _put_back()
