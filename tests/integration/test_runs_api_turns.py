"""The runs API's turns are taken by authenticated requests whose body has arrived: clients
that send a request's head and hold back its body, with or without a token, never make an
owner's request wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from urllib.parse import urlsplit

import aiohttp
import pytest

from palaestra.api.limits import InTurn
from palaestra.app import create_app
from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.platform_fixtures import Api, running, serve_app

pytestmark = pytest.mark.asyncio

TURNS = 4


@pytest.fixture
def database_url(tmp_path: object) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/palaestra.db"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"runs_api_concurrency": TURNS})


@asynccontextmanager
async def held(base: str, count: int, token: str | None = None) -> AsyncIterator[None]:
    """``count`` connections that send a ``POST /api/runs`` head and one byte of its body."""
    address = urlsplit(base)
    streams = []
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    try:
        for _ in range(count):
            _, writer = await asyncio.open_connection(address.hostname, address.port)
            writer.write(
                (
                    "POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"{auth}Content-Length: 100\r\n\r\n{{"
                ).encode()
            )
            await writer.drain()
            streams.append(writer)
        await asyncio.sleep(0.2)  # every head is parsed and handed to the application
        yield
    finally:
        for writer in streams:
            writer.close()


async def test_half_sent_run_starts_without_a_token_hold_no_turn(platform: Platform) -> None:
    async with running(platform) as api:
        owner = await api.owner()
        async with held(api.base, TURNS * 4):
            started = time.monotonic()
            status, _ = await asyncio.wait_for(api.call("GET", "/api/runs", token=owner), 5)
            assert status == 200
            assert time.monotonic() - started < 2


async def test_half_sent_run_starts_of_an_owner_hold_no_turn(platform: Platform) -> None:
    async with running(platform) as api:
        owner, other = await api.owner("owner"), await api.owner("other")
        async with held(api.base, TURNS * 4, token=other):
            status, _ = await asyncio.wait_for(api.call("GET", "/api/runs", token=owner), 5)
            assert status == 200
            status, body = await asyncio.wait_for(
                api.call("POST", "/api/runs", token=owner, json={"goal": "a goal"}), 5
            )
            assert status == 202, body


async def test_the_runs_api_waits_for_a_turn_and_authenticates_first(platform: Platform) -> None:
    app = create_app(platform=platform)
    turns: InTurn = app.state.run_turns
    async with serve_app(app) as base, aiohttp.ClientSession() as session:
        api = Api(base, session)
        owner = await api.owner()
        async with AsyncExitStack() as stack:
            for _ in range(TURNS):
                await stack.enter_async_context(turns.taken())
            waiting = asyncio.create_task(api.call("GET", "/api/runs", token=owner))
            # A wrong token is answered at once: it never asks for a turn.
            assert (await asyncio.wait_for(api.call("GET", "/api/runs", token="pa_x"), 5))[0] == 401
            assert (await asyncio.wait_for(api.call("GET", "/api/agents", token=owner), 5))[
                0
            ] == 200
            await asyncio.sleep(0.2)
            assert not waiting.done()  # the owner's request waits for its turn
        assert (await asyncio.wait_for(waiting, 5))[0] == 200
