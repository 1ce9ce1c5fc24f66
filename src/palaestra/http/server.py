"""The HTTP server `palaestra serve` runs the app under: uvicorn, with the bounds it lacks.

uvicorn closes a connection idle between two requests (``timeout_keep_alive``), but not
one whose request never arrives in full: a client that opens a connection and sends
nothing, half a head, or a head and part of its body holds it for good. Nor does it cap
the connections it keeps open (``limit_concurrency`` answers requests 503 past a count,
while their connections stay open). :func:`server_config` gives uvicorn a protocol with
both bounds:

- a request must arrive in full, head and body, within ``request_read_timeout_s`` of
  the connection opening or of the previous response on it; a slower client is answered
  408 (or, if it sent nothing, simply disconnected);
- past ``max_connections`` open connections, a new one is answered 503 with
  ``Retry-After`` and closed at once.

The protocol is uvicorn's httptools protocol with four of its callbacks extended (the
version range is pinned in ``pyproject.toml``; ``tests/unit/test_server_protocol.py``
fails when they change).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Final

import orjson
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from palaestra.settings import Settings

__all__ = ["KEEP_ALIVE_S", "BoundedHttpProtocol", "bounded_protocol", "server_config"]

#: Seconds a connection may stay idle after a response (uvicorn's default).
KEEP_ALIVE_S: Final = 5


def _reply(status: str, message: str, code: str, *extra: bytes) -> bytes:
    body = orjson.dumps({"error": message, "code": code})
    head = [
        f"HTTP/1.1 {status}".encode(),
        b"content-type: application/json",
        b"content-length: " + str(len(body)).encode(),
        b"connection: close",
        *extra,
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


_TOO_SLOW: Final = _reply("408 Request Timeout", "Request not received in time", "request-timeout")
_BUSY: Final = _reply(
    "503 Service Unavailable",
    "Too many open connections; try again",
    "unavailable",
    b"retry-after: 1",
)


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request's arrival and a cap on
    open connections (see the module's docstring); :func:`bounded_protocol` sets both."""

    read_timeout_s: ClassVar[float] = 30.0
    max_connections: ClassVar[int] = 2048

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._received = 0  # requests whose every byte has arrived
        self._answered = 0  # responses sent in full
        self._started = False  # the awaited request has sent its first byte
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        busy = len(self.connections) >= self.max_connections  # before this one is counted
        super().connection_made(transport)
        if busy:
            transport.write(_BUSY)
            transport.close()
            return
        self._await_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._started = True

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._received += 1
        self._started = False
        if self._received > self._answered:
            self._cancel()  # a whole request is being served: the application's time now
        else:
            self._await_request()  # answered before its body was in: idle again

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._answered += 1
        if self._received == self._answered:
            self._await_request()
        # Otherwise a pipelined request is complete and is served next, or this request's
        # body is still arriving, under the deadline it already has.

    def _await_request(self) -> None:
        self._cancel()
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.read_timeout_s, self._too_slow)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._started:  # a request began and did not finish: tell its client why
            self.transport.write(_TOO_SLOW)
        self.transport.close()


def bounded_protocol(read_timeout_s: float, max_connections: int) -> type[BoundedHttpProtocol]:
    """:class:`BoundedHttpProtocol` with these bounds (uvicorn makes one per connection)."""
    return type(
        "BoundedHttpProtocol",
        (BoundedHttpProtocol,),
        {"read_timeout_s": read_timeout_s, "max_connections": max_connections},
    )


def server_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """How `palaestra serve` (and its API-only form, `--no-workers`) runs ``app``."""
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=bounded_protocol(settings.request_read_timeout_s, settings.max_connections),
        ws="none",  # no WebSocket route: an upgrade is an ordinary request
        timeout_keep_alive=KEEP_ALIVE_S,
        log_level="warning",
        timeout_graceful_shutdown=10,
        # The app reads X-Forwarded-For itself, from PALAESTRA_FORWARDED_ALLOW_IPS only;
        # uvicorn's own rewriting (which trusts 127.0.0.1 by default) would come first.
        proxy_headers=False,
        **options,
    )
