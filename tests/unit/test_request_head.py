"""The request head the egress client writes: exactly the headers given, and never one
that would split the request."""

from __future__ import annotations

import pytest
from yarl import URL

from palaestra.egress.wire import request_head


def test_the_head_is_the_request_line_the_headers_and_the_length() -> None:
    head = request_head(
        "POST", URL("https://agent.test/run?x=1"), {"Host": "agent.test", "X-A": "b"}, b"{}"
    )
    assert head == (
        b"POST /run?x=1 HTTP/1.1\r\nHost: agent.test\r\nX-A: b\r\nContent-Length: 2\r\n\r\n"
    )


def test_a_get_has_no_length_and_an_empty_path_is_the_root() -> None:
    head = request_head("GET", URL("https://agent.test"), {"Host": "agent.test"}, None)
    assert head == b"GET / HTTP/1.1\r\nHost: agent.test\r\n\r\n"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Key", "a\r\nX-Evil: 1"),
        ("X-Key", "a\nb"),
        ("X-Key", "a\rb"),
        ("X-Key", "a\0b"),
        ("X-Evil: 1\r\nX-Key", "a"),
        ("X-Key:", "a"),
        ("X-K\0ey", "a"),
    ],
)
def test_a_header_that_would_split_the_request_is_refused(name: str, value: str) -> None:
    with pytest.raises(ValueError, match="would split the request"):
        request_head("GET", URL("https://agent.test/"), {"Host": "x", name: value}, None)
