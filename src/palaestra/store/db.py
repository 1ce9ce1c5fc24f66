"""The database: engine creation (SQLite tuned for WAL, or PostgreSQL) and migrations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

__all__ = ["Database", "migrate"]

_MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


class Database:
    """One engine and its session factory."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        parsed = make_url(url)
        self.url = url
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {
            "echo": echo,
            # JSON columns (outputs, payloads, history details) on the hot paths.
            "json_serializer": _json_dumps,
            "json_deserializer": orjson.loads,
        }
        if self.is_sqlite:
            database = parsed.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
        else:
            kwargs.update(pool_size=20, max_overflow=20, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> AsyncSession:
        return self.sessions()

    async def migrate(self) -> None:
        """Bring the schema to the newest revision."""
        async with self.engine.begin() as connection:
            await connection.run_sync(migrate)

    async def dispose(self) -> None:
        await self.engine.dispose()


def migrate(connection: Connection, revision: str = "head") -> None:
    """Run Alembic's upgrade on an open connection."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)
