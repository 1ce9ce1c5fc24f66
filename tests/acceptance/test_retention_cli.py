"""``palaestra retention``, run as an operator runs it: what is kept, archived and when."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import insert

from palaestra.clock import FrozenClock
from palaestra.engine.history import read_archive
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import AgentEvent
from palaestra.store.partitions import DAY_S
from tests.integration.arena_rows import add_agent, add_owner, add_run

PALAESTRA = [sys.executable, "-m", "palaestra"]
OLD_EVENTS = 40  # one a day, 40 to 1 days ago
TASKS = 3


async def _seed(data: Path) -> None:
    now = time.time()
    settings = Settings(_env_file=None, data_dir=data)
    platform = await Platform.open(settings, clock=FrozenClock(now - 100 * DAY_S))
    try:
        owner = await add_owner(platform)
        agent = await add_agent(platform, owner, "scout", "SCOUT")
        spec = {"agent_id": agent, "status": "SUCCEEDED", "payload": {"p": 1}, "output": {"o": 1}}
        await add_run(platform, [spec] * TASKS)
        rows = [
            {"agent_id": agent, "at": now - day * DAY_S, "kind": "ping", "outcome": "success"}
            for day in range(OLD_EVENTS, 0, -1)
        ]
        async with platform.db.session() as session, session.begin():
            await session.execute(insert(AgentEvent), rows)
    finally:
        await platform.close()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("retention-cli") / "data"
    asyncio.run(_seed(data))
    return data


def run(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PALAESTRA, "retention", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PALAESTRA_DATA_DIR": str(data), **env},
        cwd=data.parent,
    )


def test_status_then_a_pass_then_what_the_archive_holds(data_dir: Path) -> None:
    before = run(data_dir)
    assert before.returncode == 0, before.stderr
    out = before.stdout
    assert "history retention: a pass every 3600 s; archives in" in out
    assert "agent events: kept 30 days; events older than " in out
    assert "task payloads and outputs: kept 90 days after their run finished" in out
    assert "completion receipts (the callbacks task pages show): kept 90 days" in out
    assert out.count("archived: nothing yet") == 3
    assert "match turns: kept for ever" in out
    assert "browser sessions: deleted 1 days after they expired" in out
    assert "published leaderboards: the latest 10 per arena" in out
    assert "rated-match records (ratings before and after each rated match): kept for ever" in out
    assert "store: SQLite, incremental auto-vacuum" in out
    assert "roll-ups: nothing rolled up yet; raw events after that are kept" in out

    ran = run(data_dir, "--run-now")
    assert ran.returncode == 0, ran.stderr
    # Events 40 to 31 days old are past the window (whole days: the cut is the start of the
    # day 30 days back), and the run's three tasks finished 100 days ago.
    archived = OLD_EVENTS - 30
    first = ran.stdout.splitlines()[0]
    assert "roll-ups: closed until " in ran.stdout  # --run-now rolled the hours up first
    assert first.startswith(f"pass: archived {archived} events and removed {archived};")
    assert first.endswith(f"archived the bodies of {TASKS} tasks and cleared {TASKS}")
    assert "  wrote agent_events/events-from-1.parquet" in ran.stdout
    assert "  wrote task_bodies/task-bodies-" in ran.stdout
    assert f"archived: 1 files, {archived} events" in ran.stdout
    assert f"archived: 1 files, {TASKS} tasks" in ran.stdout
    assert "(removed)" in ran.stdout
    events = read_archive(data_dir / "archive" / "agent_events" / "events-from-1.parquet")
    assert len(events) == archived

    again = run(data_dir, "--run-now")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        "pass: archived 0 events and removed 0; archived the bodies of 0 tasks and cleared 0"
    )


def test_a_window_that_cannot_work_is_refused_with_the_reason(data_dir: Path) -> None:
    refused = run(data_dir, PALAESTRA_RETENTION_EVENTS_DAYS="-5")
    assert refused.returncode == 2
    assert "PALAESTRA_RETENTION_EVENTS_DAYS is -5: give a number of days from 1 to 3650" in (
        refused.stderr
    )
    assert "Traceback" not in refused.stderr
