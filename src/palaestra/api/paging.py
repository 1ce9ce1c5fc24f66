"""Paged lists: the ``cursor`` parameter, and the next page announced in the headers.

A list's body stays the JSON array it always was; when more rows follow, the answer
carries ``Link: <...&cursor=...>; rel="next"`` (RFC 8288, relative to the request) and
``X-Next-Cursor``. The last page has neither.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request, Response

__all__ = ["NEXT_CURSOR_HEADER", "PAGED", "CursorQuery", "announce_next"]

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

CursorQuery = Annotated[
    str | None,
    Query(
        max_length=200,
        description="Where the page starts: the X-Next-Cursor (or Link rel=next) of the "
        "previous page; absent for the first page.",
    ),
]


def announce_next(
    request: Request, response: Response, next_cursor: str | None, limit: int
) -> None:
    """Put the next page's cursor and link on ``response``, when there is a next page."""
    if next_cursor is None:
        return
    url = request.url.include_query_params(cursor=next_cursor, limit=limit)
    response.headers["Link"] = f'<{url.path}?{url.query}>; rel="next"'
    response.headers[NEXT_CURSOR_HEADER] = next_cursor
