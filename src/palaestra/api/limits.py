"""Caps on requests: their bodies, enforced while they stream in, and how many of a burst
are handled at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaestra.http.deps import AnyCaller

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
    """At most ``limit`` requests handled at once; the others wait their turn, in order of
    arrival. A request dependency of the runs API (see ``app.create_app``).

    A burst (a script starting a thousand runs at once) is then served ``limit`` at a time
    (1,000 simultaneous run starts grew the process by 30 to 34 MB, 16 to 17 MB in turns
    of 64). A turn is taken only once the caller is authenticated and the request's body
    has arrived (FastAPI reads it before solving the dependencies): a client that sends a
    request's head and holds back its body, or that has no valid token, holds no turn, so
    it cannot make the owners' requests wait.
    Only routes that touch nothing but the store take turns: a request that waits on an
    agent (the wizard, a check) or that an agent sends (its completion) must never queue
    behind a burst.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._turns = asyncio.Semaphore(limit)

    async def __call__(self, caller: AnyCaller) -> AsyncIterator[None]:
        async with self.taken():
            yield

    @asynccontextmanager
    async def taken(self) -> AsyncIterator[None]:
        """Wait for a turn and hold it for the block."""
        async with self._turns:
            yield
