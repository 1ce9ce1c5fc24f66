"""A real platform for tests: its store on SQLite or PostgreSQL, its API on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import uvicorn
from cryptography.fernet import Fernet
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from palaestra.app import create_app
from palaestra.clock import FrozenClock
from palaestra.platform import Platform
from palaestra.settings import Settings

ADMIN_TOKEN = "pa_admin_test-token"

__all__ = ["ADMIN_TOKEN", "Api", "reset_postgres", "running", "serve_app"]


async def reset_postgres(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as connection:
        await connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await connection.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


@pytest.fixture(scope="session")
def postgres_database(postgres_url: str) -> Iterator[str]:
    """A database of this test process's own, so that concurrent test runs never collide."""
    base = make_url(postgres_url)
    name = f"palaestra_test_{os.getpid()}"

    async def admin(statement: str) -> None:
        engine = create_async_engine(base, isolation_level="AUTOCOMMIT")
        async with engine.connect() as connection:
            await connection.execute(text(statement))
        await engine.dispose()

    asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}"'))
    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each platform test runs on both stores."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"
    url: str = request.getfixturevalue("postgres_database")
    return url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,
        data_dir=tmp_path,
        database_url=database_url,
        secret_key=SecretStr(Fernet.generate_key().decode()),
        admin_token=SecretStr(ADMIN_TOKEN),
        egress_allow=["127.0.0.0/8"],
        monitor_enabled=False,
        health_jitter=0.0,
    )


@pytest.fixture
def clock() -> FrozenClock:
    """Frozen at the real time, so that agents checking signatures by their own clocks agree."""
    return FrozenClock(time.time())


@pytest.fixture
async def platform(settings: Settings, clock: FrozenClock) -> AsyncIterator[Platform]:
    if settings.database_url and settings.database_url.startswith("postgresql"):
        await reset_postgres(settings.database_url)
    opened = await Platform.open(settings, clock=clock)
    try:
        yield opened
    finally:
        await opened.close()


@asynccontextmanager
async def serve_app(app: FastAPI) -> AsyncIterator[str]:
    """Run an ASGI app with uvicorn on 127.0.0.1 in this event loop; yield its base URL."""
    # As `palaestra serve`: the app reads X-Forwarded-For itself, from trusted proxies only.
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", proxy_headers=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@dataclass
class Api:
    """A thin JSON client for the platform's API."""

    base: str
    session: aiohttp.ClientSession

    async def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        data: bytes | None = None,
    ) -> tuple[int, Any]:
        sent = dict(headers or {})
        if token:
            sent["Authorization"] = f"Bearer {token}"
        async with self.session.request(
            method, self.base + path, json=json, data=data, headers=sent
        ) as response:
            body = await response.read()
            assert response.content_type == "application/json", body[:200]
            return response.status, (await response.json()) if body else None

    async def owner(self, name: str = "owner") -> str:
        status, body = await self.call(
            "POST", "/api/owners", token=ADMIN_TOKEN, json={"name": name}
        )
        assert status == 201, body
        token: str = body["token"]
        return token


@asynccontextmanager
async def running(platform: Platform) -> AsyncIterator[Api]:
    """The platform's API served on 127.0.0.1, with a client."""
    async with serve_app(create_app(platform=platform)) as base, aiohttp.ClientSession() as session:
        yield Api(base, session)
