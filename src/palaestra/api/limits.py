"""Caps on requests: their bodies, enforced while they stream in, and how many of a burst
are handled at once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "InTurn", "RouteCap"]


@dataclass(frozen=True, slots=True)
class RouteCap:
    """A cap of its own for the paths that start with ``prefix`` and end with ``suffix``."""

    prefix: str
    suffix: str
    max_bytes: int

    def covers(self, path: str) -> bool:
        return path.startswith(self.prefix) and path.endswith(self.suffix)


class BodyLimit:
    """Refuse bodies larger than ``max_bytes`` with a JSON 413, whether declared or streamed.

    A path covered by one of ``routes`` has that route's cap instead, larger or smaller.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, routes: Sequence[RouteCap] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.routes = tuple(routes)

    def cap_for(self, path: str) -> int:
        for route in self.routes:
            if route.covers(path):
                return route.max_bytes
        return self.max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.cap_for(scope["path"])
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0 or declared > cap:
                    await _refuse(send, cap)
                    return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    # Raised inside the route, so the JSON error handlers answer it.
                    raise HTTPException(413, _message(cap))
            return message

        await self.app(scope, limited_receive, send)


def _message(cap: int) -> str:
    return f"Request body exceeds {cap} bytes"


async def _refuse(send: Send, cap: int) -> None:
    body = orjson.dumps({"error": _message(cap), "code": "payload-too-large"})
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class InTurn:
    """At most ``limit`` requests under ``prefix`` handled at once; the others wait their
    turn, in order of arrival, before the application sees them.

    A burst (a script starting a thousand runs at once) is then served ``limit`` at a time:
    a waiting request holds its connection and its parsed head, a fraction of what one
    inside the application's handlers holds (its dependencies, its session, its coroutine
    frames), and a burst is no faster for being handled all at once on one event loop
    (1,000 simultaneous run starts grew the process by 30 to 34 MB, 16 to 17 MB in turns
    of 64).
    Only routes that touch nothing but the store belong under ``prefix``: a request that
    waits on an agent (the wizard, a check) or that an agent sends (its completion) must
    never queue behind a burst.
    """

    def __init__(self, app: ASGIApp, prefix: str, limit: int) -> None:
        self.app = app
        self.prefix = prefix
        self._turns = asyncio.Semaphore(limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        async with self._turns:
            await self.app(scope, receive, send)
