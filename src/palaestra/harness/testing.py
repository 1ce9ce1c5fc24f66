"""Test an agent: call its app in memory, or serve it for real on loopback.

async with serve(agent.app()) as url:          # a real uvicorn server on 127.0.0.1
    ...palaestra check url...

response = await call(agent.app(), "POST", "/", body=b'{"type": "handshake", ...}')
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn

from palaestra.protocol import loads

from .asgi import Message, Scope

__all__ = ["AppResponse", "call", "serve"]


@dataclass(frozen=True, slots=True)
class AppResponse:
    """What an ASGI app answered."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return loads(self.body)


async def call(
    app: Any,
    method: str,
    path: str = "/",
    *,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    host: str = "agent.test",
    scheme: str = "http",
    chunk_size: int | None = None,
) -> AppResponse:
    """Send one request straight to the ASGI ``app`` (no socket); ``Host`` is ``host``."""
    raw_headers = [(b"host", host.encode())]
    raw_headers += [(k.lower().encode(), v.encode("latin-1")) for k, v in (headers or {}).items()]
    if body and not any(name == b"content-length" for name, _ in raw_headers):
        raw_headers.append((b"content-length", str(len(body)).encode()))
    raw_path, _, query = path.partition("?")
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": scheme,
        "path": raw_path,
        "raw_path": raw_path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": raw_headers,
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 50000),
    }
    size = chunk_size or max(len(body), 1)
    chunks = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    incoming: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    response_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in start["headers"]}
    return AppResponse(start["status"], response_headers, content)


@asynccontextmanager
async def serve(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
) -> AsyncIterator[str]:
    """Run ``app`` with uvicorn in this event loop; yields its base URL (``http://host:port/``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that name it.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="on",
        ws="none",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()  # raises why the server could not start
                raise RuntimeError("the server stopped before it started")
            await asyncio.sleep(0.005)
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{bound}/"
    finally:
        server.should_exit = True
        await task
        sock.close()
