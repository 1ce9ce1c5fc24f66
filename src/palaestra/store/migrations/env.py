"""Alembic environment: migrations always run on a connection handed in by Palaestra."""

from __future__ import annotations

from alembic import context

from palaestra.store import archives  # noqa: F401 (its table joins the metadata)
from palaestra.store.base import Base
from palaestra.store.partitions import include_name

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `palaestra migrate` (or Database.migrate)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    include_name=include_name,
)
with context.begin_transaction():
    context.run_migrations()
