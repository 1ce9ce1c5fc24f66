"""What the revisions write again and again: their usual columns, and columns added and dropped.

Each helper builds exactly what the revisions wrote out before it existed, so a database
migrated with them has the schema one migrated without them had.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

Column = sa.Column[Any]


def serial_id() -> Column:
    """A table's own ``id``, counted up by the store (a BIGINT, SQLite's INTEGER rowid)."""
    return sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        autoincrement=True,
        nullable=False,
    )


def ref(name: str, *, nullable: bool = False) -> Column:
    """A row's id (a UUID's 36 characters), its own or one it refers to."""
    return sa.Column(name, sa.String(length=36), nullable=nullable)


def stamps(*names: str) -> list[Column]:
    """Required times (seconds since the epoch), e.g. ``created_at`` and ``updated_at``."""
    return [sa.Column(name, sa.Float(), nullable=False) for name in names]


def add_columns(table: str, *columns: Column) -> None:
    """Add ``columns`` to ``table`` (in batch mode: SQLite rebuilds the table if it must)."""
    with op.batch_alter_table(table) as batch:
        for column in columns:
            batch.add_column(column)


def drop_columns(table: str, *names: str) -> None:
    """Drop the columns called ``names`` from ``table``, in that order."""
    with op.batch_alter_table(table) as batch:
        for name in names:
            batch.drop_column(name)


def adding_columns(table: str, *columns: Column) -> tuple[Callable[[], None], Callable[[], None]]:
    """The ``upgrade`` and ``downgrade`` of a revision that only adds ``columns`` to ``table``:
    the downgrade drops them again, the last added first."""
    names = [column.name for column in reversed(columns)]
    return (lambda: add_columns(table, *columns)), (lambda: drop_columns(table, *names))
