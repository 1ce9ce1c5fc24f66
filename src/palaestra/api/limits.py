"""A cap on request bodies, enforced while they stream in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "RouteCap"]


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
