"""What a read asks the store, and how the store plans it: for the plan tests, on both stores."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, text

from palaestra.platform import Platform

__all__ = ["plan", "selects"]


@contextmanager
def selects(
    platform: Platform, tables: tuple[str, ...] | None = None
) -> Iterator[list[tuple[str, Any]]]:
    """Every SELECT the platform's store issues meanwhile, with its parameters; with
    ``tables``, only those that read one of them."""
    seen: list[tuple[str, Any]] = []

    def record(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        named = tables is None or any(f"FROM {table}" in statement for table in tables)
        if named and statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    engine = platform.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def plan(platform: Platform, statement: str, parameters: Any) -> str:
    """The store's plan of ``statement``; on PostgreSQL with sequential scans priced out, so
    that small test tables show which index each read could use."""
    async with platform.db.engine.connect() as connection:
        if platform.db.is_sqlite:
            prefix = "EXPLAIN QUERY PLAN "
        else:
            prefix = "EXPLAIN "
            await connection.execute(text("SET enable_seqscan = off"))
        rows = await connection.exec_driver_sql(prefix + statement, parameters)
        return "\n".join(" ".join(str(v) for v in row) for row in rows)
