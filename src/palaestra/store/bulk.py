"""Many-row writes for the dispatch hot path, handed to the driver as they are.

The dispatcher writes three rows per task (the task, its end, a history row).
Through SQLAlchemy Core each row costs a few microseconds of parameter
processing plus the standard library's JSON encoder, which together weigh as
much as the HTTP call itself. These helpers build the statement once per
shape, serialize JSON columns with orjson, and pass positional parameters to
the DBAPI with ``exec_driver_sql``: the same tables and transactions, on
SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy import JSON, Table
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["insert_rows", "update_rows"]


def _placeholder(paramstyle: str, position: int) -> str:
    match paramstyle:
        case "qmark":
            return "?"
        case "numeric_dollar":
            return f"${position}"
        case "numeric":
            return f":{position}"
        case "format" | "pyformat":
            return "%s"
        case _:  # pragma: no cover - no supported driver uses another style positionally
            raise NotImplementedError(f"paramstyle {paramstyle}")


@lru_cache(maxsize=64)
def _json_columns(table: Table, columns: tuple[str, ...]) -> tuple[bool, ...]:
    """Which of ``columns`` hold JSON; a name that is not a column of ``table`` is a KeyError,
    so only the schema's own identifiers ever reach the SQL text."""
    return tuple(isinstance(table.c[name].type, JSON) for name in columns)


def _json(value: Any) -> str | None:
    # An ``orjson.Fragment`` (JSON already serialized) passes through as it is.
    return None if value is None else orjson.dumps(value).decode()


def _values(
    rows: Sequence[Mapping[str, Any]], columns: tuple[str, ...], json: tuple[bool, ...]
) -> list[tuple[Any, ...]]:
    # Per row: one list built by a single comprehension, then the few JSON columns
    # patched in place (a generator per row costs several times more); the driver
    # layer takes tuples.
    patched = [
        (index, column)
        for index, (column, is_json) in enumerate(zip(columns, json, strict=True))
        if is_json
    ]
    values = []
    for row in rows:
        value = [row[c] for c in columns]
        for index, column in patched:
            value[index] = _json(row[column])
        values.append(tuple(value))
    return values


@lru_cache(maxsize=64)
def _insert_sql(table: str, columns: tuple[str, ...], paramstyle: str) -> str:
    marks = ", ".join(_placeholder(paramstyle, n) for n in range(1, len(columns) + 1))
    # Identifiers are the table's own (checked by _json_columns); values are bound.
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"  # noqa: S608


async def insert_rows(
    connection: AsyncConnection, table: Table, rows: Sequence[Mapping[str, Any]]
) -> None:
    """INSERT ``rows`` (all with the same keys, which are column names) in one executemany."""
    if not rows:
        return
    columns = tuple(rows[0])
    sql = _insert_sql(table.name, columns, connection.dialect.paramstyle)
    await connection.exec_driver_sql(sql, _values(rows, columns, _json_columns(table, columns)))


@lru_cache(maxsize=64)
def _update_sql(
    table: str, columns: tuple[str, ...], conditions: tuple[str, ...], paramstyle: str
) -> str:
    marks = iter(range(1, len(columns) + len(conditions) + 1))
    assignments = ", ".join(f"{c} = {_placeholder(paramstyle, next(marks))}" for c in columns)
    where = " AND ".join(f"{c} = {_placeholder(paramstyle, next(marks))}" for c in conditions)
    # Identifiers are the table's own (checked by _json_columns); values are bound.
    return f"UPDATE {table} SET {assignments} WHERE {where}"  # noqa: S608


async def update_rows(
    connection: AsyncConnection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    match: Mapping[str, str],
) -> int:
    """UPDATE one row per item of ``rows`` in one executemany.

    ``match`` maps a column to the item key holding the value it must equal (all of them
    must); every other key of the item is a column to set. Returns the total row count
    where the driver reports it (SQLite), else -1.
    """
    if not rows:
        return 0
    sources = tuple(match.values())
    columns = tuple(c for c in rows[0] if c not in sources)
    conditions = tuple(match)
    sql = _update_sql(table.name, columns, conditions, connection.dialect.paramstyle)
    json = _json_columns(table, columns) + (False,) * len(sources)
    _json_columns(table, conditions)  # the matched columns are the table's own too
    values = _values(rows, (*columns, *sources), json)
    result = await connection.exec_driver_sql(sql, values)
    return result.rowcount if connection.dialect.supports_sane_multi_rowcount else -1
