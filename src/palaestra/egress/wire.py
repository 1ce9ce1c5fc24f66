"""HTTP/1.1 on the wire for the egress client: one exchange at a time per connection.

Each call is a request written whole and a reply parsed by httptools (the
parser uvicorn serves with) as it arrives, on a plain asyncio protocol, so a
dispatch costs the platform a write, a parse and a future, not a stack of
stream readers. What the client needs of a reply decides how much of it is
read (:class:`Want`): all of it under the cap, decompressed here so the cap
counts what it becomes; only its status (a liveness GET: the rest is never
read); or the start of a refusal's body, for its reason line.

A connection is only offered for another exchange (:mod:`.connections`)
when its reply ended cleanly: one left mid-body, or whose peer sent more than
it was asked for, is closed. Every failure the peer causes is a
:class:`PeerError` carrying its classified :class:`Failure`.
"""

from __future__ import annotations

import asyncio
import enum
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Final, cast

import httptools
from yarl import URL

from palaestra.protocol.failures import Failure, UnreachableStage

__all__ = [
    "Connection",
    "PeerError",
    "TooLarge",
    "Want",
    "WireReply",
    "os_detail",
    "request_head",
    "unreachable",
]

#: What a reply's status line and headers may take together.
HEAD_CAP_BYTES: Final = 64 * 1024
#: The start of a refusal's body kept for its reason line.
START_BYTES: Final = 1024


class PeerError(Exception):
    """A call failed because of the peer (its name, address, TLS, server or reply)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


class TooLarge(Exception):
    """The reply's body passed the cap (after a head with ``status``)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Want(enum.Enum):
    """How much of a reply a call reads."""

    BODY = "body"  # all of it, up to the cap
    STATUS = "status"  # a 2xx's status only; a failure's start of body


class WireReply:
    """A reply's status and its body as read."""

    __slots__ = ("body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body


def os_detail(exc: BaseException) -> str:
    """The detail of a reason line for an ``OSError`` (its text without the errno)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def unreachable(stage: UnreachableStage, detail: str) -> PeerError:
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

    def __init__(self, future: asyncio.Future[WireReply], want: Want, cap: int) -> None:
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

    def reply(self) -> WireReply:
        return WireReply(self.status, b"".join(self.chunks))


class _Stop(Exception):
    """Raised in a parser callback: the exchange has what it wants, stop reading."""


class Connection(asyncio.Protocol):
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
            self._fail(cause or exc)  # TooLarge, or a bad body's zlib.error (classify's)
            return
        except httptools.HttpParserUpgrade:
            self._stopped = True
            self.reusable = False  # a protocol switch: the status alone answers
            self._finish(exchange)
            return
        except httptools.HttpParserError as exc:
            self._stopped = True
            self._fail(unreachable(UnreachableStage.RESET, f"invalid HTTP reply: {exc}"))
            return
        if not exchange.headers_done and self.head_bytes > HEAD_CAP_BYTES:
            self._fail(
                unreachable(
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
            self._fail(unreachable(UnreachableStage.RESET, detail))
        elif exc is None:
            self._fail(unreachable(UnreachableStage.RESET, "server disconnected"))
        else:
            self._fail(unreachable(UnreachableStage.RESET, os_detail(exc)))

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
            raise TooLarge(exchange.status)
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

    def start(self, head: bytes, body: bytes, want: Want, cap: int) -> asyncio.Future[WireReply]:
        """Write the request (``head``, then ``body``: not joined, so that a body held by
        the caller is not copied and kept twice while the reply is awaited)."""
        assert self.transport is not None
        future: asyncio.Future[WireReply] = asyncio.get_running_loop().create_future()
        self.exchange = _Exchange(future, want, cap)
        self.head_bytes = 0
        self._complete = self._stopped = self._keep_alive = False
        self.transport.writelines((head, body) if body else (head,))
        return future

    @property
    def open(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def done_cleanly(self) -> bool:
        """Whether the exchange ended with the whole reply and the connection can carry
        another."""
        return self._complete and self._keep_alive and self.reusable and self.open


def request_head(method: str, target: URL, headers: Mapping[str, str], body: bytes | None) -> bytes:
    """The request line and headers, with a Content-Length for a body. A header whose name
    or value holds a line break or a NUL (or whose name holds a colon) is a
    :class:`ValueError`: it would split the request."""
    if _UNSAFE.search("".join(headers.values())) or _UNSAFE_NAME.search("".join(headers)):
        bad = next(n for n, v in headers.items() if _UNSAFE_NAME.search(n) or _UNSAFE.search(v))
        where = "name" if _UNSAFE_NAME.search(bad) else "value"
        raise ValueError(f"the header {bad!r} would split the request: its {where} holds {_WHAT}")
    lines = [f"{method} {target.raw_path_qs or '/'} HTTP/1.1"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode()


_UNSAFE: Final = re.compile("[\r\n\0]")
_UNSAFE_NAME: Final = re.compile("[\r\n\0:]")
_WHAT: Final = "a line break, a NUL or (in a name) a colon"
