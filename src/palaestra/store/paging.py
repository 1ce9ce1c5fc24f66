"""Keyset pages of a list, newest first, behind an opaque cursor.

A list is ordered by ``(created_at, id)`` descending; a page's cursor is the key of its
last row, and the next page holds the rows strictly below it. Rows inserted meanwhile
sort above the first page (their ids and times are newer), so walking the pages sees
every row that existed when the walk began exactly once.

Each kind of cursor has a pattern (``KEYSET_CURSOR`` and its siblings) that the API's
OpenAPI document states, and every string the pattern matches is a place in its list:
a time as its exact hexadecimal float (``float.hex``), then an id or an offset. So a
cursor made up to the pattern is taken (a page from that place), and only one that
breaks it is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar, TypeVarTuple

from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

from palaestra.errors import Conflict, InvalidRequest

__all__ = [
    "FIRST_PAGE",
    "KEYSET_CURSOR",
    "POSITION_CURSOR",
    "RANKED_CURSOR",
    "SERIAL_CURSOR",
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


#: A float exactly, as ``float.hex`` writes it without the exponent's ``+`` (which a query
#: string would turn into a space): every finite float, and nothing past the largest (a
#: positive exponent of at most 1023; a negative one only rounds towards 0).
_FLOAT = r"-?0x[01]\.[0-9a-f]{1,13}p(?:[0-9]{1,3}|10[01][0-9]|102[0-3]|-[0-9]{1,4})"
_ID = r"[0-9A-Za-z_-]{1,64}"
#: A keyset list's cursor (runs, matches, agents): ``k``, the row's time, ``~``, its id.
KEYSET_CURSOR = rf"^k{_FLOAT}~{_ID}$"
#: A published table's cursor (leaderboards): ``p``, the snapshot's time, ``~``, an offset.
POSITION_CURSOR = rf"^p{_FLOAT}~[0-9]{{1,9}}$"
#: An append-only list's cursor (an agent's history): ``s`` and the serial id.
SERIAL_CURSOR = r"^s[0-9]{1,18}$"
#: A ranked table's cursor (the live ratings): ``r``, the row's value, ``~``, its id.
RANKED_CURSOR = rf"^r{_FLOAT}~{_ID}$"
_PATTERNS = {
    kind: re.compile(pattern)
    for kind, pattern in (
        ("k", KEYSET_CURSOR),
        ("p", POSITION_CURSOR),
        ("s", SERIAL_CURSOR),
        ("r", RANKED_CURSOR),
    )
}
_NOT_OURS = "cursor: not a cursor of this list"


def _split(kind: str, cursor: str) -> tuple[float, str]:
    """The time (or value) and the id (or offset) of a cursor of ``kind``."""
    if not _PATTERNS[kind].fullmatch(cursor):
        raise InvalidRequest(_NOT_OURS)
    number, _, rest = cursor[1:].partition("~")
    return float.fromhex(number), rest


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"a cursor holds finite numbers, not {value}")
    return value.hex().replace("p+", "p")


def encode_cursor(key: Key) -> str:
    if not re.fullmatch(_ID, key.id):
        raise ValueError(f"a cursor's id is letters, digits, - and _: {key.id!r}")
    return f"k{_number(key.created_at)}~{key.id}"


def decode_cursor(cursor: str) -> Key:
    """The key a cursor holds; :class:`InvalidRequest` for anything not of its pattern."""
    created_at, row_id = _split("k", cursor)
    return Key(created_at, row_id)


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
    return f"p{_number(snapshot)}~{offset}"


def decode_position(cursor: str, snapshot: float) -> int:
    """Where in ``snapshot`` a cursor points; :class:`Conflict` if it was another snapshot's."""
    taken, offset = _split("p", cursor)
    if taken != snapshot:
        raise Conflict("cursor: the leaderboard was published again since; start from the top")
    return int(offset)


# An append-only table with a serial id (an agent's history) pages on the id alone.


def encode_serial(row_id: int) -> str:
    """The cursor of the rows below ``row_id``, newest first."""
    return f"s{row_id}"


def decode_serial(cursor: str) -> int:
    if not _PATTERNS["s"].fullmatch(cursor):
        raise InvalidRequest(_NOT_OURS)
    return int(cursor[1:])


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
    if not re.fullmatch(_ID, row_id):
        raise ValueError(f"a cursor's id is letters, digits, - and _: {row_id!r}")
    return f"r{_number(value)}~{row_id}"


def decode_ranked(cursor: str) -> tuple[float, str]:
    """The value and id a cursor holds; :class:`InvalidRequest` for anything not of its
    pattern."""
    return _split("r", cursor)
