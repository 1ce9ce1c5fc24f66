"""The headers a task's page says its dispatch carried: the protocol's signed headers, from
their one list, and the egress client's; never a credential from the endpoint's URL."""

from __future__ import annotations

import pytest

from palaestra.protocol import SIGNATURE_HEADER, TASK_ID_HEADER, TIMESTAMP_HEADER
from palaestra.web.task_queries import Header, request_headers


def test_the_signed_headers_in_the_order_sent_the_signature_not_kept() -> None:
    headers = request_headers("task-1", "https://agent.example:8443/hook?x=1", 1_700_000_000.9)
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
    assert shown[TIMESTAMP_HEADER] == "1700000000"  # whole seconds, as signed
    assert shown[TASK_ID_HEADER] == "task-1"
    [signature] = [h for h in headers if h.name == SIGNATURE_HEADER]
    assert signature.value is None
    assert "not kept" in signature.note


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
    headers = request_headers("t", url, 1.0)
    hosts = [h for h in headers if h.name == "Host"]
    assert hosts == ([] if host is None else [Header("Host", host)])
    assert all("secret" not in (h.value or "") for h in headers)
