"""A real platform for tests: its store on SQLite or PostgreSQL, its API on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
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
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from palaestra.app import create_app
from palaestra.clock import FrozenClock
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.db import Database, migrate

ADMIN_TOKEN = "pa_admin_test-token"

__all__ = ["ADMIN_TOKEN", "Api", "fresh_postgres", "reset_postgres", "running", "serve_app"]


async def reset_postgres(url: str) -> None:
    """An empty schema: no table, no revision."""
    engine = create_async_engine(url)
    async with engine.begin() as connection:
        await connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await connection.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


#: What a schema is made of, to tell one freshly migrated from one a test changed.
_SHAPE = text(
    """
    SELECT 'relation', c.relname || ':' || c.relkind::text || ':' || c.relispartition::text
      FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'column', c.relname || '.' || a.attname || ':' || a.atttypid::regtype::text
           || ':' || a.attnotnull::text || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'constraint', conname || ':' || pg_get_constraintdef(oid)
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'index', indexdef FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL
    SELECT 'routine', proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'type', typname FROM pg_type WHERE typnamespace = 'public'::regnamespace
    UNION ALL
    SELECT 'trigger', tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal
    ORDER BY 1, 2
    """
)
_TABLES = text(
    "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
    " AND relkind IN ('r', 'p') AND NOT relispartition AND relname <> 'alembic_version'"
)
#: Per database URL: the shape of its schema just after it was migrated from empty.
_migrated_shapes: dict[str, tuple[Any, ...]] = {}


async def _is_migrated(connection: AsyncConnection) -> bool:
    found = await connection.execute(text("SELECT to_regclass('public.alembic_version')"))
    return found.scalar() is not None


async def _empty(connection: AsyncConnection) -> None:
    """Every row deleted and every sequence restarted. Deleting the few rows a test wrote
    costs milliseconds where TRUNCATE, which makes new files for every table, partition
    and index, costs half a second; the foreign keys are not checked meanwhile (the
    session replays as a replica), as every table is emptied."""
    await connection.execute(text("SET LOCAL session_replication_role = replica"))
    for (table,) in await connection.execute(_TABLES):
        await connection.execute(text(f'DELETE FROM "{table}"'))  # noqa: S608 (the catalog's names)
    used = await connection.execute(
        text(
            "SELECT sequencename FROM pg_sequences"
            " WHERE schemaname = 'public' AND last_value IS NOT NULL"
        )
    )
    for (sequence,) in used.all():
        await connection.execute(text(f'ALTER SEQUENCE "{sequence}" RESTART'))


async def _shape(connection: AsyncConnection) -> tuple[Any, ...]:
    revision = await connection.execute(text("SELECT version_num FROM alembic_version"))
    shape = await connection.execute(_SHAPE)
    return (tuple(revision.all()), tuple(shape.all()))


@asynccontextmanager
async def store_at(settings: Settings, revision: str) -> AsyncIterator[Database]:
    """A store of its own migrated up to ``revision`` (an older one: a migration's test
    writes what that revision kept, then upgrades); disposed of afterwards."""
    url = settings.effective_database_url
    if url.startswith("postgresql"):
        await reset_postgres(url)
    db = Database(url)
    try:
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, revision))
        yield db
    finally:
        await db.dispose()


async def fresh_postgres(url: str) -> None:
    """The database at ``url`` as freshly migrated, with no row.

    Migrating from an empty schema costs a second or two a test. When the schema is still
    exactly the one this process migrated (the revision, every relation, column, default,
    constraint, index, routine, type and trigger), emptying its tables gives the same
    state in milliseconds; a schema a test changed (a migration test, a dropped partition)
    is dropped and migrated again.
    """
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            if await _is_migrated(connection) and _migrated_shapes.get(url) == await _shape(
                connection
            ):
                await _empty(connection)
                return
    finally:
        await engine.dispose()
    await reset_postgres(url)
    db = Database(url)
    try:
        await db.migrate()
    finally:
        await db.dispose()
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            _migrated_shapes[url] = await _shape(connection)
    finally:
        await engine.dispose()


#: Per process: a SQLite database freshly migrated, copied where a test's store will be.
_sqlite_template: list[Path] = []


async def fresh_sqlite(path: Path) -> None:
    """A freshly migrated SQLite database at ``path`` unless one is there, copied from one
    this process migrated once (a copy costs a millisecond, a migration a hundred)."""
    if not _sqlite_template:
        folder = Path(tempfile.mkdtemp(prefix="palaestra-template-"))
        template = folder / "palaestra.db"
        db = Database(f"sqlite+aiosqlite:///{template}")
        try:
            await db.migrate()
        finally:
            await db.dispose()
        _sqlite_template.append(template)
    _copy_unless_present(_sqlite_template[0], path)


def _copy_unless_present(template: Path, path: Path) -> None:
    if not path.exists():
        shutil.copy2(template, path)


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
    url = settings.database_url or ""
    if url.startswith("postgresql"):
        await fresh_postgres(url)
    elif url.startswith("sqlite"):
        await fresh_sqlite(Path(make_url(url).database or ""))
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
