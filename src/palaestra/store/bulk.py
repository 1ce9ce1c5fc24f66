"""Many-row writes for the dispatch hot path, handed to the driver as they are.

The dispatcher writes three rows per task (the task, its end, a history row).
Through SQLAlchemy Core each row costs a few microseconds of parameter
processing plus the standard library's JSON encoder, which together weigh as
much as the HTTP call itself. These helpers build the statement once per
shape, serialize JSON columns with orjson, and pass positional parameters to
the driver: the same tables and transactions, on SQLite and PostgreSQL alike.
They take the synchronous connection of
:meth:`Database.transact <palaestra.store.db.Database.transact>`.

Many rows go in one statement. On SQLite that keeps the calls into the driver
few, because the store's writer thread hands the GIL back at each of them and
must wait to retake it behind the busy event loop. On PostgreSQL the rows go
as one array per column, unnested into a table (:func:`_unnest_insert_sql`):
one statement whatever the count, prepared once, where an executemany cost
the server a statement execution per row (the tasks' INSERT alone was a
third of its time in a whole-run benchmark).

Why not SQLAlchemy's own batching: ``bench/bulk.py`` writes the dispatcher's
rows (a task opened; then ended, with its history row) in batches of 200,
one transaction each, against Core ``execute(insert(table), rows)`` and an
``update()`` with bound parameters (executemany), and against the same
INSERTs with ``RETURNING``, which is when SQLAlchemy batches them into
multi-row statements ("insertmanyvalues"; on pysqlite and asyncpg it does not
without, and it has nothing of the kind for an UPDATE). SQLAlchemy against
these helpers, medians of 5 to 9 alternating rounds, ranges over the runs
(two on SQLite, three on PostgreSQL): on SQLite 1.7 to 2.4x the CPU per row
and 1.7 to 2.2x the wall time per batch (1.3 to 1.9x with the event loop
busy); on PostgreSQL 1.4 to 2.5x the CPU per row for about the same wall
time (0.8 to 1.5x). That CPU is spent in the dispatcher's own process, the
one that also sends the tasks, so these helpers stay.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from itertools import chain
from typing import Any, Final

import orjson
from sqlalchemy import JSON, Table
from sqlalchemy.engine import Connection

__all__ = ["insert_rows", "insert_values", "json_text", "update_rows", "update_values"]

#: Rows per statement where many go in one, at most; SQLite binds at most 32,766 values.
_CHUNK: Final = 256
_MAX_VALUES: Final = 32_766


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


def json_text(value: Any) -> str | None:
    """A JSON column's value as the driver takes it (``orjson.Fragment``: JSON already
    serialized, passed through as it is)."""
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
            value[index] = json_text(row[column])
        values.append(tuple(value))
    return values


def _multirow(connection: Connection) -> bool:
    """SQLite takes many rows in one statement (``UPDATE ... FROM`` since 3.33), and should:
    its driver releases and retakes the GIL around every row of an executemany, and each
    retake waits behind a busy event loop."""
    return connection.dialect.name == "sqlite" and sqlite3.sqlite_version_info >= (3, 33)


def _arrays(connection: Connection) -> bool:
    """PostgreSQL takes a column of values as one array parameter."""
    return connection.dialect.name == "postgresql"


@lru_cache(maxsize=64)
def _array_types(table: Table, columns: tuple[str, ...], dialect: Any) -> tuple[str, ...]:
    """Each column's array type for ``unnest``, JSON as text (cast back per value)."""
    return tuple(
        "TEXT" if isinstance(table.c[name].type, JSON) else table.c[name].type.compile(dialect)
        for name in columns
    )


def _unnested(table: Table, columns: tuple[str, ...], dialect: Any) -> tuple[str, list[str]]:
    """``unnest($1::T1[], ...) AS v(p1, ...)`` over ``columns``, and each column's value
    as read from it (``v.p1``, ``v.p2::JSON``)."""
    types = _array_types(table, columns, dialect)
    arrays = ", ".join(f"${n}::{kind}[]" for n, kind in enumerate(types, 1))
    names = ", ".join(f"p{n}" for n in range(1, len(columns) + 1))
    read = [
        f"v.p{n}::JSON" if is_json else f"v.p{n}"
        for n, is_json in enumerate(_json_columns(table, columns), 1)
    ]
    return f"unnest({arrays}) AS v({names})", read


@lru_cache(maxsize=64)
def _unnest_insert_sql(table: Table, columns: tuple[str, ...], dialect: Any, skip: bool) -> str:
    source, read = _unnested(table, columns, dialect)
    conflict = " ON CONFLICT DO NOTHING" if skip else ""
    # Identifiers and types are the table's own (checked by _json_columns); values are bound.
    return (
        f"INSERT INTO {table.name} ({', '.join(columns)}) "  # noqa: S608
        f"SELECT {', '.join(read)} FROM {source}{conflict}"
    )


@lru_cache(maxsize=64)
def _unnest_update_sql(
    table: Table, columns: tuple[str, ...], conditions: tuple[str, ...], dialect: Any
) -> str:
    source, read = _unnested(table, (*columns, *conditions), dialect)
    assignments = ", ".join(f"{c} = {r}" for c, r in zip(columns, read, strict=False))
    where = " AND ".join(
        f"{table.name}.{c} = {r}" for c, r in zip(conditions, read[len(columns) :], strict=True)
    )
    # Identifiers and types are the table's own (checked by _json_columns); values are bound.
    return f"UPDATE {table.name} SET {assignments} FROM {source} WHERE {where}"  # noqa: S608


def _columns_of(values: Sequence[tuple[Any, ...]]) -> tuple[list[Any], ...]:
    return tuple(list(column) for column in zip(*values, strict=True))


def _chunks(values: Sequence[tuple[Any, ...]]) -> Iterator[Sequence[tuple[Any, ...]]]:
    """``values`` in runs of ``_CHUNK`` rows (fewer for wide rows), the rest in falling
    powers of two: a few statement shapes, each prepared once by the driver's statement
    cache, and few calls into SQLite (each one hands the GIL back and waits to retake it)."""
    start, size = 0, _CHUNK
    while values and size > 1 and size * len(values[0]) > _MAX_VALUES:
        size //= 2
    while start < len(values):
        while start + size > len(values):
            size //= 2
        yield values[start : start + size]
        start += size


def _flat(chunk: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    return tuple(chain.from_iterable(chunk))


def _rows_sql(paramstyle: str, width: int, count: int) -> str:
    """``(?, ?), (?, ?)``: ``count`` rows of ``width`` placeholders, numbered in order."""
    marks = [_placeholder(paramstyle, n) for n in range(1, width * count + 1)]
    rows = (", ".join(marks[start : start + width]) for start in range(0, len(marks), width))
    return ", ".join(f"({row})" for row in rows)


@lru_cache(maxsize=256)
def _insert_sql(
    table: str, columns: tuple[str, ...], paramstyle: str, count: int = 1, skip: bool = False
) -> str:
    # Identifiers are the table's own (checked by _json_columns); values are bound.
    values = _rows_sql(paramstyle, len(columns), count)
    conflict = " ON CONFLICT DO NOTHING" if skip else ""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values}{conflict}"  # noqa: S608


def insert_rows(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """INSERT ``rows`` (all with the same keys, which are column names)."""
    if rows:
        columns = tuple(rows[0])
        insert_values(
            connection, table, columns, _values(rows, columns, _json_columns(table, columns))
        )


def insert_values(
    connection: Connection,
    table: Table,
    columns: tuple[str, ...],
    values: Sequence[tuple[Any, ...]],
    *,
    skip_conflicts: bool = False,
) -> None:
    """INSERT ``values``, one tuple per row in ``columns``' order, JSON columns already as
    text (:func:`json_text`): many rows per statement on SQLite, all in one on PostgreSQL,
    elsewhere one executemany. For callers that build their rows before the transaction.
    With ``skip_conflicts``, a row that a unique index already holds is left out."""
    if not values:
        return
    _json_columns(table, columns)  # only the table's own identifiers reach the SQL text
    if _arrays(connection):
        sql = _unnest_insert_sql(table, columns, connection.dialect, skip_conflicts)
        connection.exec_driver_sql(sql, _columns_of(values))
        return
    paramstyle = connection.dialect.paramstyle
    if not _multirow(connection):
        sql = _insert_sql(table.name, columns, paramstyle, skip=skip_conflicts)
        connection.exec_driver_sql(sql, list(values))
        return
    for chunk in _chunks(values):
        sql = _insert_sql(table.name, columns, paramstyle, len(chunk), skip_conflicts)
        connection.exec_driver_sql(sql, _flat(chunk))


@lru_cache(maxsize=64)
def _update_sql(
    table: str, columns: tuple[str, ...], conditions: tuple[str, ...], paramstyle: str
) -> str:
    marks = iter(range(1, len(columns) + len(conditions) + 1))
    assignments = ", ".join(f"{c} = {_placeholder(paramstyle, next(marks))}" for c in columns)
    where = " AND ".join(f"{c} = {_placeholder(paramstyle, next(marks))}" for c in conditions)
    # Identifiers are the table's own (checked by _json_columns); values are bound.
    return f"UPDATE {table} SET {assignments} WHERE {where}"  # noqa: S608


@lru_cache(maxsize=256)
def _update_from_sql(
    table: str, columns: tuple[str, ...], conditions: tuple[str, ...], paramstyle: str, count: int
) -> str:
    """``count`` rows' updates in one statement: the values as a table, joined on the
    conditions (SQLite's ``UPDATE ... FROM``; a ``VALUES`` table's columns are named
    ``column1``, ``column2``, ...)."""
    names = [f"v.column{n}" for n in range(1, len(columns) + len(conditions) + 1)]
    assignments = ", ".join(f"{c} = {n}" for c, n in zip(columns, names, strict=False))
    where = " AND ".join(
        f"{table}.{c} = {n}" for c, n in zip(conditions, names[len(columns) :], strict=True)
    )
    values = _rows_sql(paramstyle, len(names), count)
    # Identifiers are the table's own (checked by _json_columns); values are bound.
    return f"UPDATE {table} SET {assignments} FROM (VALUES {values}) AS v WHERE {where}"  # noqa: S608


def update_rows(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    match: Mapping[str, str],
) -> int:
    """UPDATE one row per item of ``rows``.

    ``match`` maps a column to the item key holding the value it must equal (all of them
    must; no two items may match the same row); every other key of the item is
    a column to set. Returns the total row count where the driver reports it,
    else -1.
    """
    if not rows:
        return 0
    sources = tuple(match.values())
    columns = tuple(c for c in rows[0] if c not in sources)
    json = _json_columns(table, columns) + (False,) * len(sources)
    values = _values(rows, (*columns, *sources), json)
    return update_values(connection, table, columns, tuple(match), values)


def update_values(
    connection: Connection,
    table: Table,
    columns: tuple[str, ...],
    conditions: tuple[str, ...],
    values: Sequence[tuple[Any, ...]],
) -> int:
    """UPDATE one row per tuple of ``values``: the new values of ``columns`` (JSON already as
    text), then those ``conditions`` must equal. Many rows per statement on SQLite, all in
    one on PostgreSQL (in both, no two tuples may match the same row), elsewhere one
    executemany. Returns the total row count where the driver reports it, else -1."""
    if not values:
        return 0
    _json_columns(table, (*columns, *conditions))  # only the table's own identifiers
    if _arrays(connection):
        sql = _unnest_update_sql(table, columns, conditions, connection.dialect)
        return connection.exec_driver_sql(sql, _columns_of(values)).rowcount
    paramstyle = connection.dialect.paramstyle
    if not _multirow(connection):
        sql = _update_sql(table.name, columns, conditions, paramstyle)
        result = connection.exec_driver_sql(sql, list(values))
        return result.rowcount if connection.dialect.supports_sane_multi_rowcount else -1
    count = 0
    for chunk in _chunks(values):
        sql = _update_from_sql(table.name, columns, conditions, paramstyle, len(chunk))
        count += connection.exec_driver_sql(sql, _flat(chunk)).rowcount
    return count
