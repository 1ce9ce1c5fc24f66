"""Keyset pages of a list, newest first, behind an opaque cursor.

A list is ordered by ``(created_at, id)`` descending; a page's cursor is the key of its
last row, and the next page holds the rows strictly below it. Rows inserted meanwhile
sort above the first page (their ids and times are newer), so walking the pages sees
every row that existed when the walk began exactly once.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar, TypeVarTuple

from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from palaestra.errors import Conflict, InvalidRequest

__all__ = [
    "FIRST_PAGE",
    "Key",
    "Page",
    "decode_cursor",
    "decode_position",
    "decode_ranked",
    "decode_serial",
    "encode_cursor",
    "encode_position",
    "encode_ranked",
    "encode_serial",
    "keyset",
    "keyset_before",
    "keyset_serial",
    "keyset_serial_before",
    "page_of",
    "page_of_serial",
    "previous_cursor",
    "previous_serial",
]

T = TypeVar("T")
Row = TypeVarTuple("Row")


@dataclass(frozen=True, slots=True)
class Key:
    """Where a row sorts: its creation time, then its id."""

    created_at: float
    id: str


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of rows, and the cursor of the next page (``None`` on the last).

    ``previous_cursor``, when it was asked for, is the page before's: ``FIRST_PAGE`` for
    the first page, ``None`` when this is the first page or it was not asked for.
    """

    items: list[T]
    next_cursor: str | None
    previous_cursor: str | None = None


def encode_cursor(key: Key) -> str:
    raw = json.dumps([key.created_at, key.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Key:
    """The key a cursor holds; :class:`InvalidRequest` for anything no page gave."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, row_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError):
        raise InvalidRequest("cursor: not a cursor of this list") from None
    if not isinstance(created_at, int | float) or isinstance(created_at, bool):
        raise InvalidRequest("cursor: not a cursor of this list")
    if not isinstance(row_id, str):
        raise InvalidRequest("cursor: not a cursor of this list")
    return Key(float(created_at), row_id)


def keyset(
    query: Select[*Row],
    created_at: InstrumentedAttribute[float],
    row_id: InstrumentedAttribute[str],
    cursor: str | None,
    limit: int,
) -> Select[*Row]:
    """``query`` ordered newest first, below ``cursor``, one row more than ``limit``.

    The extra row tells :func:`page_of` whether another page follows.
    """
    query = query.order_by(created_at.desc(), row_id.desc()).limit(limit + 1)
    if cursor is None:
        return query
    after = decode_cursor(cursor)
    return query.where(
        or_(
            created_at < after.created_at,
            and_(created_at == after.created_at, row_id < after.id),
        )
    )


def keyset_before(
    query: Select[*Row],
    created_at: InstrumentedAttribute[float],
    row_id: InstrumentedAttribute[str],
    cursor: str,
    limit: int,
) -> Select[*Row]:
    """The rows of the page before the one ``cursor`` starts, oldest first, one row more.

    The page before holds the ``limit`` rows that end with the cursor's own row; the row
    above them, when there is one, is that page's cursor (see :func:`previous_cursor`).
    """
    at = decode_cursor(cursor)
    return (
        query.where(
            or_(
                created_at > at.created_at,
                and_(created_at == at.created_at, row_id >= at.id),
            )
        )
        .order_by(created_at.asc(), row_id.asc())
        .limit(limit + 1)
    )


#: What :func:`previous_cursor` answers when the page before is the first page.
FIRST_PAGE = ""


def previous_cursor(rows: Sequence[T], limit: int, key: Callable[[T], Key]) -> str:
    """The cursor of the page before, from the rows :func:`keyset_before` read."""
    if len(rows) <= limit:
        return FIRST_PAGE
    return encode_cursor(key(rows[limit]))


def page_of(rows: Sequence[T], limit: int, key: Callable[[T], Key]) -> Page[T]:
    """The page of ``rows`` (read by :func:`keyset` with ``limit``), with the next cursor."""
    items = list(rows[:limit])
    if len(rows) <= limit or not items:
        return Page(items, None)
    return Page(items, encode_cursor(key(items[-1])))


# A published table (a leaderboard snapshot) never changes: a page of it is a window,
# and its cursor the snapshot's time and the window's end.


def encode_position(snapshot: float, offset: int) -> str:
    """The cursor of the rows of ``snapshot`` from ``offset`` on."""
    return encode_cursor(Key(snapshot, str(offset)))


def decode_position(cursor: str, snapshot: float) -> int:
    """Where in ``snapshot`` a cursor points; :class:`Conflict` if it was another snapshot's."""
    key = decode_cursor(cursor)
    if not key.id.isdigit():
        raise InvalidRequest("cursor: not a cursor of this list")
    if key.created_at != snapshot:
        raise Conflict("cursor: the leaderboard was published again since; start from the top")
    return int(key.id)


# An append-only table with a serial id (an agent's history) pages on the id alone.


def encode_serial(row_id: int) -> str:
    """The cursor of the rows below ``row_id``, newest first."""
    return encode_cursor(Key(0.0, str(row_id)))


def decode_serial(cursor: str) -> int:
    key = decode_cursor(cursor)
    if key.created_at != 0.0 or not key.id.isdigit():
        raise InvalidRequest("cursor: not a cursor of this list")
    return int(key.id)


def keyset_serial(
    query: Select[*Row], row_id: InstrumentedAttribute[int], cursor: str | None, limit: int
) -> Select[*Row]:
    """``query`` newest first by ``row_id``, below ``cursor``, one row more than ``limit``."""
    query = query.order_by(row_id.desc()).limit(limit + 1)
    return query if cursor is None else query.where(row_id < decode_serial(cursor))


def keyset_serial_before(
    query: Select[*Row], row_id: InstrumentedAttribute[int], cursor: str, limit: int
) -> Select[*Row]:
    """The ids of the page before the one ``cursor`` starts, oldest first, one more."""
    return query.where(row_id >= decode_serial(cursor)).order_by(row_id.asc()).limit(limit + 1)


def page_of_serial(rows: Sequence[T], limit: int, row_id: Callable[[T], int]) -> Page[T]:
    """The page of ``rows`` (read by :func:`keyset_serial`), with the next cursor."""
    items = list(rows[:limit])
    following = encode_serial(row_id(items[-1])) if len(rows) > limit else None
    return Page(items, following)


def previous_serial(ids: Sequence[int], limit: int) -> str:
    """The cursor of the page before, from the ids :func:`keyset_serial_before` read."""
    return encode_serial(ids[limit]) if len(ids) > limit else FIRST_PAGE


# A table ranked by a value that moves (the live ratings), then by a name and an id, pages
# on the row's place in that order: the cursor holds the last row's value and id (its name,
# which never changes, is looked up), and the next page holds the rows ranked below it.


def encode_ranked(value: float, row_id: str) -> str:
    """The cursor of the rows ranked below the row ``row_id``, whose value was ``value``."""
    raw = json.dumps(["ranked", value, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_ranked(cursor: str) -> tuple[float, str]:
    """The value and id a cursor holds; :class:`InvalidRequest` for anything no page gave."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        tag, value, row_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError):
        raise InvalidRequest("cursor: not a cursor of this list") from None
    if tag != "ranked" or not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidRequest("cursor: not a cursor of this list")
    if not math.isfinite(value) or not isinstance(row_id, str):
        raise InvalidRequest("cursor: not a cursor of this list")
    return float(value), row_id
