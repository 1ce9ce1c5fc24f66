"""Runs started at once are stored together (one statement for a burst), and a run that
cannot be stored fails alone."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest
from sqlalchemy import event

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.platform_fixtures import reset_postgres
from tests.integration.run_support import add_owner, run_row

pytestmark = pytest.mark.asyncio


async def test_runs_started_at_once_share_a_few_statements(platform: Platform) -> None:
    owner = await add_owner(platform)
    inserts = []

    def counted(*args: object) -> None:
        if str(args[2]).startswith("INSERT INTO runs"):
            inserts.append(args[2])

    engine = platform.db.transacting_engine()
    event.listen(engine, "before_cursor_execute", counted)
    try:
        runs = await asyncio.gather(
            *(start_run(platform, Caller(owner), f"Goal {n}") for n in range(100))
        )
    finally:
        event.remove(engine, "before_cursor_execute", counted)
    assert len({run.id for run in runs}) == 100
    for run in runs:
        stored = await run_row(platform, run.id)
        assert (stored.goal, stored.owner_id, stored.status) == (run.goal, owner, "RUNNING")
    assert len(inserts) <= 3  # the first alone, then the rest as they queued


async def test_a_run_that_cannot_be_stored_fails_alone(platform: Platform) -> None:
    owner = await add_owner(platform)
    callers = [Caller(owner), Caller("no-such-owner"), Caller(owner), Caller(owner)]
    results = await asyncio.gather(
        *(start_run(platform, caller, f"Goal {n}") for n, caller in enumerate(callers)),
        return_exceptions=True,
    )
    assert isinstance(results[1], Exception)
    stored = [r for n, r in enumerate(results) if n != 1]
    for run in stored:
        assert not isinstance(run, BaseException)
        assert (await run_row(platform, run.id)).owner_id == owner


async def test_a_closed_store_is_not_kept_alive_by_its_run_starts(settings: Settings) -> None:
    if settings.database_url and settings.database_url.startswith("postgresql"):
        await reset_postgres(settings.database_url)
    platform = await Platform.open(settings)
    owner = await add_owner(platform)
    await start_run(platform, Caller(owner), "Goal")
    store = weakref.ref(platform.db)
    await platform.close()
    del platform
    gc.collect()
    assert store() is None
