"""The headers a task's page says its dispatch carried: the egress client's, then the
protocol's signed headers from their one list, with the values the task's row kept; never a
credential from the endpoint's URL."""

from __future__ import annotations

import pytest

from palaestra.protocol import SIGNATURE_HEADER, TASK_ID_HEADER, TIMESTAMP_HEADER
from palaestra.web.task_queries import Header, request_headers

KEPT = {
    SIGNATURE_HEADER: "sha256=" + "ab" * 32,
    TIMESTAMP_HEADER: "1700000000",
    TASK_ID_HEADER: "task-1",
}


def test_the_signed_headers_as_kept_in_the_order_sent() -> None:
    headers = request_headers("https://agent.example:8443/hook?x=1", KEPT)
    assert [h.name for h in headers] == [
        "Host",
        "User-Agent",
        "Content-Type",
        SIGNATURE_HEADER,
        TIMESTAMP_HEADER,
        TASK_ID_HEADER,
    ]
    shown = {h.name: h.value for h in headers}
    assert shown["Host"] == "agent.example:8443"
    assert shown["User-Agent"] == "EdgeArena-Dispatch/1.0"
    assert {name: shown[name] for name in KEPT} == KEPT


def test_a_task_that_kept_no_headers_shows_their_names_and_no_value() -> None:
    headers = request_headers("https://agent.example/hook", None)
    signed = [h for h in headers if h.name.startswith("x-edgearena-")]
    assert [h.name for h in signed] == [SIGNATURE_HEADER, TIMESTAMP_HEADER, TASK_ID_HEADER]
    assert all(h.value is None for h in signed)


def test_only_the_protocols_headers_are_shown_in_its_order() -> None:
    kept = {TASK_ID_HEADER: "t", "x-other": "v", SIGNATURE_HEADER: "sha256=00"}
    names = [h.name for h in request_headers(None, kept)]
    assert names == ["User-Agent", "Content-Type", SIGNATURE_HEADER, TASK_ID_HEADER]


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://user:secret@agent.example/hook", "agent.example"),
        ("http://agent.example:80/hook", "agent.example:80"),
        ("http://[::1]:9000/", "[::1]:9000"),
        ("not a url", None),
        (None, None),
    ],
)
def test_the_host_header_names_host_and_port_only(url: str | None, host: str | None) -> None:
    headers = request_headers(url, KEPT)
    hosts = [h for h in headers if h.name == "Host"]
    assert hosts == ([] if host is None else [Header("Host", host)])
    assert all("secret" not in (h.value or "") for h in headers)
