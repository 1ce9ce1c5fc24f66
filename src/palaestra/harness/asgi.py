"""The agent as an ASGI application: one URL, both protocols, JSON in and out.

``GET``/``HEAD`` answer liveness; ``POST`` goes to :class:`RequestHandler`.
Bodies are capped before they are read whole, every error is a JSON object,
and nothing the handlers raise reaches the wire as a stack trace.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from palaestra.errors import SignatureError
from palaestra.protocol import signature_target

from .handling import AgentRequest, RequestHandler
from .replies import HttpReply, error_reply, json_reply

__all__ = ["AgentApp", "Hook", "Receive", "Scope", "Send"]

log = logging.getLogger("palaestra.harness")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Hook = Callable[[], object]


class _TooLarge(Exception):
    pass


class AgentApp:
    """The ASGI callable serving one agent. Build it with :meth:`palaestra.harness.Agent.app`."""

    def __init__(
        self,
        handler: RequestHandler,
        *,
        liveness: dict[str, Any],
        public_target: str | None,
        max_body_bytes: int,
        startup: Sequence[Hook] = (),
        shutdown: Sequence[Hook] = (),
    ) -> None:
        self.handler = handler
        self.public_target = public_target
        self.max_body_bytes = max_body_bytes
        self._liveness = json_reply(liveness)
        self._startup = tuple(startup)
        self._shutdown = tuple(shutdown)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        try:
            if method in ("GET", "HEAD"):
                reply = self._liveness
            elif method == "POST":
                reply = await self._post(scope, receive)
            else:
                reply = error_reply(405, "method-not-allowed", f"{method} is not allowed")
        except Exception:  # the last guard: a bug here must still answer in JSON
            log.exception("the agent failed to answer")
            reply = error_reply(500, "internal-error", "the agent failed to answer")
        await _send(send, reply, head=method == "HEAD")

    async def _post(self, scope: Scope, receive: Receive) -> HttpReply:
        headers = _headers(scope)
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                return error_reply(400, "invalid-request", "invalid Content-Length header")
            if int(declared) > self.max_body_bytes:
                return self._too_large()
        try:
            body = await _read_body(receive, self.max_body_bytes)
        except _TooLarge:
            return self._too_large()
        target = self.public_target or _request_target(scope, headers)
        return await self.handler.post(AgentRequest(body, headers, target))

    def _too_large(self) -> HttpReply:
        message = f"request body exceeds {self.max_body_bytes} bytes"
        return error_reply(413, "too-large", message)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        hooks = {"lifespan.startup": self._startup, "lifespan.shutdown": self._shutdown}
        while True:
            event = (await receive())["type"]
            if event not in hooks:
                continue
            failed = await _run_hooks(hooks[event])
            if failed is None:
                await send({"type": f"{event}.complete"})
            else:
                await send({"type": f"{event}.failed", "message": failed})
            if event == "lifespan.shutdown":
                return


async def _run_hooks(hooks: Sequence[Hook]) -> str | None:
    for hook in hooks:
        try:
            result = hook()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            log.exception("a lifespan hook failed")
            return f"{type(exc).__name__}: {exc}"
    return None


def _headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers", ())
    }


async def _read_body(receive: Receive, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _request_target(scope: Scope, headers: dict[str, str]) -> str | None:
    """host+pathname as the client addressed this request (Host header and raw path), read
    as :func:`~palaestra.protocol.signature_target` reads a URL: what a WHATWG sender sent
    comes back unchanged."""
    host = headers.get("host")
    if not host:
        server = scope.get("server")
        if not server:
            return None
        host = f"{server[0]}:{server[1]}"
    raw_path = scope.get("raw_path")
    if raw_path:
        # A sender that follows WHATWG percent-encodes; raw non-ASCII octets, if any, are
        # read as the UTF-8 it would have encoded, not re-encoded octet by octet.
        path = raw_path.decode("utf-8", errors="replace").split("?", 1)[0]
    else:
        path = scope.get("root_path", "") + scope.get("path", "/")
    try:
        return signature_target(f"{scope.get('scheme', 'http')}://{host}{path}")
    except SignatureError:
        return None


async def _send(send: Send, reply: HttpReply, *, head: bool = False) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(reply.body)).encode()),
    ]
    if reply.status == 405:
        headers.append((b"allow", b"GET, HEAD, POST"))
    if reply.replayed:
        headers.append((b"x-palaestra-replayed", b"true"))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else reply.body})
