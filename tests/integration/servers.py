"""Scripted hostile endpoints on 127.0.0.1, for tests of code that calls out.

A *script* decides how an endpoint misbehaves; :func:`serve` runs it behind a
real aiohttp server (optionally over real TLS, see :func:`make_tls`) and
records what it received. :func:`serve_raw` runs a script on a bare socket for
what HTTP servers refuse to do (reset a connection, never answer).
:class:`ScriptedResolver` stands in for DNS.

    async with serve(json_reply({"ok": True})) as endpoint:
        result = await client.request("GET", endpoint.url("/health"), ...)
    assert endpoint.received[0].path == "/health"

Every server listens on loopback only and stops with its ``async with`` block.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import orjson
import trustme
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDict

__all__ = [
    "LOOPBACK",
    "Endpoint",
    "Handler",
    "RawHandler",
    "Received",
    "ScriptedResolver",
    "Stream",
    "Tls",
    "chunked",
    "closed_port",
    "compressed",
    "endless",
    "gzip_bomb",
    "hang_up",
    "json_reply",
    "make_tls",
    "redirect",
    "reply",
    "serve",
    "serve_raw",
    "short_body",
    "silent",
    "stall",
]

LOOPBACK = "127.0.0.1"

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

#: A stream stops here even if nobody hangs up: hostile, but bounded.
_STREAM_LIMIT_BYTES = 1 << 30
_SHUTDOWN_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class Received:
    """One HTTP request as the server saw it."""

    method: str
    path: str  # with the query string
    headers: CIMultiDict[str]
    body: bytes


@dataclass
class Endpoint:
    """A running server: where it listens and what reached it."""

    port: int
    scheme: str = "http"
    host: str = LOOPBACK
    received: list[Received] = field(default_factory=list)
    connections: int = 0  # counted by raw servers only

    def url(self, path: str = "/", *, host: str | None = None, scheme: str | None = None) -> str:
        """The URL of ``path`` here; ``host`` replaces the address (a name the resolver knows)."""
        return f"{scheme or self.scheme}://{host or self.host}:{self.port}{path}"


@asynccontextmanager
async def serve(
    handler: Handler, *, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[Endpoint]:
    """Run ``handler`` behind an aiohttp server on 127.0.0.1 (https with ``ssl_context``)."""
    endpoint = Endpoint(port=0, scheme="https" if ssl_context else "http")

    async def recording(request: web.BaseRequest) -> web.StreamResponse:
        body = await request.read()
        endpoint.received.append(
            Received(request.method, request.path_qs, CIMultiDict(request.headers), body)
        )
        return await handler(request)

    # handler_cancellation: a script stuck on a client that hung up is cancelled, not awaited.
    server = web.Server(recording, handler_cancellation=True)
    runner = web.ServerRunner(server, shutdown_timeout=_SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    try:
        site = web.TCPSite(runner, LOOPBACK, 0, ssl_context=ssl_context)
        await site.start()
        endpoint.port = runner.addresses[0][1]
        yield endpoint
    finally:
        await runner.cleanup()


@asynccontextmanager
async def serve_raw(handler: RawHandler) -> AsyncIterator[Endpoint]:
    """Run ``handler`` on every TCP connection to a bare socket server on 127.0.0.1."""
    endpoint = Endpoint(port=0)
    tasks: set[asyncio.Task[None]] = set()
    writers: set[asyncio.StreamWriter] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        endpoint.connections += 1
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        writers.add(writer)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up first: that is what clients under test do
        finally:
            tasks.discard(task)
            writers.discard(writer)
            writer.close()

    server = await asyncio.start_server(on_connect, LOOPBACK, 0)
    endpoint.port = server.sockets[0].getsockname()[1]
    try:
        yield endpoint
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in list(writers):
            writer.transport.abort()
        await server.wait_closed()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
    return port


# Scripts for `serve`.


def reply(
    body: bytes | str = b"",
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    content_type: str = "application/json",
) -> Handler:
    """Answer every request with ``status`` and exactly ``body``."""
    raw = body.encode() if isinstance(body, str) else body
    extra = dict(headers or {})

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        response = web.Response(body=raw, status=status, headers=extra)
        response.content_type = content_type
        return response

    return handle


def json_reply(value: Any, *, status: int = 200) -> Handler:
    """Answer every request with ``value`` as JSON."""
    return reply(orjson.dumps(value), status=status)


def chunked(body: bytes, *, piece: int = 16 * 1024, status: int = 200) -> Handler:
    """Answer with ``body`` in chunked encoding (no length announced), ``piece`` bytes at a time."""

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        response = web.StreamResponse(status=status)
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(body), piece):
            await response.write(body[start : start + piece])
        await response.write_eof()
        return response

    return handle


def redirect(location: str, *, status: int = 302) -> Handler:
    """Answer with a redirect to ``location``, which a careful client never follows."""
    return reply(f"redirecting to {location}", status=status, headers={"Location": location})


def stall(seconds: float, then: Handler | None = None) -> Handler:
    """Wait ``seconds`` before answering (with ``then``, or an empty JSON object)."""
    after = then or json_reply({})

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        await asyncio.sleep(seconds)
        return await after(request)

    return handle


def compressed(data: bytes, *, encoding: str = "gzip", status: int = 200) -> Handler:
    """Answer with ``data`` compressed as ``encoding`` (``gzip`` or ``deflate``)."""
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    body = packer.compress(data) + packer.flush()
    return reply(body, status=status, headers={"Content-Encoding": encoding})


def gzip_bomb(decompressed_bytes: int, *, encoding: str = "gzip") -> Handler:
    """Answer with a small body that inflates to ``decompressed_bytes`` of zeros."""
    return reply(_bomb(decompressed_bytes, encoding), headers={"Content-Encoding": encoding})


@cache
def _bomb(size: int, encoding: str) -> bytes:
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    parts.append(packer.compress(bytes(size % len(block))))
    parts.append(packer.flush())
    return b"".join(parts)


@dataclass
class Stream:
    """A script that writes ``total`` bytes (``None``: until the client hangs up).

    It writes ``chunk`` bytes every ``interval`` seconds, announcing the length
    when ``content_length`` (else chunked encoding). ``written`` and
    ``finished`` tell afterwards how far it got.
    """

    total: int | None
    chunk: int = 64 * 1024
    interval: float = 0.0
    content_length: bool = True
    status: int = 200
    written: int = 0
    finished: bool = False

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        total = _STREAM_LIMIT_BYTES if self.total is None else self.total
        response = web.StreamResponse(status=self.status)
        response.content_type = "application/json"
        if self.content_length and self.total is not None:
            response.content_length = total
        else:
            response.enable_chunked_encoding()
        await response.prepare(request)
        block = b"7" * self.chunk
        try:
            while self.written < total:
                piece = block[: total - self.written]
                await response.write(piece)
                self.written += len(piece)
                if self.interval:
                    await asyncio.sleep(self.interval)
            await response.write_eof()
            self.finished = True
        except ConnectionError:
            pass  # the client hung up, as it should
        return response


def endless(*, chunk: int = 64 * 1024) -> Stream:
    """A chunked body that never ends (until the client hangs up)."""
    return Stream(None, chunk=chunk, content_length=False)


# Scripts for `serve_raw`.


def hang_up(*, reset: bool) -> RawHandler:
    """Read the request head, then close: with a TCP reset when ``reset``, else a clean FIN."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if reset:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            writer.close()

    return handle


def short_body(declared: int, sent: bytes) -> RawHandler:
    """Announce a ``declared``-byte body, send only ``sent``, and close."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n"
        )
        writer.write(head.encode() + b"Connection: close\r\n\r\n" + sent)
        await writer.drain()
        writer.close()

    return handle


def silent(seconds: float = 30.0) -> RawHandler:
    """Accept the connection and say nothing for ``seconds`` (not even a TLS handshake)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(seconds)

    return handle


# TLS and DNS.


@dataclass(frozen=True)
class Tls:
    """A private CA, a server context with a certificate it issued, and a client that trusts it."""

    ca: trustme.CA
    server: ssl.SSLContext
    client: ssl.SSLContext


def make_tls(*names: str) -> Tls:
    """Real TLS for ``names`` (host names or IP addresses) under a fresh private CA."""
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(server)
    client = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ca.configure_trust(client)
    return Tls(ca, server, client)


class ScriptedResolver(AbstractResolver):
    """DNS under the test's control; never touches the network.

    ``answers`` maps a name to its addresses. :meth:`then` scripts a name's
    successive answers (rebinding). An unknown name fails like a name that does
    not exist. ``calls`` lists every name asked, in order.
    """

    def __init__(self, answers: Mapping[str, Sequence[str]] | None = None) -> None:
        self._script: dict[str, list[Sequence[str]]] = {
            host: [addresses] for host, addresses in (answers or {}).items()
        }
        self.calls: list[str] = []

    def then(self, host: str, *answers: Sequence[str]) -> ScriptedResolver:
        """Answer ``host`` with each of ``answers`` in turn, then the last one forever."""
        self._script[host] = list(answers)
        return self

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.calls.append(host)
        script = self._script.get(host)
        if script is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = script.pop(0) if len(script) > 1 else script[0]
        return [_resolved(host, address, port) for address in addresses]

    async def close(self) -> None:
        return None


def _resolved(host: str, address: str, port: int) -> ResolveResult:
    try:
        version = ipaddress.ip_address(address).version
    except ValueError:  # a hostile resolver may answer anything
        version = 4
    family = socket.AF_INET6 if version == 6 else socket.AF_INET
    return ResolveResult(
        hostname=host,
        host=address,
        port=port,
        family=family,
        proto=0,
        flags=socket.AI_NUMERICHOST,
    )
