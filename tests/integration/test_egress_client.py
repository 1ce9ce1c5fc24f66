"""The egress client against real, scripted, hostile servers on 127.0.0.1.

Every call goes through :func:`fetch`, which also checks the two promises the
client makes whatever the peer does: it answers within the deadline (plus a
little scheduling slack) and never holds more than the response cap.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from palaestra.clock import FrozenClock
from palaestra.egress import EgressClient, EgressPolicy, EgressResult
from palaestra.protocol import RESPONSE_CAP_BYTES, FailureKind, hmac_signer
from tests.integration.conftest import NetworkGuard
from tests.integration.servers import (
    LOOPBACK,
    Handler,
    ScriptedResolver,
    Stream,
    Tls,
    chunked,
    closed_port,
    compressed,
    endless,
    gzip_bomb,
    hang_up,
    json_reply,
    redirect,
    reply,
    serve,
    serve_raw,
    short_body,
    silent,
    stall,
)

USER_AGENT = "palaestra-tests/1.0"
DEADLINE_S = 3.0
#: Scheduling slack on a busy two-core machine; a missed deadline shows up as seconds.
SLACK_MS = 1000.0
TOO_LARGE = "External agent response exceeded 262144 bytes"
TEN_MB = 10 * 1024 * 1024


async def fetch(
    client: EgressClient,
    url: str,
    *,
    method: str = "GET",
    deadline: float = DEADLINE_S,
    **options: Any,
) -> EgressResult:
    """Call ``url`` and check that the deadline and the cap held, whatever the outcome."""
    started = time.monotonic()
    result = await client.request(method, url, user_agent=USER_AGENT, deadline=deadline, **options)
    elapsed_ms = (time.monotonic() - started) * 1000
    limit_ms = deadline * 1000 + SLACK_MS
    assert result.latency_ms <= limit_ms, result
    assert elapsed_ms <= limit_ms, (elapsed_ms, result)
    assert len(result.body) <= RESPONSE_CAP_BYTES
    assert result.ok is (result.reason is None)
    return result


def json_string_of_size(size: int) -> bytes:
    """A JSON document (one string) of exactly ``size`` bytes."""
    return b'"' + b"a" * (size - 2) + b'"'


# Good answers.


async def test_json_object_is_parsed(client: EgressClient) -> None:
    async with serve(json_reply({"status": "ok", "n": 1})) as endpoint:
        result = await fetch(client, endpoint.url("/health"))
    assert result.ok
    assert (result.status, result.data) == (200, {"status": "ok", "n": 1})
    (received,) = endpoint.received
    assert (received.method, received.path) == ("GET", "/health")
    assert received.headers["User-Agent"] == USER_AGENT


async def test_json_array_is_returned_as_data(client: EgressClient) -> None:
    """The client parses; whether the document must be an object is the caller's check."""
    async with serve(json_reply([1, {"two": 2}, "three"])) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.ok
    assert isinstance(result.data, list)
    assert result.data == [1, {"two": 2}, "three"]


async def test_request_without_json_keeps_the_raw_body(client: EgressClient) -> None:
    async with serve(reply("OK", content_type="text/plain")) as endpoint:
        result = await fetch(client, endpoint.url(), expect_json=False)
    assert result.ok
    assert (result.status, result.body, result.data) == (200, b"OK", None)


async def test_compressed_json_is_decompressed(client: EgressClient) -> None:
    document = {"output": {"text": "x" * 5000}}
    async with serve(compressed(orjson.dumps(document))) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.ok
    assert result.data == document
    assert endpoint.received[0].headers["Accept-Encoding"] == "gzip, deflate"


async def test_json_after_a_byte_order_mark_is_parsed(client: EgressClient) -> None:
    document = {"output": {"text": "é"}, "promptTokens": 1}
    async with serve(reply(b"\xef\xbb\xbf" + orjson.dumps(document))) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.ok, result.reason
    assert result.data == document


async def test_202_with_empty_body_is_ok_when_deferred(client: EgressClient) -> None:
    async with serve(reply(b"", status=202)) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}", deferred_ok=True)
    assert result.ok
    assert (result.status, result.body, result.data) == (202, b"", None)


async def test_202_with_empty_body_is_not_json_when_not_deferred(client: EgressClient) -> None:
    async with serve(reply(b"", status=202)) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.reason == "Unexpected end of JSON input"
    assert result.status == 202


# Liveness GETs: the status decides, the body of a 2xx is never read ("Response body Ignored").


def garbage_gzip() -> Handler:
    return reply(b"this is not gzip at all", headers={"Content-Encoding": "gzip"})


@pytest.mark.parametrize(
    "script",
    [
        lambda: Stream(TEN_MB),
        lambda: Stream(TEN_MB, content_length=False),
        endless,
        lambda: Stream(1000, chunk=1, interval=0.05),  # drips for 50 s
        garbage_gzip,
        lambda: gzip_bomb(64 * 1024 * 1024),
    ],
    ids=["ten-mb", "ten-mb-chunked", "endless", "slow-drip", "garbage-gzip", "gzip-bomb"],
)
async def test_a_liveness_get_passes_on_a_2xx_whatever_its_body(
    client: EgressClient, script: Callable[[], Handler]
) -> None:
    handler = script()
    async with serve(handler) as endpoint:
        started = time.monotonic()
        result = await client.get(endpoint.url(), user_agent=USER_AGENT, deadline=DEADLINE_S)
        elapsed_ms = (time.monotonic() - started) * 1000
    assert result.ok, result.reason
    assert (result.status, result.body, result.data) == (200, b"", None)
    assert elapsed_ms < DEADLINE_S * 1000 / 2  # it did not wait for the body
    if isinstance(handler, Stream):
        assert not handler.finished  # the client hung up instead of reading on


async def test_a_liveness_get_never_leaves_a_half_read_connection_in_the_pool(
    client: EgressClient,
) -> None:
    peers: list[Any] = []
    big = Stream(TEN_MB)

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        assert request.transport is not None
        peers.append(request.transport.get_extra_info("peername"))
        return await (big if len(peers) == 1 else json_reply({"ok": True}))(request)

    async with serve(handler) as endpoint:
        first = await client.get(endpoint.url(), user_agent=USER_AGENT, deadline=DEADLINE_S)
        second = await fetch(client, endpoint.url())
    assert first.ok, first.reason
    assert (second.ok, second.data) == (True, {"ok": True})
    assert peers[0] != peers[1]  # the rest of the ten megabytes went with the first connection


# The response cap, counted after decompression.


@pytest.mark.parametrize("content_length", [True, False], ids=["content-length", "chunked"])
async def test_ten_megabyte_body_is_cut_off(client: EgressClient, content_length: bool) -> None:
    script = Stream(TEN_MB, content_length=content_length)
    async with serve(script) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == TOO_LARGE
    assert result.body == b""
    assert not script.finished  # the client hung up before the end


async def test_endless_chunked_stream_is_cut_off(client: EgressClient) -> None:
    script = endless()
    async with serve(script) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == TOO_LARGE
    assert not script.finished


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_compression_bomb_is_capped_after_decompression(
    client: EgressClient, encoding: str
) -> None:
    async with serve(gzip_bomb(64 * 1024 * 1024, encoding=encoding)) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == TOO_LARGE


@pytest.mark.parametrize("script", [reply, chunked, compressed], ids=["length", "chunked", "gzip"])
@pytest.mark.parametrize("extra", [0, 1], ids=["at-cap", "one-over"])
async def test_cap_boundary(
    client: EgressClient, script: Callable[[bytes], Handler], extra: int
) -> None:
    async with serve(script(json_string_of_size(RESPONSE_CAP_BYTES + extra))) as endpoint:
        result = await fetch(client, endpoint.url())
    if extra:
        assert result.reason == TOO_LARGE
    else:
        assert result.ok
        assert len(result.body) == RESPONSE_CAP_BYTES


async def test_corrupt_compressed_body_is_a_reset(client: EgressClient) -> None:
    headers = {"Content-Encoding": "gzip"}
    async with serve(reply(b"this is not gzip at all", headers=headers)) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == (
        "External agent unreachable: reset: corrupt compressed body: "
        "Error -3 while decompressing data: incorrect header check"
    )


# The deadline.


async def test_slow_drip_hits_the_deadline(client: EgressClient) -> None:
    script = Stream(1000, chunk=1, interval=0.05)
    async with serve(script) as endpoint:
        result = await fetch(client, endpoint.url(), deadline=0.6)
    assert result.reason == "External agent timed out after 600ms"
    assert 0 < script.written < 1000


async def test_sleeping_server_times_out_with_the_exact_deadline(client: EgressClient) -> None:
    async with serve(stall(10)) as endpoint:
        result = await fetch(client, endpoint.url(), deadline=0.375)
    assert result.reason == "External agent timed out after 375ms"
    assert result.latency_ms >= 375


async def test_server_that_never_answers_times_out(client: EgressClient) -> None:
    async with serve_raw(silent()) as endpoint:
        result = await fetch(client, endpoint.url(), deadline=0.25)
    assert result.reason == "External agent timed out after 250ms"
    assert endpoint.connections == 1


async def test_tls_handshake_that_never_comes_times_out(tls_client: EgressClient) -> None:
    async with serve_raw(silent()) as endpoint:
        result = await fetch(tls_client, endpoint.url(scheme="https"), deadline=0.25)
    assert result.reason == "External agent timed out after 250ms"


# Statuses outside 2xx: never followed, only the start of the body kept.


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirect_is_never_followed(
    client: EgressClient, network: NetworkGuard, status: int
) -> None:
    async with serve(json_reply({"stolen": True})) as target:
        location = target.url("/steal")
        async with serve(redirect(location, status=status)) as endpoint:
            result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.reason == f"External agent responded with {status}: redirecting to {location}"
    assert result.status == status
    assert target.received == []
    assert network.connects == [(LOOPBACK, endpoint.port)]


@pytest.mark.parametrize(
    "location",
    ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/admin", "https://[fd00::1]/"],
)
async def test_redirect_to_a_private_address_is_never_followed(
    client: EgressClient, network: NetworkGuard, location: str
) -> None:
    async with serve(redirect(location)) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == f"External agent responded with 302: redirecting to {location}"
    assert network.connects == [(LOOPBACK, endpoint.port)]


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_error_keeps_the_first_200_characters(
    client: EgressClient, status: int
) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    async with serve(reply(text, status=status, content_type="text/plain")) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == f"External agent responded with {status}: {text[:200]}"
    assert result.status == status
    assert 200 <= len(result.body) < len(text)
    assert text.encode().startswith(result.body)


async def test_status_reason_counts_characters_not_bytes(client: EgressClient) -> None:
    text = "é" * 300
    async with serve(reply(text, status=404, content_type="text/plain")) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == f"External agent responded with 404: {'é' * 200}"


async def test_server_error_with_endless_body_is_cut_short(client: EgressClient) -> None:
    script = Stream(None, status=500, content_length=False)
    async with serve(script) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == f"External agent responded with 500: {'7' * 200}"
    assert not script.finished


async def test_error_status_with_empty_body(client: EgressClient) -> None:
    async with serve(reply(b"", status=404)) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == "External agent responded with 404: "


async def test_a_badly_encoded_error_body_leaves_the_status_as_the_failure(
    client: EgressClient,
) -> None:
    headers = {"Content-Encoding": "gzip"}
    async with serve(reply(b"this is not gzip at all", status=404, headers=headers)) as endpoint:
        result = await client.get(endpoint.url(), user_agent=USER_AGENT, deadline=DEADLINE_S)
    assert result.failure is not None
    assert (result.failure.kind, result.status) == (FailureKind.HTTP_STATUS, 404)
    assert result.reason == "External agent responded with 404: "


# Bodies that are not JSON.


async def test_html_body_is_not_json(client: EgressClient) -> None:
    page = "<html><body>Welcome to nginx!</body></html>"
    async with serve(reply(page, content_type="text/html")) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.reason == "Unexpected token '<' in JSON at position 0"
    assert result.status == 200
    assert result.body == page.encode()


async def test_empty_body_is_the_end_of_json_input(client: EgressClient) -> None:
    async with serve(reply(b"")) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.reason == "Unexpected end of JSON input"


async def test_truncated_json_is_the_end_of_json_input(client: EgressClient) -> None:
    async with serve(reply(b'{"output": {"a": ')) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == "Unexpected end of JSON input"


# Unreachable endpoints.


async def test_connection_reset_after_the_request(client: EgressClient) -> None:
    async with serve_raw(hang_up(reset=True)) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.reason == "External agent unreachable: reset: Connection reset by peer"
    assert endpoint.connections == 1


async def test_connection_closed_after_the_request(client: EgressClient) -> None:
    async with serve_raw(hang_up(reset=False)) as endpoint:
        result = await fetch(client, endpoint.url(), method="POST", body=b"{}")
    assert result.reason == "External agent unreachable: reset: server disconnected"
    assert endpoint.connections == 1


async def test_body_shorter_than_announced_is_a_reset(client: EgressClient) -> None:
    async with serve_raw(short_body(1000, b'{"output": ')) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason == (
        "External agent unreachable: reset: the reply's body broke off after 11 of 1000 bytes"
    )


async def test_connection_refused(client: EgressClient) -> None:
    port = closed_port()
    result = await fetch(client, f"http://{LOOPBACK}:{port}/")
    assert result.reason == (
        f"External agent unreachable: connect: Connect call failed ('{LOOPBACK}', {port})"
    )


async def test_dns_failure(client: EgressClient, network: NetworkGuard) -> None:
    result = await fetch(client, "https://agent.invalid/")
    assert result.reason == "External agent unreachable: dns: Name or service not known"
    assert network.lookups == ["agent.invalid"]
    assert network.connects == []


async def test_resolver_with_no_answer_is_a_dns_failure(network: NetworkGuard) -> None:
    resolver = ScriptedResolver({"agent.test": []})
    async with EgressClient(resolver=resolver) as client:
        result = await fetch(client, "https://agent.test/")
    assert result.reason == "External agent unreachable: dns: agent.test has no addresses"
    assert network.connects == []


# TLS.

_UNTRUSTED = re.compile(
    r"External agent unreachable: tls: \[SSL: CERTIFICATE_VERIFY_FAILED\] "
    r"certificate verify failed: unable to get local issuer certificate \(_ssl\.c:\d+\)"
)


async def test_tls_from_an_untrusted_ca_is_refused(client: EgressClient, tls: Tls) -> None:
    async with serve(json_reply({}), ssl_context=tls.server) as endpoint:
        result = await fetch(client, endpoint.url())
    assert result.reason is not None
    assert _UNTRUSTED.fullmatch(result.reason), result.reason
    assert endpoint.received == []


async def test_tls_trusted_ca_succeeds(tls_client: EgressClient, tls: Tls) -> None:
    async with serve(json_reply({"secure": True}), ssl_context=tls.server) as endpoint:
        result = await fetch(tls_client, endpoint.url(), method="POST", body=b"{}")
    assert endpoint.url().startswith(f"https://{LOOPBACK}:")
    assert result.ok
    assert result.data == {"secure": True}


async def test_tls_to_a_host_name_checks_the_name(loopback_policy: EgressPolicy, tls: Tls) -> None:
    resolver = ScriptedResolver({"agent.test": [LOOPBACK], "other.test": [LOOPBACK]})
    async with (
        EgressClient(loopback_policy, resolver=resolver, ssl_context=tls.client) as client,
        serve(json_reply({"secure": True}), ssl_context=tls.server) as endpoint,
    ):
        good = await fetch(client, endpoint.url(host="agent.test"))
        wrong = await fetch(client, endpoint.url(host="other.test"))
    assert good.data == {"secure": True}
    assert wrong.reason is not None
    assert re.fullmatch(
        r"External agent unreachable: tls: \[SSL: CERTIFICATE_VERIFY_FAILED\] certificate "
        r"verify failed: Hostname mismatch, certificate is not valid for 'other\.test'\. "
        r"\(_ssl\.c:\d+\)",
        wrong.reason,
    ), wrong.reason
    assert len(endpoint.received) == 1


async def test_https_to_a_plain_http_server_is_a_tls_failure(tls_client: EgressClient) -> None:
    async with serve(json_reply({})) as endpoint:
        result = await fetch(tls_client, endpoint.url(scheme="https"))
    assert result.reason is not None
    assert re.fullmatch(
        r"External agent unreachable: tls: \[SSL: [A-Z_]+\] [a-z ]+ \(_ssl\.c:\d+\)",
        result.reason,
    ), result.reason
    assert endpoint.received == []


# Signed dispatches.


async def test_signed_post_verifies_with_the_standard_library(client: EgressClient) -> None:
    key = "agent-api-key-0123456789"
    clock = FrozenClock()
    body = orjson.dumps({"taskId": "t-1", "phase": "SCOUT", "input": {"text": "é" * 10}})
    problems: list[str] = []

    async def verifying(request: web.BaseRequest) -> web.StreamResponse:
        raw = await request.read()
        stamp = request.headers.get("X-EdgeArena-Timestamp", "")
        material = f"{stamp}\n{request.host}{request.path}\n".encode() + raw
        expected = "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
        given = request.headers.get("X-EdgeArena-Signature", "")
        if not hmac.compare_digest(expected, given):
            problems.append(f"signature {given!r} != {expected!r}")
            return web.json_response({"error": "bad signature"}, status=401)
        return web.json_response({"verified": True})

    async with serve(verifying) as endpoint:
        result = await client.post_json(
            endpoint.url("/dispatch?attempt=1"),
            body,
            user_agent=USER_AGENT,
            deadline=DEADLINE_S,
            signer=hmac_signer(key, clock, task_id="t-1"),
        )
    assert problems == []
    assert result.ok
    assert result.data == {"verified": True}
    (received,) = endpoint.received
    assert received.body == body
    assert received.headers["X-EdgeArena-Timestamp"] == str(int(clock.now()))
    assert received.headers["X-EdgeArena-Task-Id"] == "t-1"
    assert received.headers["Content-Type"] == "application/json"
    material = f"{int(clock.now())}\n{LOOPBACK}:{endpoint.port}/dispatch\n".encode() + body
    digest = hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
    assert received.headers["X-EdgeArena-Signature"] == f"sha256={digest}"


async def test_signed_post_with_a_wrong_key_is_rejected_by_the_server(
    client: EgressClient,
) -> None:
    """The test's verifier is not fooled: a different key gives a 401 the client reports."""

    async def verifying(request: web.BaseRequest) -> web.StreamResponse:
        raw = await request.read()
        stamp = request.headers["X-EdgeArena-Timestamp"]
        material = f"{stamp}\n{request.host}{request.path}\n".encode() + raw
        expected = "sha256=" + hmac.new(b"right-key", material, hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, request.headers["X-EdgeArena-Signature"]):
            return web.json_response({"verified": True})
        return web.Response(status=401, text="Invalid signature")

    async with serve(verifying) as endpoint:
        result = await fetch(
            client,
            endpoint.url("/dispatch"),
            method="POST",
            body=b"{}",
            signer=hmac_signer("wrong-key", FrozenClock()),
        )
    assert result.reason == "External agent responded with 401: Invalid signature"


async def test_idle_connections_are_not_reused_past_the_idle_limit(
    client: EgressClient,
) -> None:
    """Servers drop idle keep-alive connections (often after 5 s); the client lets go first,
    so a dispatch never races a server's close on a connection it is about to reuse."""
    peers: list[Any] = []

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        assert request.transport is not None
        peers.append(request.transport.get_extra_info("peername"))
        return web.json_response({"ok": True})

    async with serve(handler) as endpoint:
        for pause in (0.0, 0.2, 2.5):
            await asyncio.sleep(pause)
            result = await client.request("GET", endpoint.url("/"), user_agent="t", deadline=2)
            assert result.ok, result.reason
    assert peers[0] == peers[1]  # reused while fresh
    assert peers[2] != peers[1]  # a new connection after 2.5 s idle
