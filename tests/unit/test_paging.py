"""Cursors: what a page gives back is what the next page reads, and nothing else is taken."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from palaestra.errors import InvalidRequest
from palaestra.store.paging import (
    FIRST_PAGE,
    Key,
    decode_cursor,
    decode_ranked,
    decode_serial,
    encode_cursor,
    encode_ranked,
    page_of,
    page_of_serial,
    previous_cursor,
    previous_serial,
)


@given(
    st.floats(min_value=0, max_value=4e9, allow_nan=False),
    st.text(min_size=1, max_size=40),
)
def test_a_cursor_gives_back_its_key_exactly(created_at: float, row_id: str) -> None:
    cursor = encode_cursor(Key(created_at, row_id))
    assert "=" not in cursor
    assert decode_cursor(cursor) == Key(created_at, row_id)


def _raw(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor",
        "%%%",
        _raw("null"),
        _raw("[1]"),
        _raw("[1, 2, 3]"),
        _raw('["1", "id"]'),
        _raw('[true, "id"]'),
        _raw("[1.5, 7]"),
        _raw('{"a": 1}'),
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


@given(st.floats(allow_nan=False, allow_infinity=False), st.text(min_size=1, max_size=40))
def test_a_ranked_cursor_gives_back_its_place_exactly(value: float, row_id: str) -> None:
    assert decode_ranked(encode_ranked(value, row_id)) == (value, row_id)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "%%%",
        encode_cursor(Key(1.0, "id")),  # another list's cursor
        _raw('["ranked", NaN, "id"]'),
        _raw('["ranked", Infinity, "id"]'),
        _raw('["ranked", true, "id"]'),
        _raw('["ranked", "1", "id"]'),
        _raw('["ranked", 1, 2]'),
        _raw('["ranked", 1]'),
        _raw('["other", 1, "id"]'),
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
