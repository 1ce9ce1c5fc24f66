"""Paged lists: the ``cursor`` parameter, and the next page announced in the headers.

A list's body stays the JSON array it always was; when more rows follow, the answer
carries ``Link: <...&cursor=...>; rel="next"`` (RFC 8288, relative to the request) and
``X-Next-Cursor``. The last page has neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query, Request, Response

from palaestra.store.paging import (
    KEYSET_CURSOR,
    POSITION_CURSOR,
    RANKED_CURSOR,
    SERIAL_CURSOR,
    Page,
)

__all__ = [
    "NEXT_CURSOR_HEADER",
    "PAGED",
    "KeysetCursorQuery",
    "Pager",
    "PagerDep",
    "PositionCursorQuery",
    "RankedCursorQuery",
    "SerialCursorQuery",
]

NEXT_CURSOR_HEADER = "X-Next-Cursor"

#: The OpenAPI description of a paged list's headers, for its route's ``responses``.
PAGED: dict[int | str, dict[str, Any]] = {
    200: {
        "headers": {
            "Link": {
                "description": 'The next page: <path?query&cursor=...>; rel="next" '
                "(absent on the last page).",
                "schema": {"type": "string"},
            },
            NEXT_CURSOR_HEADER: {
                "description": "The next page's cursor (absent on the last page).",
                "schema": {"type": "string"},
            },
        }
    }
}

_WHERE = (
    "Where the page starts: the X-Next-Cursor (or Link rel=next) of the previous page; "
    "absent for the first page. Any string of the pattern is a place in the list (a "
    "page from there), so a cursor is best taken from the server."
)


def _cursor(pattern: str, shape: str) -> Any:
    return Query(pattern=pattern, max_length=200, description=f"{_WHERE} Its shape: {shape}.")


#: A keyset list's cursor (agents, runs, matches).
KeysetCursorQuery = Annotated[
    str | None, _cursor(KEYSET_CURSOR, "k, the row's time as a hex float, ~, the row's id")
]
#: A published table's cursor (a leaderboard).
PositionCursorQuery = Annotated[
    str | None,
    _cursor(
        POSITION_CURSOR,
        "p, the snapshot's time as a hex float, ~, an offset; another snapshot's is a 409",
    ),
]
#: A ranked table's cursor (the live ratings).
RankedCursorQuery = Annotated[
    str | None, _cursor(RANKED_CURSOR, "r, the row's value as a hex float, ~, the row's id")
]
#: An append-only list's cursor (an agent's history).
SerialCursorQuery = Annotated[str | None, _cursor(SERIAL_CURSOR, "s and the row's serial id")]


Row = TypeVar("Row")
Shown = TypeVar("Shown")


class Pager:
    """A paged list's answer (a route dependency, :data:`PagerDep`): its rows as the API
    shows them, the next page announced in the response's headers."""

    def __init__(self, request: Request, response: Response) -> None:
        self.request = request
        self.response = response

    def rows(self, page: Page[Row], limit: int, shown: Callable[[Row], Shown]) -> list[Shown]:
        """``page``'s rows, each ``shown``, with its next page announced."""
        self.announce(page.next_cursor, limit)
        return [shown(row) for row in page.items]

    def announce(self, next_cursor: str | None, limit: int) -> None:
        """Put the next page's cursor and link on the response, when there is a next page."""
        if next_cursor is None:
            return
        url = self.request.url.include_query_params(cursor=next_cursor, limit=limit)
        self.response.headers["Link"] = f'<{url.path}?{url.query}>; rel="next"'
        self.response.headers[NEXT_CURSOR_HEADER] = next_cursor


PagerDep = Annotated[Pager, Depends()]
