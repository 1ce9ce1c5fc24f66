"""Slow and idle clients, against the server `palaestra serve` runs (uvicorn with the bounds
of ``palaestra.http.server``) on 127.0.0.1: a request that does not arrive in time is
answered 408 and closed, a connection that sends nothing is closed, past the cap a new
connection is answered 503, and the others are served all the while."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import uvicorn

from palaestra.api.limits import InTurn
from palaestra.app import create_app
from palaestra.http.server import server_config
from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.platform_fixtures import Api

pytestmark = pytest.mark.asyncio

READ_TIMEOUT_S = 1.0
CAP = 20

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"request_read_timeout_s": READ_TIMEOUT_S, "max_connections": CAP, "port": 0}
    )


@asynccontextmanager
async def served(platform: Platform, app: Any = None) -> AsyncIterator[tuple[int, Api]]:
    app = app or create_app(platform=platform)
    server = uvicorn.Server(server_config(app, platform.settings))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session:
            yield port, Api(f"http://127.0.0.1:{port}", session)
    finally:
        server.should_exit = True
        await task


async def opened(port: int, sent: bytes) -> Stream:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(sent)
    await writer.drain()
    return reader, writer


async def until_closed(reader: asyncio.StreamReader, within_s: float) -> tuple[bytes, float]:
    """Everything the server sent until it closed the connection, and when it closed it."""
    started = time.monotonic()
    received = await asyncio.wait_for(reader.read(), within_s)
    return received, time.monotonic() - started


HALF_HEAD = b"GET /api/agents HTTP/1.1\r\nHost: x\r\n"
HALF_BODY = (
    b"POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)


@pytest.mark.parametrize("sent", [HALF_HEAD, HALF_BODY], ids=["half-a-head", "half-a-body"])
async def test_a_request_not_in_by_the_deadline_is_answered_408_and_closed(
    platform: Platform, sent: bytes
) -> None:
    async with served(platform) as (port, api):
        reader, writer = await opened(port, sent)
        owner = await api.owner()  # the others are served meanwhile
        received, after = await until_closed(reader, READ_TIMEOUT_S + 2)
        writer.close()
    assert received.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert received.endswith(b'{"error":"Request not received in time","code":"request-timeout"}')
    assert after <= READ_TIMEOUT_S + 0.5
    assert owner


async def test_a_connection_that_sends_nothing_is_closed_without_a_word(
    platform: Platform,
) -> None:
    async with served(platform) as (port, _):
        reader, writer = await opened(port, b"")
        received, after = await until_closed(reader, READ_TIMEOUT_S + 2)
        writer.close()
    assert received == b""
    assert READ_TIMEOUT_S - 0.2 <= after <= READ_TIMEOUT_S + 0.5


async def test_a_slow_request_in_by_the_deadline_is_served(platform: Platform) -> None:
    async with served(platform) as (port, _):
        reader, writer = await opened(port, b"GET /healthz HTTP/1.1\r\n")
        await asyncio.sleep(READ_TIMEOUT_S / 2)
        writer.write(b"Host: x\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
        writer.close()
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")


async def test_each_request_on_a_kept_alive_connection_has_the_deadline_anew(
    platform: Platform,
) -> None:
    async with served(platform) as (port, _):
        reader, writer = await opened(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 OK\r\n")
        await reader.readuntil(b"}")  # the body
        await asyncio.sleep(READ_TIMEOUT_S * 0.7)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # in time for its own
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 OK\r\n")
        await reader.readuntil(b"}")
        writer.write(HALF_HEAD)  # and the third, half sent, is not
        received, after = await until_closed(reader, READ_TIMEOUT_S + 2)
        writer.close()
    assert received.startswith(b"HTTP/1.1 408 ")
    assert after <= READ_TIMEOUT_S + 0.5


async def test_a_request_whose_handling_is_slow_is_not_cut(platform: Platform) -> None:
    """The deadline is on the request's arrival, never on the application's answer."""
    app = create_app(platform=platform)
    turns: InTurn = app.state.run_turns
    async with served(platform, app) as (_, api):
        owner = await api.owner()
        async with AsyncExitStack() as stack:
            for _ in range(turns.limit):
                await stack.enter_async_context(turns.taken())
            waiting = asyncio.create_task(api.call("GET", "/api/runs", token=owner))
            await asyncio.sleep(READ_TIMEOUT_S * 2)  # handled, not answered, past the deadline
            assert not waiting.done()
        status, _ = await asyncio.wait_for(waiting, 5)
    assert status == 200


async def test_past_the_cap_a_connection_is_answered_503_and_the_rest_are_served(
    platform: Platform,
) -> None:
    async with served(platform) as (port, api):
        owner = await api.owner()
        await api.session.close()  # its kept-alive connection would count against the cap
        held = [await opened(port, b"") for _ in range(CAP)]
        await asyncio.sleep(0.1)
        reader, writer = await opened(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        refused, _ = await until_closed(reader, 2)
        writer.close()
        for _, held_writer in held[:5]:
            held_writer.close()
        await asyncio.sleep(0.1)
        async with aiohttp.ClientSession() as session:
            fresh = Api(api.base, session)
            status, _ = await asyncio.wait_for(fresh.call("GET", "/api/agents", token=owner), 5)
        for _, held_writer in held[5:]:
            held_writer.close()
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"retry-after: 1\r\n" in refused
    assert refused.endswith(b'"code":"unavailable"}')
    assert status == 200
