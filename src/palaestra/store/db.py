"""The database: engine creation (SQLite tuned for WAL, or PostgreSQL) and migrations."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson
from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from palaestra.errors import ConfigurationError, StoreClosed
from palaestra.files import make_private, private_dir

from . import archives  # noqa: F401 (its table joins the models' metadata)
from .checkpoint import SAFETY_NET_PAGES, Checkpointer
from .lane import StoreLane
from .writer import SqliteWriter

__all__ = ["Database", "migrate"]

T = TypeVar("T")

_MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # Lets the retention job give removed history's pages back to the file system; takes
    # effect in a new database only (an older one switches with one VACUUM: see the
    # operators' guide, "History retention").
    cursor.execute("PRAGMA auto_vacuum=INCREMENTAL")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    # The Checkpointer's thread copies the log back; a commit does it only past the net.
    cursor.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")
    cursor.close()


def _private_sqlite_files(database: Path) -> None:
    """The database file exists, 0600, before SQLite opens it: SQLite gives its log and
    shared-memory files the database's own mode when it creates them. Files of an older
    version, made with the umask's mode, are narrowed."""
    private_dir(database.parent)
    make_private(database)
    for suffix in ("-wal", "-shm", "-journal"):
        make_private(database.with_name(database.name + suffix), create=False)


#: A pooled connection idle longer than this is pinged before use (a server restart or
#: a dropped connection is then met by a fresh one); a busy one is not, as the ping
#: costs three round trips and a lost connection is caught when it fails anyway.
IDLE_PING_S = 1.0


def _checked_in(_dbapi_connection: Any, record: Any) -> None:
    record.info["checked_in"] = time.monotonic()


def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    idle_since = record.info.get("checked_in")
    if idle_since is None or time.monotonic() - idle_since < IDLE_PING_S:
        return
    try:
        dbapi_connection.ping()
    except Exception as exc:
        raise DisconnectionError("the pooled connection is gone") from exc


def _planned_each_time(**settings: str) -> dict[str, Any]:
    """PostgreSQL sessions whose prepared statements are planned for their values each time.

    By default a statement prepared on a connection switches to a generic plan after five
    runs, and keeps it until its tables are analyzed again. A plan made while a table was
    small (a fresh database, or one whose autovacuum is off) stays a sequential scan as the
    table grows: a task lookup by primary key took 335 ms on 15,000 tasks. Planning each
    time costs the server a fraction of a millisecond a statement; these statements carry
    arrays of hundreds of values, whose sizes a generic plan cannot see either.
    """
    return {"server_settings": {"plan_cache_mode": "force_custom_plan", **settings}}


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


#: The connections of redo-safe transactions (``transact(durable=False)``): a pool of their
#: own whose sessions never wait for the log flush, so such a transaction costs no extra
#: round trip to say so (and whose statements are planned for their values each time).
#: Few: only the cage's turn batches use them.
_REDOABLE_POOL: Final = {"pool_size": 4, "max_overflow": 12}
#: The connections of every other :meth:`Database.transact` and :meth:`Database.query`, on
#: the store's lane.
_LANE_POOL: Final = {"pool_size": 10, "max_overflow": 20}
_DURABLE: Final = "durable"
_REDOABLE: Final = "redoable"


class Database:
    """The store: an async engine and its session factory; on SQLite also the writer
    thread of :meth:`transact` and the log's checkpointer (:mod:`.writer`,
    :mod:`.checkpoint`), on PostgreSQL the lane of :meth:`transact` and :meth:`query`
    (:mod:`.lane`)."""

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
        self._writer: SqliteWriter | None = None
        self._checkpointer: Checkpointer | None = None
        self._closed = False
        if self.is_sqlite:
            database = parsed.database
            if not database or database == ":memory:":
                # Every connection would open a database of its own.
                raise ConfigurationError("an SQLite database must be a file, not in memory")
            _private_sqlite_files(Path(database))
            self._writer = SqliteWriter(parsed, _sqlite_pragmas, **kwargs)
            self._checkpointer = Checkpointer(database, _sqlite_pragmas)
        pool: dict[str, Any] = {}
        if not self.is_sqlite:
            pool = {"pool_size": 20, "max_overflow": 20, "connect_args": _planned_each_time()}
        self.engine: AsyncEngine = create_async_engine(url, **kwargs, **pool)
        self._lane: StoreLane | None = None
        if not self.is_sqlite:
            engines = {
                _DURABLE: create_async_engine(
                    url, **kwargs, **_LANE_POOL, connect_args=_planned_each_time()
                ),
                _REDOABLE: create_async_engine(
                    url,
                    **kwargs,
                    **_REDOABLE_POOL,
                    connect_args=_planned_each_time(synchronous_commit="off"),
                ),
            }
            for pooled in (self.engine, *engines.values()):
                event.listen(pooled.sync_engine.pool, "checkin", _checked_in)
                event.listen(pooled.sync_engine.pool, "checkout", _ping_if_idle)
            self._lane = StoreLane(engines)
        if self._writer is not None and self._checkpointer is not None:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
            for engine in (self.engine.sync_engine, self._writer.engine):
                event.listen(engine, "commit", self._checkpointer.committed_on)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> AsyncSession:
        return self.sessions()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads only. On PostgreSQL its statements run without a
        transaction (no ``BEGIN`` and ``ROLLBACK`` round trips): at READ COMMITTED each
        statement sees what was committed when it began, in a transaction or not."""
        async with self.engine.connect() as connection:
            if not self.is_sqlite:
                await connection.execution_options(isolation_level="AUTOCOMMIT")
            yield connection

    async def transact(
        self, work: Callable[[Connection], T], *, durable: bool = True, single: bool = False
    ) -> T:
        """Run ``work`` with a synchronous connection in one transaction, and return its
        result: committed if ``work`` returns, rolled back if it raises.

        With ``durable=False`` the commit does not wait for PostgreSQL to flush its log:
        a crash of the database server (not of Palaestra) may then lose the last few
        such commits, never part of one (such transactions run on a pool of their own,
        whose sessions say so once, when they connect). That is SQLite's guarantee here in every
        commit (WAL with ``synchronous=NORMAL``). Only for writes that are safe to
        redo: a cage turn whose record is lost is sent again with the same
        idempotency key.

        With ``single=True``, ``work`` issues one statement, and on PostgreSQL that
        statement is its own transaction: no ``BEGIN`` and ``COMMIT`` round trips. (A
        ``work`` that issued two would commit each on its own.)

        On SQLite the write lock is taken before ``work`` starts, so nothing it reads
        can change before it commits, and the whole function runs on the store's writer
        thread (:mod:`.writer`): a batch of writes costs one hop from the event loop. On
        PostgreSQL ``work`` runs at READ COMMITTED: what it reads to decide a write, and
        that another writer could change meanwhile, it must read ``FOR UPDATE`` (or the
        callers must not race, as for opening one run's slots). After :meth:`dispose`,
        :class:`~palaestra.errors.StoreClosed`.
        """
        if self._closed:
            raise StoreClosed
        if self._writer is not None:
            return await self._writer.run(work)
        assert self._lane is not None
        return await self._lane.transact(_DURABLE if durable else _REDOABLE, work, single)

    def transacting_engine(self, *, durable: bool = True) -> Engine:
        """The (synchronous face of the) engine whose connections :meth:`transact` uses: SQLite's
        writer's, or PostgreSQL's lane's, whose connections are used on the lane only; for
        listening to its events, say."""
        if self._lane is not None:
            return self._lane.engines[_DURABLE if durable else _REDOABLE].sync_engine
        assert self._writer is not None
        return self._writer.engine

    async def query(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` (reads only) with a synchronous connection and return its result; on
        PostgreSQL on the store's lane (:mod:`.lane`), where its round trips do not wait
        behind the event loop's other work, without a transaction (as :meth:`read`)."""
        if self._closed:
            raise StoreClosed
        if self._lane is None:
            async with self.read() as connection:
                return await connection.run_sync(work)
        # At READ COMMITTED each statement sees what was committed when it began, in a
        # transaction or not: reads need none.
        return await self._lane.transact(_DURABLE, work, single=True)

    async def migrate(self) -> None:
        """Bring the schema to the newest revision."""
        async with self.engine.begin() as connection:
            await connection.run_sync(migrate)

    async def dispose(self) -> None:
        self._closed = True
        if self._writer is not None:
            await self._writer.close()
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.close)
        if self._lane is not None:
            await self._lane.close()
        await self.engine.dispose()


def migrate(connection: Connection, revision: str = "head") -> None:
    """Run Alembic's upgrade on an open connection."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)
