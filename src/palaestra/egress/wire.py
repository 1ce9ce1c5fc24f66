"""HTTP/1.1 on the wire for the egress client: one exchange at a time per connection.

Each call is a request written whole and a reply parsed by httptools (the
parser uvicorn serves with) as it arrives, on a plain asyncio protocol, so a
dispatch costs the platform a write, a parse and a future, not a stack of
stream readers. What the client needs of a reply decides how much of it is
read (:class:`Want`): all of it under the cap, decompressed here so the cap
counts what it becomes; only its status (a liveness GET: the rest is never
read); or the start of a refusal's body, for its reason line.

Connections are made to addresses the :class:`~.resolve.PolicyResolver`
checked (or to the literal address the policy checked in the URL), through
``aiohappyeyeballs`` as aiohttp connects, and kept for the next call to the
same origin only when their reply ended cleanly: a connection left mid-body,
one whose peer sent more than it was asked for, or one idle for
:data:`IDLE_S` is closed, never reused. Every failure the peer causes is a
:class:`PeerError` carrying its classified :class:`Failure`.
"""

from __future__ import annotations

import asyncio
import enum
import ipaddress
import socket
import ssl
import zlib
from collections.abc import Callable, Mapping
from typing import Final, cast

import aiohappyeyeballs
import httptools
from aiohttp.abc import AbstractResolver
from yarl import URL

from palaestra.protocol.failures import Failure, UnreachableStage

__all__ = ["IDLE_S", "Connections", "PeerError", "Reply", "Want", "os_detail"]

#: Agents' servers commonly drop idle connections after 5 s (uvicorn, Node); a request
#: racing that close fails with no response and cannot be retried (a taskId reaches an
#: endpoint at most once), so an idle connection is used again only within this time.
IDLE_S: Final = 2.0
#: What a reply's status line and headers may take together.
HEAD_CAP_BYTES: Final = 64 * 1024
#: The start of a refusal's body kept for its reason line.
START_BYTES: Final = 1024
_HAPPY_EYEBALLS_DELAY_S: Final = 0.25  # aiohttp's


class PeerError(Exception):
    """A call failed because of the peer (its name, address, TLS, server or reply)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


class TooLarge(Exception):
    """The reply's body passed the cap."""


class Want(enum.Enum):
    """How much of a reply a call reads."""

    BODY = "body"  # all of it, up to the cap
    STATUS = "status"  # a 2xx's status only; a failure's start of body


class Reply:
    """A reply's status, the headers the client reads, and its body as read."""

    __slots__ = ("body", "encoding", "status")

    def __init__(self, status: int, encoding: str, body: bytes) -> None:
        self.status = status
        self.encoding = encoding
        self.body = body


def os_detail(exc: BaseException) -> str:
    """The detail of a reason line for an ``OSError`` (its text without the errno)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _unreachable(stage: UnreachableStage, detail: str) -> PeerError:
    return PeerError(Failure.unreachable(stage, detail))


def _inflater(encoding: str) -> Callable[[bytes, int], bytes] | None:
    """A decoder for the body's Content-Encoding that returns at most ``limit`` bytes per
    chunk, so that a compression bomb is inflated no further than the cap."""
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # zlib or gzip header, auto-detected
    else:
        return None

    def decode(chunk: bytes, limit: int) -> bytes:
        return inflater.decompress(chunk, max(limit, 1))

    return decode


class _Exchange:
    """One request's reply as it is parsed: what it wants, and what has come of it."""

    __slots__ = (
        "cap",
        "chunks",
        "declared",
        "decode",
        "encoding",
        "framed",
        "future",
        "headers_done",
        "size",
        "skip",
        "status",
        "want",
    )

    def __init__(self, future: asyncio.Future[Reply], want: Want, cap: int) -> None:
        self.future = future
        self.want = want
        self.cap = cap
        self.status = 0
        self.encoding = ""
        self.framed = False  # a Content-Length or chunked body: EOF before its end is a cut
        self.declared = ""  # its Content-Length as it came
        self.headers_done = False
        self.decode: Callable[[bytes, int], bytes] | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.skip = False  # the status decided: the body is parsed past, not kept

    def reply(self) -> Reply:
        return Reply(self.status, self.encoding, b"".join(self.chunks))


class _Stop(Exception):
    """Raised in a parser callback: the exchange has what it wants, stop reading."""


class _Connection(asyncio.Protocol):
    """One connection to an origin, carrying one exchange at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.exchange: _Exchange | None = None
        self.head_bytes = 0
        self.reusable = True  # false once anything but a clean, complete reply was seen
        self.closed = False
        self.idle_since = 0.0
        self._complete = False  # the reply to the exchange has come whole
        self._stopped = False  # reading stopped short of the reply's end
        self._keep_alive = False  # the complete reply lets the connection carry another

    # The transport's side.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None or self._complete or self._stopped:
            # Nothing more was asked: a peer that talks unasked is not reused.
            self.close()
            return
        if not exchange.headers_done:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            self._stopped = True
            if isinstance(cause, _Stop):
                return
            if isinstance(cause, TooLarge):
                self._fail(cause)
            elif isinstance(cause, zlib.error):
                self._fail(
                    _unreachable(UnreachableStage.RESET, f"corrupt compressed body: {cause}")
                )
            else:
                self._fail(cause or exc)
            return
        except httptools.HttpParserUpgrade:
            self._stopped = True
            self.reusable = False  # a protocol switch: the status alone answers
            self._finish(exchange)
            return
        except httptools.HttpParserError as exc:
            self._stopped = True
            self._fail(_unreachable(UnreachableStage.RESET, f"invalid HTTP reply: {exc}"))
            return
        if not exchange.headers_done and self.head_bytes > HEAD_CAP_BYTES:
            self._fail(
                _unreachable(
                    UnreachableStage.RESET, f"reply headers exceeded {HEAD_CAP_BYTES} bytes"
                )
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self.exchange
        if exchange is None or exchange.future.done():
            return
        if exchange.headers_done and (not exchange.framed or not 200 <= exchange.status < 300):
            # A body read to the end of the connection ends there; a refusal's start is
            # whatever came before the cut (its status is the verdict).
            self._finish(exchange)
        elif exchange.headers_done:
            if exc is not None:
                detail = os_detail(exc)
            elif exchange.declared:
                detail = (
                    f"the reply's body broke off after {exchange.size} of {exchange.declared} bytes"
                )
            else:
                detail = (
                    f"the reply's body broke off after {exchange.size} bytes, before its last chunk"
                )
            self._fail(_unreachable(UnreachableStage.RESET, detail))
        elif exc is None:
            self._fail(_unreachable(UnreachableStage.RESET, "server disconnected"))
        else:
            self._fail(_unreachable(UnreachableStage.RESET, os_detail(exc)))

    # The parser's side.

    def on_message_begin(self) -> None:
        if self._complete:
            self.reusable = False  # a second reply to one request
            raise _Stop

    def on_header(self, name: bytes, value: bytes) -> None:
        exchange = self.exchange
        assert exchange is not None
        lowered = name.lower()
        if lowered == b"content-encoding":
            exchange.encoding = value.decode("latin-1").strip().lower()
        elif lowered == b"content-length":
            exchange.framed = True
            exchange.declared = value.decode("latin-1").strip()
        elif lowered == b"transfer-encoding" and b"chunked" in value.lower():
            exchange.framed = True

    def on_headers_complete(self) -> None:
        exchange = self.exchange
        assert exchange is not None
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            exchange.encoding, exchange.framed, exchange.declared = "", False, ""
            return  # informational: the reply follows
        exchange.status = status
        exchange.headers_done = True
        if not 200 <= status < 300:
            exchange.cap = START_BYTES
        elif exchange.want is Want.STATUS:
            # The status decides. A body that came with the head is parsed past, so that the
            # connection can carry another call; one still to come is never read.
            self._finish(exchange)
            exchange.skip = True
            return
        exchange.decode = _inflater(exchange.encoding)

    def on_body(self, body: bytes) -> None:
        exchange = self.exchange
        assert exchange is not None
        if not exchange.headers_done or exchange.skip:
            return  # an informational reply has no body; a status-only call keeps none
        refusal = not 200 <= exchange.status < 300
        decode = exchange.decode
        if decode is None:
            data = body
        elif refusal:
            try:
                data = decode(body, exchange.cap - exchange.size)
            except zlib.error:
                self._finish(exchange)  # the status is the verdict: keep what was decoded
                raise _Stop from None
        else:
            data = decode(body, exchange.cap - exchange.size + 1)
        exchange.size += len(data)
        exchange.chunks.append(data)
        if exchange.size > exchange.cap:
            if refusal:
                self._finish(exchange)
                raise _Stop
            raise TooLarge
        if refusal and exchange.size == exchange.cap:
            self._finish(exchange)
            raise _Stop

    def on_message_complete(self) -> None:
        exchange = self.exchange
        assert exchange is not None
        if not exchange.headers_done:
            return  # an informational reply ended
        self._complete = True
        # Read here: once the message is over, the parser no longer knows.
        self._keep_alive = self.parser.should_keep_alive()
        self._finish(exchange)

    # Ends.

    def _finish(self, exchange: _Exchange) -> None:
        if not exchange.future.done():
            reply = exchange.reply()
            if len(reply.body) > exchange.cap and not 200 <= exchange.status < 300:
                reply.body = reply.body[: exchange.cap]
            exchange.future.set_result(reply)

    def _fail(self, exc: BaseException) -> None:
        self.reusable = False
        exchange = self.exchange
        if exchange is not None and not exchange.future.done():
            exchange.future.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # The client's side.

    def start(self, request: bytes, want: Want, cap: int) -> asyncio.Future[Reply]:
        assert self.transport is not None
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.exchange = _Exchange(future, want, cap)
        self.head_bytes = 0
        self._complete = self._stopped = self._keep_alive = False
        self.transport.write(request)
        return future

    @property
    def open(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def done_cleanly(self) -> bool:
        """Whether the exchange ended with the whole reply and the connection can carry
        another."""
        return self._complete and self._keep_alive and self.reusable and self.open


Origin = tuple[str, str, int]  # scheme, host, port


class Connections:
    """Open connections by origin, made under the policy, kept while idle for :data:`IDLE_S`.

    ``resolver`` answers and checks host names (a :class:`~.resolve.PolicyResolver`);
    ``limit`` bounds the exchanges under way at once (0: no bound)."""

    def __init__(
        self,
        resolver: AbstractResolver,
        ssl_context: ssl.SSLContext,
        *,
        limit: int = 0,
        keepalive: bool = True,
    ) -> None:
        self._resolver = resolver
        self._ssl = ssl_context
        self._keepalive = keepalive
        self._idle: dict[Origin, list[_Connection]] = {}
        self._limit = asyncio.Semaphore(limit) if limit > 0 else None
        self._swept_at = 0.0

    async def exchange(self, target: URL, request: bytes, want: Want, cap: int) -> Reply:
        """Send ``request`` (head and body, whole) to ``target``'s origin and read its reply
        as ``want`` says; :class:`PeerError`, :class:`TooLarge` or an ``EgressRefused`` from
        the resolver otherwise. Cancelled (a deadline), the connection is closed."""
        if self._limit is None:
            return await self._exchange(target, request, want, cap)
        async with self._limit:
            return await self._exchange(target, request, want, cap)

    async def _exchange(self, target: URL, request: bytes, want: Want, cap: int) -> Reply:
        origin = (target.scheme, target.raw_host or "", target.port or 0)
        connection = self._take(origin) or await self._connect(target, origin)
        try:
            reply = await connection.start(request, want, cap)
        except BaseException:
            connection.close()
            raise
        if self._keepalive and connection.done_cleanly():
            connection.idle_since = asyncio.get_running_loop().time()
            self._idle.setdefault(origin, []).append(connection)
        else:
            connection.close()
        return reply

    def _take(self, origin: Origin) -> _Connection | None:
        now = asyncio.get_running_loop().time()
        if now - self._swept_at > IDLE_S:
            self._sweep(now)
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.open and now - connection.idle_since < IDLE_S:
                return connection
            connection.close()
        return None

    def _sweep(self, now: float) -> None:
        """Close every connection idle too long, so that none is held open for nothing."""
        self._swept_at = now
        for origin, idle in list(self._idle.items()):
            kept = [c for c in idle if c.open and now - c.idle_since < IDLE_S]
            for connection in idle:
                if connection not in kept:
                    connection.close()
            if kept:
                self._idle[origin] = kept
            else:
                del self._idle[origin]

    async def _connect(self, target: URL, origin: Origin) -> _Connection:
        scheme, host, port = origin
        infos = await self._addresses(host, port)
        loop = asyncio.get_running_loop()
        try:
            sock = await aiohappyeyeballs.start_connection(
                infos, happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY_S
            )
        except OSError as exc:
            raise _unreachable(UnreachableStage.CONNECT, os_detail(exc)) from exc
        tls = scheme == "https"
        try:
            _, connection = await loop.create_connection(
                _Connection,
                sock=sock,
                ssl=self._ssl if tls else None,
                server_hostname=host.rstrip(".") if tls else None,
            )
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            raise _unreachable(UnreachableStage.TLS, str(exc)) from exc
        except ssl.SSLError as exc:
            sock.close()
            raise _unreachable(UnreachableStage.TLS, os_detail(exc)) from exc
        except OSError as exc:
            sock.close()
            raise _unreachable(UnreachableStage.CONNECT, os_detail(exc)) from exc
        except BaseException:
            sock.close()
            raise
        if not self._keepalive:
            connection.reusable = False
        return connection

    async def _addresses(self, host: str, port: int) -> list[aiohappyeyeballs.AddrInfoType]:
        """The checked addresses to try for ``host``: a literal address as it is (the policy
        judged it in the URL), a name through the resolver, which judges every answer."""
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            try:
                answers = await self._resolver.resolve(host, port, family=socket.AF_UNSPEC)
            except OSError as exc:
                raise _unreachable(UnreachableStage.DNS, os_detail(exc)) from exc
            return [
                _addr_info(answer["host"], answer["port"], answer["family"]) for answer in answers
            ]
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [_addr_info(host, port, family)]

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


def _addr_info(host: str, port: int, family: int) -> aiohappyeyeballs.AddrInfoType:
    address: tuple[str, int] | tuple[str, int, int, int]
    address = (host, port, 0, 0) if family == socket.AF_INET6 else (host, port)
    return (family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)


def request_head(method: str, target: URL, headers: Mapping[str, str], body: bytes | None) -> bytes:
    """The request line and headers, with a Content-Length for a body. A header whose name
    or value holds a line break or a NUL is a :class:`ValueError`: it would split the
    request."""
    lines = [f"{method} {target.raw_path_qs or '/'} HTTP/1.1"]
    for name, value in headers.items():
        if _UNSAFE.intersection(name) or _UNSAFE.intersection(value) or ":" in name:
            raise ValueError(f"the header {name!r} holds a line break or a NUL")
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode()


_UNSAFE: Final = frozenset("\r\n\0")
