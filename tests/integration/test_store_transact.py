"""``Database.transact`` and the many-row writes, on both stores.

A transaction commits what its work wrote or nothing, and what it read stays
as read until it commits, even against writers on other connections. The
bulk helpers write exactly the rows asked for, across the boundaries where a
batch is split into statements.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from typing import Any, cast

import orjson
import pytest
from sqlalchemy import Connection, Table, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from palaestra.errors import ConfigurationError, StoreClosed
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.store import bulk
from palaestra.store.bulk import insert_rows, update_rows
from palaestra.store.checkpoint import SAFETY_NET_PAGES
from palaestra.store.db import Database
from palaestra.store.models import Agent, AgentEvent, Owner

_OWNERS = cast(Table, Owner.__table__)
_AGENTS = cast(Table, Agent.__table__)
_EVENTS = cast(Table, AgentEvent.__table__)


class Boom(Exception):
    pass


async def _owner(platform: Platform) -> str:
    owner_id = new_id()
    async with platform.db.session() as session, session.begin():
        session.add(Owner(id=owner_id, name="o", token_hash=new_id(), created_at=0.0))
    return owner_id


async def _agent(platform: Platform) -> str:
    owner_id, agent_id = await _owner(platform), new_id()
    async with platform.db.session() as session, session.begin():
        session.add(
            Agent(
                id=agent_id,
                owner_id=owner_id,
                name="a",
                arena="edgearena",
                role="SCOUT",
                status="ACTIVE",
                consecutive_failures=0,
                created_at=0.0,
                updated_at=0.0,
            )
        )
    return agent_id


async def _failures(platform: Platform, agent_id: str) -> int:
    async with platform.db.session() as session:
        value = await session.scalar(select(Agent.consecutive_failures).where(Agent.id == agent_id))
    assert value is not None
    return value


async def test_a_transaction_commits_what_its_work_wrote_and_returns_its_result(
    platform: Platform,
) -> None:
    owner_id = new_id()

    def work(connection: Connection) -> str:
        row = {"id": owner_id, "name": "n", "token_hash": new_id(), "created_at": 1.5}
        insert_rows(connection, _OWNERS, [row])
        return "done"

    assert await platform.db.transact(work) == "done"
    async with platform.db.session() as session:
        assert await session.scalar(select(Owner.name).where(Owner.id == owner_id)) == "n"


async def test_a_transaction_whose_work_raises_writes_nothing(platform: Platform) -> None:
    owner_id = new_id()

    def work(connection: Connection) -> None:
        insert_rows(
            connection,
            _OWNERS,
            [{"id": owner_id, "name": "n", "token_hash": new_id(), "created_at": 1.5}],
        )
        raise Boom

    with pytest.raises(Boom):
        await platform.db.transact(work)
    async with platform.db.session() as session:
        assert await session.scalar(select(Owner.id).where(Owner.id == owner_id)) is None


async def test_a_savepoint_rolls_back_only_its_own_writes(platform: Platform) -> None:
    kept, dropped = new_id(), new_id()

    def work(connection: Connection) -> None:
        def owner(owner_id: str) -> dict[str, Any]:
            return {"id": owner_id, "name": "n", "token_hash": new_id(), "created_at": 1.0}

        savepoint = connection.begin_nested()
        insert_rows(connection, _OWNERS, [owner(dropped)])
        savepoint.rollback()
        insert_rows(connection, _OWNERS, [owner(kept)])

    await platform.db.transact(work)
    async with platform.db.session() as session:
        found = set(await session.scalars(select(Owner.id).where(Owner.id.in_([kept, dropped]))))
    assert found == {kept}


async def test_what_a_transaction_read_cannot_change_before_it_commits(
    platform: Platform,
) -> None:
    """A read-check-write in ``transact`` against a writer on another connection: the
    other writer waits (SQLite's write lock, PostgreSQL's row lock), no update is lost."""
    agent_id = await _agent(platform)
    read = threading.Event()
    times: dict[str, float] = {}

    def increment(connection: Connection) -> None:
        query = select(_AGENTS.c.consecutive_failures).where(_AGENTS.c.id == agent_id)
        if not platform.db.is_sqlite:
            query = query.with_for_update()
        seen = connection.execute(query).scalar_one()
        read.set()
        time.sleep(0.3)  # the other writer tries its update now
        connection.execute(
            update(_AGENTS).where(_AGENTS.c.id == agent_id).values(consecutive_failures=seen + 1)
        )
        times["work done"] = time.monotonic()  # the commit follows

    async def other_writer() -> None:
        await asyncio.to_thread(read.wait, 10)
        async with platform.db.session() as session, session.begin():
            times["other tried"] = time.monotonic()
            await session.execute(
                update(Agent)
                .where(Agent.id == agent_id)
                .values(consecutive_failures=Agent.consecutive_failures + 1)
            )
        times["other written"] = time.monotonic()

    await asyncio.gather(platform.db.transact(increment), other_writer())
    assert await _failures(platform, agent_id) == 2
    # The other writer did try while the transaction held what it had read, and waited.
    assert times["other tried"] < times["work done"] < times["other written"]


async def test_concurrent_transactions_each_see_the_last_ones_writes(platform: Platform) -> None:
    agent_id = await _agent(platform)

    def increment(connection: Connection) -> None:
        query = select(_AGENTS.c.consecutive_failures).where(_AGENTS.c.id == agent_id)
        if not platform.db.is_sqlite:
            query = query.with_for_update()
        seen = connection.execute(query).scalar_one()
        connection.execute(
            update(_AGENTS).where(_AGENTS.c.id == agent_id).values(consecutive_failures=seen + 1)
        )

    await asyncio.gather(*(platform.db.transact(increment) for _ in range(25)))
    assert await _failures(platform, agent_id) == 25


async def test_a_transaction_and_a_read_run_on_the_stores_own_thread(
    platform: Platform,
) -> None:
    """SQLite's writer thread, or PostgreSQL's lane: never the event loop's thread."""
    name = await platform.db.transact(lambda _connection: threading.current_thread().name)
    redone = await platform.db.transact(
        lambda _connection: threading.current_thread().name, durable=False, single=True
    )
    read = await platform.db.query(lambda _connection: threading.current_thread().name)
    assert name.startswith("palaestra-store")
    assert redone.startswith("palaestra-store")
    if platform.db.is_sqlite:
        assert read == threading.current_thread().name  # SQLite reads need no lane
    else:
        assert read == name == "palaestra-store-lane"


async def test_a_transaction_cancelled_by_its_caller(platform: Platform) -> None:
    """On PostgreSQL's lane the transaction rolls back at its next round trip; SQLite's
    writer thread, once it has started a transaction, carries it through (the caller is
    cancelled all the same)."""
    agent_id = await _agent(platform)
    started = threading.Event()
    release = threading.Event()

    def slow_increment(connection: Connection) -> None:
        connection.execute(
            update(_AGENTS).where(_AGENTS.c.id == agent_id).values(consecutive_failures=7)
        )
        started.set()
        release.wait(5)
        connection.execute(select(1))  # the lane notices the cancellation at a round trip

    def increment(connection: Connection) -> None:
        connection.execute(
            update(_AGENTS)
            .where(_AGENTS.c.id == agent_id)
            .values(consecutive_failures=_AGENTS.c.consecutive_failures + 1)
        )

    job = asyncio.ensure_future(platform.db.transact(slow_increment))
    assert await asyncio.to_thread(started.wait, 5)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job  # the caller is cancelled at once, the store told so
    release.set()
    # Waits for the row's lock: after the cancelled transaction has ended, either way.
    await platform.db.transact(increment)
    assert await _failures(platform, agent_id) == (8 if platform.db.is_sqlite else 1)


@pytest.mark.parametrize("url", ["sqlite+aiosqlite://", "sqlite+aiosqlite:///:memory:"])
def test_an_in_memory_sqlite_database_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="must be a file"):
        Database(url)


async def test_closing_the_database_twice_is_harmless(platform: Platform) -> None:
    await platform.db.dispose()
    await platform.db.dispose()


def _events(agent_id: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "agent_id": agent_id,
            "at": 1000.0 + n / 7,  # floats that need all their digits
            "kind": "dispatch",
            "outcome": "success",
            "latency_ms": None if n % 3 else float(n),
            "reason": f"reason {n} \u2013 \u00e9\U0001f600",
            # JSON already serialized is stored as it is.
            "detail": orjson.Fragment(orjson.dumps({"n": n})) if n % 2 else {"n": n, "odd": False},
        }
        for n in range(count)
    ]


@pytest.mark.parametrize("count", [1, 255, 256, 257, 700])
async def test_many_rows_are_inserted_and_updated_exactly(platform: Platform, count: int) -> None:
    """Across the sizes where a batch is split into statements (256 rows at most each)."""
    agent_id = await _agent(platform)
    rows = _events(agent_id, count)
    await platform.db.transact(lambda connection: insert_rows(connection, _EVENTS, rows))

    async with platform.db.engine.connect() as connection:
        stored = (
            await connection.execute(
                select(_EVENTS.c.id, _EVENTS.c.at, _EVENTS.c.latency_ms, _EVENTS.c.reason)
                .add_columns(_EVENTS.c.detail)
                .where(_EVENTS.c.agent_id == agent_id)
                .order_by(_EVENTS.c.at)
            )
        ).all()
    assert [(r.at, r.latency_ms, r.reason) for r in stored] == [
        (row["at"], row["latency_ms"], row["reason"]) for row in rows
    ]
    assert [r.detail["n"] for r in stored] == list(range(count))

    # Two rows in three are changed, and only where their outcome is still "success".
    changes = [
        {"outcome": "failure", "reason": f"changed {r.id}", "event_id": r.id, "was": "success"}
        for n, r in enumerate(stored)
        if n % 3
    ]
    changes.append({"outcome": "failure", "reason": "none", "event_id": -1, "was": "success"})

    def change(connection: Connection) -> int:
        return update_rows(connection, _EVENTS, changes, match={"id": "event_id", "outcome": "was"})

    counted = await platform.db.transact(change)
    assert counted == len(changes) - 1
    # Matched on the outcome too: a second pass changes nothing.
    assert await platform.db.transact(change) == 0

    async with platform.db.engine.connect() as connection:
        after = (
            await connection.execute(
                select(_EVENTS.c.id, _EVENTS.c.outcome, _EVENTS.c.reason)
                .where(_EVENTS.c.agent_id == agent_id)
                .order_by(_EVENTS.c.at)
            )
        ).all()
    changed_ids = {c["event_id"] for c in changes}
    for row, original in zip(after, rows, strict=True):
        if row.id in changed_ids:
            assert (row.outcome, row.reason) == ("failure", f"changed {row.id}")
        else:
            assert (row.outcome, row.reason) == ("success", original["reason"])


def test_wide_rows_are_split_into_statements_under_the_parameter_limit() -> None:
    for width, count in [(7, 700), (13, 200), (300, 1000), (1, 1)]:
        values = [tuple(range(width))] * count
        chunks = list(bulk._chunks(values))
        assert sum(len(chunk) for chunk in chunks) == count
        assert all(len(chunk) * width <= bulk._MAX_VALUES for chunk in chunks)
        assert all(len(chunk) <= bulk._CHUNK for chunk in chunks)
        assert len({len(chunk) for chunk in chunks}) <= 10  # a few statement shapes


async def test_a_batch_of_many_statements_is_written_whole(platform: Platform) -> None:
    """5,000 rows of 7 columns: 35,000 values, more than one SQLite statement may bind."""
    agent_id = await _agent(platform)
    rows = _events(agent_id, 5000)
    await platform.db.transact(lambda connection: insert_rows(connection, _EVENTS, rows))
    async with platform.db.engine.connect() as connection:
        count = await connection.scalar(
            text("SELECT count(*) FROM agent_events WHERE agent_id = :a"), {"a": agent_id}
        )
    assert count == 5000


async def test_a_failed_write_is_the_same_error_on_both_stores(platform: Platform) -> None:
    agent_id = await _agent(platform)
    rows = _events(agent_id, 3)
    await platform.db.transact(lambda connection: insert_rows(connection, _EVENTS, rows))
    async with platform.db.engine.connect() as connection:
        [first] = (
            await connection.execute(
                select(_EVENTS.c.id).where(_EVENTS.c.agent_id == agent_id).limit(1)
            )
        ).all()
    again = [{**rows[0], "id": first.id}]  # the same primary key twice
    with pytest.raises(IntegrityError):
        await platform.db.transact(lambda connection: insert_rows(connection, _EVENTS, again))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the writer thread's
async def test_after_a_failed_commit_the_store_takes_the_next_transaction(
    platform: Platform,
) -> None:
    """A commit that fails (here: a foreign key checked only at the commit) leaves no
    transaction open on the writer's one connection: nothing of it is kept, the next
    one runs, and a writer on another connection is not locked out."""
    dangling = _events(new_id(), 1)[0]  # an agent that does not exist

    def work(connection: Connection) -> None:
        connection.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
        insert_rows(connection, _EVENTS, [dangling])

    with pytest.raises(IntegrityError):
        await platform.db.transact(work)
    agent_id = await _agent(platform)  # another connection writes
    await platform.db.transact(
        lambda connection: insert_rows(connection, _EVENTS, _events(agent_id, 1))
    )
    async with platform.db.engine.connect() as connection:
        kept = await connection.scalar(text("SELECT count(*) FROM agent_events"))
    assert kept == 1


async def test_the_store_refuses_work_once_closed(platform: Platform) -> None:
    await platform.db.dispose()
    with pytest.raises(StoreClosed, match="closed"):
        await platform.db.transact(lambda connection: None)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # SQLite's own log
async def test_on_sqlite_the_log_is_copied_back_by_the_checkpointer(platform: Platform) -> None:
    checkpointer = platform.db._checkpointer
    assert checkpointer is not None
    async with platform.db.engine.connect() as connection:
        automatic = await connection.exec_driver_sql("PRAGMA wal_autocheckpoint")
        assert automatic.scalar() == SAFETY_NET_PAGES  # commits checkpoint inline only past it
    assert platform.db._writer is not None
    with platform.db._writer.engine.connect() as writer:
        assert writer.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == SAFETY_NET_PAGES

    agent_id = await _agent(platform)
    before = checkpointer.checkpoints
    await platform.db.transact(
        lambda connection: insert_rows(connection, _EVENTS, _events(agent_id, 50))
    )
    for _ in range(200):  # within a few intervals
        if checkpointer.checkpoints > before:
            break
        await asyncio.sleep(0.02)
    assert checkpointer.checkpoints > before
    # The database file itself (its log ignored) now holds the rows.
    file = sqlite3.connect(f"file:{checkpointer.database}?immutable=1", uri=True)
    try:
        copied = file.execute(
            "SELECT count(*) FROM agent_events WHERE agent_id = ?", (agent_id,)
        ).fetchone()
    finally:
        file.close()
    assert copied == (50,)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_on_postgresql_only_a_redoable_transaction_skips_the_log_flush(
    platform: Platform,
) -> None:
    def setting(connection: Connection) -> Any:
        return connection.execute(text("SHOW synchronous_commit")).scalar()

    assert await platform.db.transact(setting) == "on"
    assert await platform.db.transact(setting, durable=False) == "off"
    # SET LOCAL: the connection goes back to the pool as it was.
    assert await platform.db.transact(setting) == "on"
    owner_id = new_id()
    await platform.db.transact(
        lambda connection: insert_rows(
            connection,
            _OWNERS,
            [{"id": owner_id, "name": "o", "token_hash": owner_id, "created_at": 0.0}],
        ),
        durable=False,
    )
    async with platform.db.engine.connect() as connection:
        names = await connection.scalars(select(_OWNERS.c.name).where(_OWNERS.c.id == owner_id))
        assert names.all() == ["o"]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_on_postgresql_a_single_statement_is_its_own_transaction(
    platform: Platform,
) -> None:
    """``single=True``: no BEGIN before the statement, which is its own transaction (a
    savepoint, which needs a transaction block, is refused); and a redo-safe one still
    skips the log flush."""

    def savepoint(connection: Connection) -> None:
        connection.execute(text("SAVEPOINT probe"))

    await platform.db.transact(savepoint)
    with pytest.raises(DBAPIError, match="transaction block"):
        await platform.db.transact(savepoint, single=True)

    def setting(connection: Connection) -> Any:
        return connection.execute(text("SHOW synchronous_commit")).scalar()

    assert await platform.db.transact(setting, durable=False, single=True) == "off"
    assert await platform.db.transact(setting, single=True) == "on"


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_on_postgresql_statements_are_planned_for_their_values_every_time(
    platform: Platform,
) -> None:
    """A statement run more than five times on a connection keeps being planned for its
    values: a generic plan made while the table was empty stayed a sequential scan as it
    grew (where autovacuum is off, forever). Every pool's sessions say so."""

    def repeated(connection: Connection) -> tuple[Any, ...]:
        marker = new_id()  # names this statement among the connection's prepared ones
        sql = f"SELECT id FROM owners WHERE id = ANY(:ids) /* {marker} */"  # noqa: S608 (our id)
        lookup = text(sql)
        for _ in range(8):
            connection.execute(lookup, {"ids": [new_id()]})
        plans = text(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE :marked"
        )
        return tuple(connection.execute(plans, {"marked": f"%{marker} */"}).one())

    assert await platform.db.transact(repeated) == (0, 8)
    assert await platform.db.transact(repeated, durable=False) == (0, 8)
    assert await platform.db.query(repeated) == (0, 8)
    async with platform.db.read() as connection:
        assert await connection.run_sync(repeated) == (0, 8)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_on_postgresql_a_connection_the_server_dropped_while_idle_is_replaced(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pooled connections are not pinged on every use, only after a while idle: one the
    server dropped meanwhile is replaced before the work runs, which then succeeds."""
    import asyncpg  # type: ignore[import-untyped]

    from palaestra.store import db

    def backend(connection: Connection) -> Any:
        return connection.execute(text("SELECT pg_backend_pid()")).scalar()

    pid = await platform.db.transact(backend)
    assert await platform.db.transact(backend) == pid  # a busy connection is reused
    admin = await asyncpg.connect(platform.db.url.replace("postgresql+asyncpg", "postgresql"))
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid) is True
    finally:
        await admin.close()
    monkeypatch.setattr(db, "IDLE_PING_S", 0.0)
    again = await platform.db.transact(backend)
    assert again != pid
