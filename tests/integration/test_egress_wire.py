"""The egress client's HTTP/1.1 exchanges against raw servers on 127.0.0.1 that answer
byte for byte: what a connection is reused for, replies framed every way HTTP/1.1
allows, and peers that break the protocol. The client's other promises (deadline,
cap, policy, TLS) are ``test_egress_client.py``'s; the same calls run on uvloop here,
the loop ``palaestra serve`` and the workers use."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import uvloop
from aiohttp import web

from palaestra.egress import EgressClient, EgressPolicy, EgressResult
from palaestra.egress.wire import HEAD_CAP_BYTES
from tests.integration.servers import Tls, json_reply, serve, serve_raw

RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
DEADLINE_S = 3.0


async def call(
    client: EgressClient, url: str, headers: dict[str, str] | None = None
) -> EgressResult:
    return await client.request(
        "POST", url, user_agent="t", deadline=DEADLINE_S, body=b"{}", headers=headers
    )


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One whole request: its head, and its body by its Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    lengths = [
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    ]
    return head + await reader.readexactly(lengths[0] if lengths else 0)


def answering(*replies: bytes, then_close: bool = False) -> tuple[RawHandler, list[bytes]]:
    """A raw handler that answers each request on a connection with the next of ``replies``
    (the last one again once they run out), and the requests it read."""
    requests: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = 0
        while True:
            try:
                requests.append(await read_request(reader))
            except asyncio.IncompleteReadError:
                return
            writer.write(replies[min(n, len(replies) - 1)])
            await writer.drain()
            n += 1
            if then_close:
                writer.close()
                return

    return handle, requests


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'


async def test_a_connection_carries_call_after_call(client: EgressClient) -> None:
    handler, requests = answering(OK)
    async with serve_raw(handler) as endpoint:
        results = [await call(client, endpoint.url()) for _ in range(3)]
    assert [r.data for r in results] == [{"ok": True}] * 3
    assert endpoint.connections == 1
    assert len(requests) == 3


async def test_the_request_is_what_the_client_was_asked_to_send(client: EgressClient) -> None:
    handler, requests = answering(OK)
    async with serve_raw(handler) as endpoint:
        await call(client, endpoint.url("/run?x=1"), headers={"X-Edge-Signature": "abc"})
    head, _, body = requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /run?x=1 HTTP/1.1"
    assert lines[1] == f"Host: 127.0.0.1:{endpoint.port}".encode()
    assert b"User-Agent: t" in lines
    assert b"Content-Type: application/json" in lines
    assert b"Content-Length: 2" in lines
    assert b"X-Edge-Signature: abc" in lines
    assert body == b"{}"


async def test_a_header_that_would_split_the_request_is_refused_unsent(
    client: EgressClient,
) -> None:
    handler, requests = answering(OK)
    async with serve_raw(handler) as endpoint:
        result = await call(client, endpoint.url(), headers={"X-Key": "a\r\nX-Evil: 1"})
    assert result.reason == (
        "Endpoint refused by egress policy: the header 'X-Key' would split the request: "
        "its value holds a line break, a NUL or (in a name) a colon"
    )
    assert endpoint.connections == 0
    assert requests == []


async def test_a_reply_that_says_close_is_not_reused(client: EgressClient) -> None:
    closing = OK.replace(b"Content-Length", b"Connection: close\r\nContent-Length")
    handler, _ = answering(closing)
    async with serve_raw(handler) as endpoint:
        first = await call(client, endpoint.url())
        second = await call(client, endpoint.url())
    assert first.data == second.data == {"ok": True}
    assert endpoint.connections == 2


async def test_a_peer_that_answers_twice_is_not_reused(client: EgressClient) -> None:
    handler, _ = answering(OK + OK)
    async with serve_raw(handler) as endpoint:
        first = await call(client, endpoint.url())
        second = await call(client, endpoint.url())
    assert first.data == second.data == {"ok": True}
    assert endpoint.connections == 2  # the second reply was never taken for the next call's


async def test_a_body_read_to_the_end_of_the_connection(client: EgressClient) -> None:
    handler, _ = answering(
        b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"to": "eof"}', then_close=True
    )
    async with serve_raw(handler) as endpoint:
        result = await call(client, endpoint.url())
    assert result.data == {"to": "eof"}


async def test_an_informational_reply_before_the_answer_is_skipped(client: EgressClient) -> None:
    handler, _ = answering(b"HTTP/1.1 100 Continue\r\n\r\n" + OK)
    async with serve_raw(handler) as endpoint:
        result = await call(client, endpoint.url())
    assert result.status == 200
    assert result.data == {"ok": True}


async def test_a_chunked_body_cut_short_is_a_reset(client: EgressClient) -> None:
    handler, _ = answering(
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"ok"\r\n', then_close=True
    )
    async with serve_raw(handler) as endpoint:
        result = await call(client, endpoint.url())
    assert result.reason == (
        "External agent unreachable: reset: the reply's body broke off after 5 bytes, "
        "before its last chunk"
    )


async def test_a_refusal_cut_short_keeps_its_start(client: EgressClient) -> None:
    handler, _ = answering(
        b"HTTP/1.1 503 Busy\r\nContent-Length: 100\r\n\r\ntry later", then_close=True
    )
    async with serve_raw(handler) as endpoint:
        result = await call(client, endpoint.url())
    assert result.reason == "External agent responded with 503: try later"


async def test_garbage_for_a_reply_is_a_reset(client: EgressClient) -> None:
    handler, _ = answering(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    async with serve_raw(handler) as endpoint:
        result = await call(client, endpoint.url())
    assert result.reason is not None
    assert result.reason.startswith("External agent unreachable: reset: invalid HTTP reply: ")


async def test_endless_headers_are_cut_at_the_cap(client: EgressClient) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"X-Filler: " + b"a" * 1000 + b"\r\n")
            await writer.drain()

    async with serve_raw(handle) as endpoint:
        result = await call(client, endpoint.url())
    assert result.reason == (
        f"External agent unreachable: reset: reply headers exceeded {HEAD_CAP_BYTES} bytes"
    )


async def test_a_liveness_get_reuses_a_connection_whose_reply_came_whole(
    client: EgressClient,
) -> None:
    handler, _ = answering(OK)
    async with serve_raw(handler) as endpoint:
        for _ in range(2):
            result = await client.get(endpoint.url(), user_agent="t", deadline=DEADLINE_S)
            assert result.ok, result.reason
    assert endpoint.connections == 1


# The same client on uvloop.


def test_on_uvloop_calls_tls_and_failures_behave_alike(
    loopback_policy: EgressPolicy, tls: Tls
) -> None:
    async def main() -> list[EgressResult]:
        async with (
            EgressClient(loopback_policy, ssl_context=tls.client) as client,
            serve(json_reply({"secure": True}), ssl_context=tls.server) as secure,
            serve(_hello) as plain,
        ):
            handler, _ = answering(
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{", then_close=True
            )
            async with serve_raw(handler) as cut:
                return [
                    await call(client, secure.url()),
                    await call(client, secure.url()),
                    await call(client, plain.url()),
                    await call(client, cut.url()),
                    await call(client, plain.url(scheme="https")),
                ]

    secure, again, plain, cut, not_tls = uvloop.run(main())
    assert secure.data == again.data == {"secure": True}
    assert plain.data == {"hello": "uvloop"}
    assert cut.reason == (
        "External agent unreachable: reset: the reply's body broke off after 1 of 100 bytes"
    )
    assert not_tls.reason is not None
    assert not_tls.reason.startswith("External agent unreachable: tls: [SSL: ")


async def _hello(request: web.BaseRequest) -> web.StreamResponse:
    await request.read()
    return web.json_response({"hello": "uvloop"})
