"""Retention of completion receipts (archived, then removed), expired browser sessions
(deleted) and the hourly roll-ups of days past the events' window (their days' rows
stay), on both stores: nothing lost, nothing archived twice, nothing still within its
window removed, every read the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, select

from palaestra.engine.history import Retention, read_archive, roll_up_history
from palaestra.engine.history.retention import build_retention
from palaestra.platform import Platform
from palaestra.store import history
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.models import AgentEvent, CompletionReceipt, WebSession
from palaestra.store.partitions import DAY_S, day_of
from palaestra.store.rollup_models import DAY, HOUR, AgentRollup
from tests.integration.arena_rows import add_agent, add_owner
from tests.integration.crashes import Crash, dies_at
from tests.integration.plans import plan

pytestmark = pytest.mark.asyncio

DAYS = 100  # of receipts, one window (90 days) and ten days more
PER_DAY = 7


@pytest.fixture
def quick(platform: Platform) -> Platform:
    """Batches of three rows, no pause: a day of receipts takes three transactions."""
    platform.settings.retention_batch_rows, platform.settings.retention_pause_s = 3, 0.0
    return platform


def _receipt_rows(now: float) -> list[dict[str, Any]]:
    return [
        {
            "task_id": f"task-{day}-{i}",
            "signature": f"v1,{'x' * 40}{day:03d}{i}",
            "received_at": now - day * DAY_S - i * 600.0,
        }
        for day in range(DAYS)
        for i in range(PER_DAY)
    ]


async def _stored(platform: Platform) -> set[tuple[str, str, float]]:
    async with platform.db.session() as session:
        rows = await session.execute(
            select(
                CompletionReceipt.task_id,
                CompletionReceipt.signature,
                CompletionReceipt.received_at,
            )
        )
        return {tuple(r) for r in rows}  # type: ignore[misc]


def _archived(root: Path) -> list[tuple[str, str, float]]:
    found = []
    for path in sorted((root / ArchiveKind.COMPLETION_RECEIPTS.value).glob("*.parquet")):
        found += [(r["task_id"], r["signature"], r["received_at"]) for r in read_archive(path)]
    return found


async def _add_receipts(platform: Platform) -> set[tuple[str, str, float]]:
    rows = _receipt_rows(platform.clock.now())
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(CompletionReceipt), rows)
    return {(r["task_id"], r["signature"], r["received_at"]) for r in rows}


async def test_old_receipts_are_archived_by_day_then_removed_and_read_back_equal(
    quick: Platform,
) -> None:
    platform = quick
    written = await _add_receipts(platform)
    cut = day_of(platform.clock.now() - 90 * DAY_S)
    old = {r for r in written if r[2] < cut}
    assert old
    assert written - old

    report = await Retention(platform).run_once()

    archived = _archived(platform.settings.effective_archive_dir)
    assert len(archived) == len(set(archived)) == len(old)  # none twice
    assert set(archived) == old  # the same values, read back
    assert await _stored(platform) == written - old  # nothing within the window removed
    assert report.receipts_archived == report.receipts_removed == len(old)
    async with platform.db.session() as session:
        logged = list(
            await session.scalars(
                select(HistoryArchive).where(
                    HistoryArchive.kind == ArchiveKind.COMPLETION_RECEIPTS.value
                )
            )
        )
    assert sum(entry.rows for entry in logged) == len(old)
    assert all(entry.removed_at is not None for entry in logged)
    assert all(entry.until_at <= cut for entry in logged)

    again = await Retention(platform).run_once()
    assert again.receipts_archived == again.receipts_removed == 0
    assert sorted(_archived(platform.settings.effective_archive_dir)) == sorted(archived)


@pytest.mark.parametrize("crash_at", [1, 2, 5, 9])
async def test_a_pass_cut_short_is_finished_by_the_next_losing_nothing(
    quick: Platform, crash_at: int
) -> None:
    platform = quick
    written = await _add_receipts(platform)
    cut = day_of(platform.clock.now() - 90 * DAY_S)
    old = {r for r in written if r[2] < cut}
    with pytest.raises(Crash):
        await Retention(platform, sleep=dies_at(crash_at)).run_once()
    await Retention(platform).run_once()
    archived = _archived(platform.settings.effective_archive_dir)
    assert sorted(archived) == sorted(old)
    assert await _stored(platform) == written - old


async def test_zero_keeps_receipts_for_ever(quick: Platform) -> None:
    quick.settings.retention_receipts_days = 0
    written = await _add_receipts(quick)
    await Retention(quick).run_once()
    assert await _stored(quick) == written
    assert _archived(quick.settings.effective_archive_dir) == []


async def test_sessions_expired_past_the_window_are_deleted_in_batches(quick: Platform) -> None:
    platform = quick
    now = platform.clock.now()
    # 25 long expired (over nine batches), some expired within the day, some still valid.
    expiries = [now - 3 * DAY_S - i for i in range(25)] + [now - 3600.0 * h for h in (1, 5)]
    expiries += [now + 3600.0, now + 30 * DAY_S]
    rows = [
        {"id_hash": f"{i:064x}", "owner_id": None, "created_at": at - DAY_S, "expires_at": at}
        for i, at in enumerate(expiries)
    ]
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(WebSession), rows)

    report = await Retention(platform).run_once()

    async with platform.db.session() as session:
        left = sorted(await session.scalars(select(WebSession.expires_at)))
    assert left == sorted(expiries[25:])  # expired within a day, or still valid: kept
    assert report.web_sessions_deleted == 25

    platform.settings.retention_web_sessions_days = 0  # kept for ever
    platform.clock.advance(10 * DAY_S)  # type: ignore[attr-defined]
    await Retention(platform).run_once()
    async with platform.db.session() as session:
        assert len(list(await session.scalars(select(WebSession.id_hash)))) == 4


async def test_hourly_rollups_of_days_past_the_window_go_and_every_read_stays(
    quick: Platform,
) -> None:
    platform = quick
    platform.settings.retention_events_days = 2
    owner = await add_owner(platform)
    agents = [await add_agent(platform, owner, f"a{i}", "SCOUT") for i in range(2)]
    now = platform.clock.now()
    rows = [
        {
            "agent_id": agents[i % 2],
            "at": now - day * DAY_S - i * 1800.0,
            "kind": ("ping", "dispatch")[i % 2],
            "outcome": "failure" if i % 3 == 0 else "success",
            "latency_ms": 10.0 * i,
            "reason": "External agent timed out after 30000 ms" if i % 3 == 0 else None,
        }
        for day in range(5, 0, -1)
        for i in range(6)
    ]
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(AgentEvent), rows)
    while await roll_up_history(platform):  # every closed hour, 48 a call
        pass
    before = await _reads(platform, agents)

    report = await build_retention(platform).run_once()

    cut = day_of(platform.clock.now() - 2 * DAY_S)
    assert report.events_removed > 0
    assert report.rollup_hours_pruned > 0
    async with platform.db.session() as session:
        hours = list(
            await session.scalars(select(AgentRollup.start).where(AgentRollup.span == HOUR))
        )
        days = list(await session.scalars(select(AgentRollup.start).where(AgentRollup.span == DAY)))
    assert hours
    assert min(hours) >= cut  # the hours of the days before the cut are gone
    assert min(days) < cut  # their days stay
    assert await _reads(platform, agents) == before  # every read, the same


async def _reads(platform: Platform, agents: list[str]) -> list[Any]:
    async with platform.db.session() as session:
        found: list[Any] = [await history.runs_total(session)]
        for agent in agents:
            failures = await history.agent_failures(session, agent, ("ping", "dispatch"))
            found += [
                {k: (s.count, s.first, s.last) for k, s in failures.items()},
                await history.failures_total(session, agent),
                await history.latency_percentiles(session, agent, ("ping", "dispatch")),
            ]
    return found


async def test_a_days_receipts_are_removed_through_an_index_one_lookup_per_batch(
    platform: Platform,
) -> None:
    """The removal names a batch by its tasks: a list of (task, signature) pairs was, on
    PostgreSQL, an OR of each pair rechecked on every row fetched (seconds a batch, over
    the full rate's half a million receipts)."""
    platform.settings.retention_batch_rows, platform.settings.retention_pause_s = 100, 0.0
    day = day_of(platform.clock.now() - 100 * DAY_S)
    rows = [
        {"task_id": f"task-{i}", "signature": f"v1,{i:040d}", "received_at": day + i * 10.0}
        for i in range(300)
    ]
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(CompletionReceipt), rows)
    deletes: list[tuple[str, Any]] = []

    def record(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE FROM COMPLETION_RECEIPTS"):
            deletes.append((statement, parameters))

    engine = platform.db.transacting_engine()
    event.listen(engine, "before_cursor_execute", record)
    try:
        report = await Retention(platform).run_once()
    finally:
        event.remove(engine, "before_cursor_execute", record)

    assert await _stored(platform) == set()
    assert report.receipts_archived == report.receipts_removed == len(rows)
    assert len(deletes) == 4  # three full batches, then one that finds none and ends it
    for statement, parameters in deletes:
        found = await plan(platform, statement, parameters)
        assert "BitmapOr" not in found, found
        assert "SCAN completion_receipts" not in found, found
        assert "completion_receipts" in found, found
