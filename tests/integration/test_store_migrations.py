"""The migrations build exactly the schema the models describe, on both stores."""

from __future__ import annotations

import json
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncConnection

from palaestra.engine.accounts import authenticate
from palaestra.platform import Platform
from palaestra.security import hash_token
from palaestra.settings import Settings
from palaestra.store.base import Base
from palaestra.store.db import Database, migrate
from palaestra.store.partitions import include_name
from tests.integration.platform_fixtures import reset_postgres

pytestmark = pytest.mark.asyncio


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"include_name": include_name})
    return list(compare_metadata(context, Base.metadata))


async def test_migrated_schema_matches_the_models(platform: Platform) -> None:
    async with platform.db.engine.connect() as connection:
        differences = await connection.run_sync(_differences)
        tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
    assert differences == []
    assert set(Base.metadata.tables) <= tables
    assert "alembic_version" in tables


async def test_migrating_twice_is_harmless(platform: Platform) -> None:
    await platform.db.migrate()
    async with platform.db.engine.connect() as connection:
        assert await connection.run_sync(_differences) == []


async def migrated_to(settings: Settings, revision: str) -> Database:
    """A fresh database of the test's store, at ``revision``."""
    if settings.database_url and settings.database_url.startswith("postgresql"):
        await reset_postgres(settings.database_url)
    db = Database(settings.effective_database_url)
    async with db.engine.begin() as connection:
        await connection.run_sync(lambda c: migrate(c, revision))
    return db


async def test_fighters_stored_before_consent_keep_taking_friendlies_unless_they_spend_a_key(
    settings: Settings,
) -> None:
    db = await migrated_to(settings, "0007")
    fighters = {
        "harness": ("cage", "harness", None),
        "house": ("cage", "house", None),
        "local": ("cage", "model", None),
        "remote": ("cage", "model", "sealed-provider-key"),
        "edge": ("edgearena", None, None),
    }
    try:
        async with db.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO owners (id, name, token_hash, created_at) "
                    "VALUES ('o1', 'bob', :hash, 1.0)"
                ),
                {"hash": "0" * 64},
            )
            for name, (arena, entrant_type, key) in fighters.items():
                await connection.execute(
                    text(
                        "INSERT INTO agents (id, owner_id, name, arena, entrant_type, "
                        "provider_key_sealed, sandbox_attested, status, consecutive_failures, "
                        "hold, reputation, created_at, updated_at) VALUES (:id, 'o1', :id, "
                        ":arena, :type, :key, false, 'ACTIVE', 0, false, 0.0, 1.0, 1.0)"
                    ),
                    {"id": name, "arena": arena, "type": entrant_type, "key": key},
                )
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, "0008"))
            rows = await connection.execute(text("SELECT id, friendly_challenges FROM agents"))
            accepts = {name: bool(value) for name, value in rows}
    finally:
        await db.dispose()
    assert accepts == {
        "harness": True,
        "house": True,
        "local": True,
        "remote": False,  # its turns spend its owner's provider key
        "edge": False,  # not a fighter
    }


async def test_owners_stored_before_rotation_keep_their_tokens(settings: Settings) -> None:
    db = await migrated_to(settings, "0008")
    try:
        async with db.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO owners (id, name, token_hash, created_at) "
                    "VALUES ('o1', 'bob', :hash, 1.0)"
                ),
                {"hash": hash_token("pa_owner_stored-before")},
            )
    finally:
        await db.dispose()
    platform = await Platform.open(settings)  # migrates to the newest revision
    try:
        async with platform.db.engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT token_rotated_at, token_revoked_at FROM owners")
            )
            assert rows.all() == [(None, None)]
        assert (await authenticate(platform, "pa_owner_stored-before")).owner_id == "o1"
    finally:
        await platform.close()


async def add_owner_and_run(connection: AsyncConnection) -> None:
    """The owner ``o1`` and its finished run ``r1``, as raw rows (at any revision)."""
    await connection.execute(
        text(
            "INSERT INTO owners (id, name, token_hash, created_at) VALUES ('o1', 'bob', :hash, 1.0)"
        ),
        {"hash": "0" * 64},
    )
    await connection.execute(
        text(
            "INSERT INTO runs (id, owner_id, goal, launchpad, status, phase, config, "
            "created_at, updated_at) VALUES ('r1', 'o1', 'g', 'make-money', "
            "'COMPLETED', 'REPORT', '{}', 1.0, 2.0)"
        )
    )


async def test_tasks_stored_before_0015_stay_whole_and_keep_no_signed_headers(
    settings: Settings,
) -> None:
    """0015 adds ``tasks.request_headers`` to a database that has tasks: they stay as they
    were, with NULL there (they did not keep their headers), and new rows can keep them."""
    db = await migrated_to(settings, "0014")
    task = {"id": "t-old", "payload": '{"taskId": "t-old"}', "output": '{"ok": true}'}
    try:
        async with db.engine.begin() as connection:
            await add_owner_and_run(connection)
            await connection.execute(
                text(
                    "INSERT INTO tasks (id, run_id, phase, slot, attempt, executor, status, "
                    "payload, output, sent_at, created_at) VALUES (:id, 'r1', 'SCOUT', 0, 0, "
                    "'scout', 'SUCCEEDED', :payload, :output, 1.5, 1.0)"
                ),
                task,
            )
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, "0015"))
            await connection.execute(
                text(
                    "INSERT INTO tasks (id, run_id, phase, slot, attempt, executor, status, "
                    "request_headers, created_at) VALUES ('t-new', 'r1', 'SCOUT', 1, 0, "
                    "'scout', 'RUNNING', :headers, 3.0)"
                ),
                {"headers": '{"x-edgearena-task-id": "t-new"}'},
            )
            rows = await connection.execute(
                text("SELECT id, payload, output, sent_at, request_headers FROM tasks ORDER BY id")
            )
            found = [tuple(row) for row in rows]
    finally:
        await db.dispose()
    payloads = [(i, _json(p), _json(o), s, _json(h)) for i, p, o, s, h in found]
    assert payloads == [
        ("t-new", None, None, None, {"x-edgearena-task-id": "t-new"}),
        ("t-old", {"taskId": "t-old"}, {"ok": True}, 1.5, None),
    ]


def _json(value: Any) -> Any:
    """A JSON column as read by raw SQL: text on SQLite, decoded on PostgreSQL."""
    return json.loads(value) if isinstance(value, str) else value


async def test_0017_keeps_each_send_in_sent_at_and_a_deadline_not_yet_sent_as_seconds(
    settings: Settings,
) -> None:
    """0017 drops ``tasks.dispatched_at``: a send that only it recorded moves to ``sent_at``;
    a task not sent keeps its deadline as ``deadline_s`` and no ``deadline_at`` until sent."""
    db = await migrated_to(settings, "0016")
    tasks = [  # id, slot, status, dispatched_at, sent_at, deadline_at, created_at
        ("t-sent", 0, "SUCCEEDED", 1.5, 1.5, 31.5, 1.0),
        ("t-opened", 1, "RUNNING", 2.0, None, 32.0, 2.0),
        ("t-dispatched", 2, "RUNNING", 3.5, None, 33.5, 3.0),
    ]
    try:
        async with db.engine.begin() as connection:
            await add_owner_and_run(connection)
            for task_id, slot, status, dispatched, sent, due, created in tasks:
                await connection.execute(
                    text(
                        "INSERT INTO tasks (id, run_id, phase, slot, attempt, executor, status, "
                        "dispatched_at, sent_at, deadline_at, created_at) VALUES (:id, 'r1', "
                        "'SCOUT', :slot, 0, 'scout', :status, :dispatched, :sent, :due, :created)"
                    ),
                    {
                        "id": task_id,
                        "slot": slot,
                        "status": status,
                        "dispatched": dispatched,
                        "sent": sent,
                        "due": due,
                        "created": created,
                    },
                )
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, "0017"))
            rows = await connection.execute(
                text("SELECT id, sent_at, deadline_s, deadline_at FROM tasks ORDER BY slot")
            )
            found = [tuple(row) for row in rows]
            columns = await connection.run_sync(
                lambda c: {column["name"] for column in inspect(c).get_columns("tasks")}
            )
    finally:
        await db.dispose()
    assert found == [
        ("t-sent", 1.5, None, 31.5),
        ("t-opened", None, 30.0, None),
        ("t-dispatched", 3.5, None, 33.5),
    ]
    assert "dispatched_at" not in columns
    assert "deadline_s" in columns
