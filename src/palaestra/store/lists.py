"""``column IN (a list)`` as each store runs it best: :func:`one_of`.

A step's queries each take a list of ids (its runs, their tasks, their agents),
of a different length every time. As an expanding ``IN`` parameter, each length
is another SQL text: on PostgreSQL another statement for asyncpg to prepare (a
round trip, and the prepared statements' caches churn), and on every execution
SQLAlchemy rewrites the statement for the list. On PostgreSQL :func:`one_of`
is ``column = ANY(:list)`` instead: one array parameter, one statement whatever
the length, prepared once. On SQLite it is the expanding ``IN`` as before. The
two mean the same: a row matches when its value is one of the list's (an empty
list matches none; duplicates change nothing).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ARRAY, Boolean, any_, bindparam
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

__all__ = ["one_of"]


class _OneOf(ColumnElement[bool]):
    """``column`` is one of the list bound as ``name``; compiled per dialect below."""

    __visit_name__ = "palaestra_one_of"
    inherit_cache = True
    _traverse_internals = [  # noqa: RUF012 - SQLAlchemy's own declaration, as it reads it
        ("column", InternalTraversal.dp_clauseelement),
        ("name", InternalTraversal.dp_string),
    ]
    type = Boolean()
    _is_implicitly_boolean = True  # a comparison: no "= 1" where booleans are integers

    def __init__(self, column: ColumnElement[Any], name: str) -> None:
        self.column = column
        self.name = name
        self.expanding = column.in_(bindparam(name, expanding=True))
        self.array = column == any_(bindparam(name, type_=ARRAY(column.type)))


def one_of(column: Any, name: str) -> ColumnElement[bool]:
    """``column`` is one of the values of the list parameter ``name`` (see the module
    docstring)."""
    return _OneOf(column, name)


@compiles(_OneOf)
def _in(element: _OneOf, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.expanding, **kw)


@compiles(_OneOf, "postgresql")
def _any(element: _OneOf, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.array, **kw)
