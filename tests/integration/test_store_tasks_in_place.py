"""A task's row is updated in place: no index covers what a send or an end changes, and on
PostgreSQL its pages keep room for the new versions (migration 0007); ``/metrics`` still
counts the dispatches in flight, through their runs."""

from __future__ import annotations

from typing import cast

import pytest
from sqlalchemy import Table, inspect, text

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.service import start_run
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.store.bulk import insert_values
from palaestra.store.models import TASKS_FILLFACTOR, Run, Task
from tests.integration.platform_fixtures import running
from tests.integration.run_support import add_agent, add_owner
from tests.integration.web_support import page, still

pytestmark = pytest.mark.asyncio

_TASKS = cast(Table, Task.__table__)
_RUNS = cast(Table, Run.__table__)
_COLUMNS = (
    "id",
    "run_id",
    "phase",
    "slot",
    "attempt",
    "agent_id",
    "executor",
    "status",
    "created_at",
)


async def test_no_index_covers_what_a_send_or_an_end_changes(platform: Platform) -> None:
    changed = {
        "status",
        "sent_at",
        "deadline_at",
        "completed_at",
        "via",
        "output",
        "contribution",
        "latency_ms",
        "reason",
    }
    async with platform.db.engine.connect() as connection:
        indexes = await connection.run_sync(lambda c: inspect(c).get_indexes("tasks"))
    covered = {column for index in indexes for column in index["column_names"]}
    assert covered
    assert not covered & changed


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_postgresql_keeps_room_on_the_page_and_compresses_with_lz4(
    platform: Platform,
) -> None:
    async with platform.db.engine.connect() as connection:
        options = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = 'tasks'")
        )
        methods = await connection.scalar(
            text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        )
        compression: dict[str, bytes] = dict(
            (
                await connection.execute(
                    text(
                        "SELECT attname, attcompression FROM pg_attribute"
                        " WHERE attrelid = 'tasks'::regclass AND attname IN ('payload', 'output')"
                    )
                )
            ).all()
        )
    assert f"fillfactor={TASKS_FILLFACTOR}" in options
    expected = b"l" if "lz4" in methods else b"\x00"
    assert compression == {"payload": expected, "output": expected}


async def test_metrics_count_the_agents_tasks_in_flight_of_running_runs(
    platform: Platform,
) -> None:
    owner = await add_owner(platform)
    agent = await add_agent(platform, owner, "scout", "SCOUT", "https://scout.example/", "k")
    running_run = (await start_run(platform, Caller(owner), "Goal one")).id
    ended_run = (await start_run(platform, Caller(owner), "Goal two")).id
    rows = [
        (new_id(), running_run, "SCOUT", 0, 0, agent, "scout", "RUNNING", 1.0),
        (new_id(), running_run, "SCOUT", 1, 0, agent, "scout", "RUNNING", 1.0),
        (new_id(), running_run, "SCOUT", 2, 0, None, "house-baseline", "RUNNING", 1.0),
        (new_id(), running_run, "SCOUT", 3, 0, agent, "scout", "SUCCEEDED", 1.0),
        (new_id(), ended_run, "SCOUT", 0, 0, agent, "scout", "RUNNING", 1.0),
    ]

    def store(connection: object) -> None:
        insert_values(connection, _TASKS, _COLUMNS, rows)  # type: ignore[arg-type]
        connection.execute(  # type: ignore[attr-defined]
            _RUNS.update().where(_RUNS.c.id == ended_run).values(status="FAILED")
        )

    await platform.db.transact(store)
    async with running(still(platform)) as api:
        status, metrics = await page(api, "/metrics")
    assert status == 200
    assert "palaestra_dispatches_in_flight 2.0" in metrics
