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


def uuid(name: str, *, nullable: bool = False) -> Column:
    """A row's id (a UUID, 36 characters), its own or one it refers to."""
    return sa.Column(name, sa.String(length=36), nullable=nullable)


def columns(type_: sa.types.TypeEngine[Any], *names: str, nullable: bool = False) -> list[Column]:
    """Columns of one type, e.g. the required times ``created_at`` and ``updated_at``."""
    return [sa.Column(name, type_, nullable=nullable) for name in names]


def keys(type_: sa.types.TypeEngine[Any], *names: str) -> list[Column]:
    """Primary key columns of one type, e.g. a roll-up's ``kind`` and ``outcome``."""
    return [sa.Column(name, type_, primary_key=True) for name in names]


def span_key() -> list[Column]:
    """A roll-up row's period, the first columns of its key: its length and its start."""
    return [*keys(sa.Integer(), "span"), *keys(sa.BigInteger(), "start")]


def create_indexes(table: str, indexes: dict[str, list[str]]) -> None:
    """Create the plain (not unique) indexes ``{name: columns}`` on ``table``."""
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name, indexed in indexes.items():
            batch_op.create_index(name, indexed, unique=False)


def drop_indexes(table: str, *names: str) -> None:
    """Drop the indexes called ``names`` from ``table``, in that order."""
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name in names:
            batch_op.drop_index(name)


def add_columns(table: str, *added: Column) -> None:
    """Add the ``added`` columns to ``table`` (batched: SQLite rebuilds the table if it must)."""
    with op.batch_alter_table(table) as batch:
        for column in added:
            batch.add_column(column)


def drop_columns(table: str, *names: str) -> None:
    """Drop the columns called ``names`` from ``table``, in that order."""
    with op.batch_alter_table(table) as batch:
        for name in names:
            batch.drop_column(name)


def adding_columns(table: str, *added: Column) -> tuple[Callable[[], None], Callable[[], None]]:
    """The ``upgrade`` and ``downgrade`` of a revision that only adds columns to ``table``:
    the downgrade drops them again, the last added first."""
    names = [column.name for column in reversed(added)]

    # Named functions: Alembic logs each step by its name ("Running upgrade 0003 -> 0004").
    def upgrade() -> None:
        add_columns(table, *added)

    def downgrade() -> None:
        drop_columns(table, *names)

    return upgrade, downgrade
