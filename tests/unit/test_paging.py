"""Cursors: what a page gives back is what the next page reads, and nothing else is taken."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from palaestra.errors import Conflict, InvalidRequest
from palaestra.store.paging import (
    FIRST_PAGE,
    KEYSET_CURSOR,
    POSITION_CURSOR,
    RANKED_CURSOR,
    SERIAL_CURSOR,
    Key,
    decode_cursor,
    decode_position,
    decode_ranked,
    decode_serial,
    encode_cursor,
    encode_position,
    encode_ranked,
    encode_serial,
    page_of,
    page_of_serial,
    previous_cursor,
    previous_serial,
)


@given(
    st.floats(min_value=0, max_value=4e9, allow_nan=False),
    st.text(alphabet="0123456789abcdefABCDEF-_xyz", min_size=1, max_size=64),
)
def test_a_cursor_gives_back_its_key_exactly(created_at: float, row_id: str) -> None:
    cursor = encode_cursor(Key(created_at, row_id))
    assert re.fullmatch(KEYSET_CURSOR, cursor)
    assert decode_cursor(cursor) == Key(created_at, row_id)


@given(st.from_regex(KEYSET_CURSOR, fullmatch=True))
def test_every_string_of_the_pattern_is_a_place(cursor: str) -> None:
    """The OpenAPI document states the pattern: whatever matches it is taken."""
    key = decode_cursor(cursor)
    assert encode_cursor(key) == cursor or decode_cursor(encode_cursor(key)) == key


@given(st.from_regex(POSITION_CURSOR, fullmatch=True))
def test_every_position_of_the_pattern_is_a_place_or_another_snapshot(cursor: str) -> None:
    snapshot = float.fromhex(cursor[1:].partition("~")[0])
    assert decode_position(cursor, snapshot) >= 0


@given(st.from_regex(SERIAL_CURSOR, fullmatch=True))
def test_every_serial_of_the_pattern_is_a_place(cursor: str) -> None:
    assert encode_serial(decode_serial(cursor)) == f"s{int(cursor[1:])}"


@given(st.from_regex(RANKED_CURSOR, fullmatch=True))
def test_every_ranked_cursor_of_the_pattern_is_a_place(cursor: str) -> None:
    value, row_id = decode_ranked(cursor)
    assert decode_ranked(encode_ranked(value, row_id)) == (value, row_id)


def test_a_position_of_another_snapshot_is_a_conflict() -> None:
    with pytest.raises(Conflict):
        decode_position(encode_position(1.5, 10), 2.5)
    assert decode_position(encode_position(1.5, 10), 1.5) == 10


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor",
        "%%%",
        "k1.5~id",
        "k0x1.8p0",
        "k0x1.8p0~",
        "k0x1.8p0~a b",
        "k0x1.8p+0~id",
        "k0x1.8p9999~id",
        "k0x1.8p1024~id",
        "p0x1.8p0~id",
        "s12",
        "r0x1.8p0~id",
        "WzEsICJpZCJd",
    ],
)
def test_anything_else_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidRequest, match="cursor: not a cursor of this list"):
        decode_cursor(cursor)


def key(row: tuple[float, str]) -> Key:
    return Key(*row)


ROWS = [(5.0, "e"), (4.0, "d"), (4.0, "c"), (1.0, "b")]


def test_a_page_with_a_row_beyond_it_points_at_its_last_row() -> None:
    page = page_of(ROWS, 3, key)
    assert page.items == ROWS[:3]
    assert page.next_cursor is not None
    assert decode_cursor(page.next_cursor) == Key(4.0, "c")


@pytest.mark.parametrize("limit", [4, 5])
def test_the_last_page_has_no_next(limit: int) -> None:
    assert page_of(ROWS, limit, key).next_cursor is None


def test_an_empty_page_has_no_next() -> None:
    assert page_of([], 3, key).next_cursor is None


def test_the_page_before_starts_below_the_row_above_it() -> None:
    above = [(1.0, "a"), (2.0, "b"), (3.0, "c")]  # oldest first, the cursor's row first
    assert decode_cursor(previous_cursor(above, 2, key)) == Key(3.0, "c")
    assert previous_cursor(above, 3, key) == FIRST_PAGE


@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.text(alphabet="0123456789abcdefABCDEF-_xyz", min_size=1, max_size=64),
)
def test_a_ranked_cursor_gives_back_its_place_exactly(value: float, row_id: str) -> None:
    assert decode_ranked(encode_ranked(value, row_id)) == (value, row_id)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "%%%",
        encode_cursor(Key(1.0, "id")),  # another list's cursor
        "rnan~id",
        "rinf~id",
        "r1~id",
        "r0x1.8p0",
        "r0x1.8p0~",
        "r0x1.8p0~i d",
    ],
)
def test_anything_else_is_not_a_ranked_cursor(cursor: str) -> None:
    with pytest.raises(InvalidRequest, match="cursor: not a cursor of this list"):
        decode_ranked(cursor)


def test_serial_pages_walk_down_and_back_up() -> None:
    ids = list(range(20, 0, -1))  # newest first, as keyset_serial reads them
    first = page_of_serial(ids[:4], 3, int)
    assert first.items == [20, 19, 18]
    assert first.next_cursor is not None
    assert decode_serial(first.next_cursor) == 18  # the next page holds the ids below 18
    assert page_of_serial([2, 1], 3, int).next_cursor is None
    # The page before the one starting below 15 ends with 15: 17, 16, 15; it starts below 18.
    assert decode_serial(previous_serial([15, 16, 17, 18], 3)) == 18
    assert previous_serial([15, 16, 17], 3) == FIRST_PAGE
