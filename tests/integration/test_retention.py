"""Retention: history archived to Parquet, then removed; nothing lost or archived twice."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text

from palaestra.engine.accounts import Caller
from palaestra.engine.agents.outcomes import AgentOutcome, write_outcomes
from palaestra.engine.cage.referee import Referee
from palaestra.engine.history import Retention, archived_bodies, read_archive, roll_up_history
from palaestra.engine.history.lease import Lease
from palaestra.engine.history.retention import build_retention
from palaestra.platform import Platform
from palaestra.store.archives import ArchiveKind, HistoryArchive
from palaestra.store.models import AgentEvent, Task
from palaestra.store.partitions import (
    DAY_S,
    create_day,
    day_of,
    detached,
    partition_name,
    partitions,
)
from palaestra.web.task_queries import HEADERS_ARCHIVED, task_page
from tests.integration.arena_rows import add_agent, add_owner, add_run
from tests.integration.crashes import Crash, dies_at
from tests.integration.platform_fixtures import ADMIN_TOKEN, running
from tests.integration.web_support import page

pytestmark = pytest.mark.asyncio

_KINDS = ("ping", "dispatch", "status", "wizard")


@pytest.fixture
def quick(platform: Platform) -> Platform:
    """Small batches, no pause: a pass takes many transactions, quickly."""
    platform.settings.retention_batch_rows, platform.settings.retention_pause_s = 100, 0.0
    return platform


async def _events(platform: Platform, agents: list[str], days: int, per_day: int) -> None:
    now = platform.clock.now()
    rows = []
    for day in range(days, -1, -1):
        for i in range(per_day):
            at = now - day * DAY_S - i * 7.0
            rows.append(
                {
                    "agent_id": agents[i % len(agents)],
                    "at": at,
                    "kind": _KINDS[i % len(_KINDS)],
                    "outcome": "failure" if i % 5 == 0 else "success",
                    "latency_ms": None if i % 3 == 0 else float(i),
                    "reason": "timed out" if i % 5 == 0 else None,
                    "detail": {"n": i, "day": day} if i % 2 else None,
                }
            )
    async with platform.db.session() as session, session.begin():
        for start in range(0, len(rows), 500):
            await session.execute(insert(AgentEvent), rows[start : start + 500])


async def _all_events(platform: Platform) -> dict[int, tuple[Any, ...]]:
    async with platform.db.session() as session:
        rows = (await session.execute(select(AgentEvent))).scalars().all()
    return {
        e.id: (e.agent_id, e.at, e.kind, e.outcome, e.latency_ms, e.reason, e.detail) for e in rows
    }


def _archived_events(root: Path) -> dict[int, tuple[Any, ...]]:
    found: dict[int, tuple[Any, ...]] = {}
    for path in sorted((root / "agent_events").glob("*.parquet")):
        for r in read_archive(path):
            assert r["event_id"] not in found, "an event archived twice"
            detail = None if r["detail"] is None else json.loads(r["detail"])
            found[r["event_id"]] = (
                r["agent_id"],
                r["at"],
                r["kind"],
                r["outcome"],
                r["latency_ms"],
                r["reason"],
                detail,
            )
    return found


async def _agents(platform: Platform, n: int = 3) -> list[str]:
    owner = await add_owner(platform)
    return [await add_agent(platform, owner, f"scout-{i}", "SCOUT") for i in range(n)]


async def _logged(platform: Platform) -> list[HistoryArchive]:
    async with platform.db.session() as session:
        return list(await session.scalars(select(HistoryArchive).order_by(HistoryArchive.id)))


async def test_old_events_are_archived_whole_then_removed_and_read_back_equal(
    quick: Platform,
) -> None:
    platform = quick
    await _events(platform, await _agents(platform), days=40, per_day=30)
    before = await _all_events(platform)
    cut = day_of(platform.clock.now() - 30 * DAY_S)

    report = await Retention(platform).run_once()

    after = await _all_events(platform)
    archived = _archived_events(platform.settings.effective_archive_dir)
    old = {k: v for k, v in before.items() if v[1] < cut}
    assert old, "the test needs events older than the window"
    assert archived == old  # same rows, same values
    assert after == {k: v for k, v in before.items() if v[1] >= cut}  # the rest untouched
    assert report.events_archived == report.events_removed == len(old)
    assert report.pages_vacuumed > 0 or not platform.db.is_sqlite  # the file shrinks
    assert all(entry.removed_at is not None for entry in await _logged(platform))
    # A second pass finds nothing more to take: nothing is archived twice.
    again = await Retention(platform).run_once()
    assert again.events_archived == again.events_removed == 0
    assert _archived_events(platform.settings.effective_archive_dir) == old


async def test_events_not_yet_rolled_up_are_kept_whatever_their_age(quick: Platform) -> None:
    platform = quick
    await _events(platform, await _agents(platform), days=40, per_day=10)
    before = await _all_events(platform)
    summarised = platform.clock.now() - 36 * DAY_S

    async def rolled_up_until(_session: Any) -> float:
        return summarised

    await Retention(platform, rolled_up_until=rolled_up_until).run_once()

    left = await _all_events(platform)
    assert min(v[1] for v in left.values()) >= day_of(summarised)
    assert len(left) + len(_archived_events(platform.settings.effective_archive_dir)) == len(before)
    assert any(v[1] < platform.clock.now() - 30 * DAY_S for v in left.values())


async def test_the_built_job_waits_on_the_roll_ups_watermark(quick: Platform) -> None:
    """The job every process builds removes no event the roll-up job has not closed:
    nothing before the first roll-up, the old days once the hours are rolled up."""
    platform = quick
    await _events(platform, await _agents(platform), days=40, per_day=10)
    before = await _all_events(platform)

    await build_retention(platform).run_once()
    assert await _all_events(platform) == before  # nothing summarised yet: nothing goes

    while await roll_up_history(platform):  # close every hour up to the grace period
        pass
    await build_retention(platform).run_once()
    left = await _all_events(platform)
    cut = day_of(platform.clock.now() - 30 * DAY_S)
    assert left == {k: v for k, v in before.items() if v[1] >= cut}


async def test_task_bodies_are_archived_then_cleared_and_said_where(quick: Platform) -> None:
    platform = quick
    agents = await _agents(platform, 1)
    clock = platform.clock
    start = clock.now()
    specs = [
        {
            "agent_id": agents[0],
            "status": "SUCCEEDED",
            "payload": {"goal": f"g{i}"},
            "output": {"candidates": [i]},
        }
        for i in range(3)
    ]
    clock.current = start - 100 * DAY_S  # type: ignore[attr-defined]
    old_runs = [await add_run(platform, specs) for _ in range(4)]
    clock.current = start - 10 * DAY_S  # type: ignore[attr-defined]
    recent = await add_run(platform, specs)
    clock.current = start  # type: ignore[attr-defined]

    report = await Retention(platform).run_once()

    async with platform.db.session() as session:
        tasks = list(await session.scalars(select(Task)))
        old_finish = start - 100 * DAY_S + 10
        where = await archived_bodies(session, old_finish)
        nowhere = await archived_bodies(session, start - 10 * DAY_S + 10)
    cleared = [t for t in tasks if t.run_id in old_runs]
    assert len(cleared) == 12
    assert all(t.payload is None and t.output is None for t in cleared)
    assert all(t.payload is not None for t in tasks if t.run_id == recent)
    assert report.task_bodies_archived == report.task_bodies_cleared == 12
    assert where is not None
    assert nowhere is None
    rows = read_archive(platform.settings.effective_archive_dir / where.file)
    assert sorted((r["run_id"], json.loads(r["payload"])["goal"]) for r in rows) == sorted(
        (run, f"g{i}") for run in old_runs for i in range(3)
    )
    assert {json.loads(r["output"])["candidates"][0] for r in rows} == {0, 1, 2}


async def test_one_runner_at_a_time(quick: Platform) -> None:
    platform = quick
    other = Lease(platform)
    assert await other.take()
    assert (await Retention(platform).run_once()).skipped
    await other.release()
    assert not (await Retention(platform).run_once()).skipped


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("crash_at", [None, 1, 4])
async def test_postgres_partitions_are_made_ahead_and_old_days_dropped_whole(
    quick: Platform, crash_at: int | None
) -> None:
    platform = quick
    today = day_of(platform.clock.now())
    for back in range(40, 0, -1):
        await platform.db.transact(partial(create_day, day=today - back * DAY_S))
    await _events(platform, await _agents(platform), days=40, per_day=200)
    before = await _all_events(platform)
    cut = today - 30 * DAY_S
    dropped = 0
    if crash_at is not None:  # a runner dies with days detached, half archived
        with pytest.raises(Crash):
            await Retention(platform, sleep=dies_at(crash_at)).run_once()
        undropped = len(await platform.db.query(detached))
        assert undropped > 0  # detached, not yet archived or dropped
        dropped = 10 - undropped
        platform.clock.current += 301  # type: ignore[attr-defined]

    report = await Retention(platform).run_once()

    names = {p.name for p in await platform.db.query(partitions)}
    kept_days = [partition_name(today + d * DAY_S) for d in range(-30, 8)]
    assert set(kept_days) <= names
    assert not any(partition_name(today - d * DAY_S) in names for d in range(31, 41))
    assert len(report.partitions_dropped) == 10 - dropped
    assert await platform.db.query(detached) == []
    assert _archived_events(platform.settings.effective_archive_dir) == {
        k: v for k, v in before.items() if v[1] < cut
    }
    async with platform.db.engine.connect() as connection:
        in_default = await connection.scalar(text("SELECT count(*) FROM agent_events_default"))
        total = await connection.scalar(select(func.count()).select_from(AgentEvent))
    assert in_default == 0
    assert total == sum(1 for v in before.values() if v[1] >= cut)
    assert {e.kind for e in await _logged(platform)} == {ArchiveKind.AGENT_EVENTS.value}


async def test_pages_and_api_say_where_archived_bodies_went(quick: Platform) -> None:
    platform = quick
    platform.settings.public_runs = True
    agents = await _agents(platform, 1)
    start = platform.clock.now()
    platform.clock.current = start - 100 * DAY_S  # type: ignore[attr-defined]
    spec = {
        "agent_id": agents[0],
        "status": "SUCCEEDED",
        "phase": "SCOUT",
        "payload": {"goal": "sent"},
        "output": {"candidate_title": "Ship an invoicing bot"},
    }
    run_id = await add_run(platform, [spec])
    platform.clock.current = start  # type: ignore[attr-defined]
    async with platform.db.session() as session:
        task_id = await session.scalar(select(Task.id).where(Task.run_id == run_id))
    async with running(platform) as api:
        _, kept = await api.call("GET", f"/api/runs/{run_id}/tasks/{task_id}", token=ADMIN_TOKEN)
        await Retention(platform).run_once()
        status, gone = await api.call(
            "GET", f"/api/runs/{run_id}/tasks/{task_id}", token=ADMIN_TOKEN
        )
        page_status, body = await page(api, f"/runs/{run_id}")
        task_status, task_body = await page(api, f"/tasks/{task_id}")
    day = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d")
    said = f"archived on {day}, in task_bodies/task-bodies-"
    assert kept["payload"] == {"goal": "sent"}
    assert kept["archived"] is None
    assert status == 200
    assert gone["payload"] is None
    assert gone["output"] is None
    assert gone["archived"].startswith(said)
    assert page_status == 200
    assert f"This run's task payloads and outputs were {said}" in body
    assert task_status == 200  # a task's own page says it too, where its body would be
    assert f"this task's output was {said}" in task_body


async def test_pruning_under_load_disturbs_no_match_run_or_event(quick: Platform) -> None:
    """Matches played by the referee, pings recorded by the health monitor's writer and runs
    written, all while a pass archives and removes in small batches: every match plays out,
    every run keeps its bodies, every event is either kept or archived, once."""
    platform = quick
    platform.settings.cage_turn_deadline_ms = 500
    platform.settings.referee_enabled = False  # the test plays the matches itself
    agents = await _agents(platform)
    await _events(platform, agents, days=40, per_day=100)
    before = await _all_events(platform)
    cut = day_of(platform.clock.now() - 30 * DAY_S)
    old = {k: v for k, v in before.items() if v[1] < cut}
    stop = asyncio.Event()

    async def pings() -> int:
        written = 0
        while not stop.is_set():
            now = platform.clock.now()
            outcomes = [
                AgentOutcome.of(a, now, "ping", True, cause="ping", latency_ms=5.0) for a in agents
            ]
            await platform.db.transact(
                partial(write_outcomes, outcomes=outcomes, now=now, schedule=platform.schedule)
            )
            written += len(outcomes)
            await asyncio.sleep(0)
        return written

    async def runs() -> list[str]:
        made: list[str] = []
        while not stop.is_set():
            spec = {"agent_id": agents[0], "status": "SUCCEEDED", "payload": {"n": len(made)}}
            made.append(await add_run(platform, [spec | {"output": {"n": len(made)}}]))
        return made

    async with running(platform) as api:
        fighters = []
        for name in ("alice", "bob"):
            token = await api.owner(name)
            status, body = await api.call(
                "POST",
                "/api/fighters",
                token=token,
                json={"name": f"{name}-house", "entrant_type": "house", "class": "academic"},
            )
            assert status == 201, body
            fighters.append(body["fighter_id"])
        matches = []
        for _ in range(4):
            status, body = await api.call(
                "POST",
                "/api/matches",
                token=ADMIN_TOKEN,
                json={"attacker": fighters[0], "defender": fighters[1]},
            )
            assert status == 202, body
            matches.append(body["match_id"])
        pinging, writing = asyncio.create_task(pings()), asyncio.create_task(runs())
        refereeing = asyncio.create_task(Referee(platform).run_once())
        report = await Retention(platform).run_once()
        await refereeing
        stop.set()
        pinged, made = await pinging, await writing
        played = [
            (await api.call("GET", f"/api/matches/{m}", token=ADMIN_TOKEN))[1] for m in matches
        ]

    after = await _all_events(platform)
    archived = _archived_events(platform.settings.effective_archive_dir)
    assert archived == old  # archived once each, with their values
    assert report.events_archived == report.events_removed == len(old)
    assert {k: v for k, v in after.items() if k in before} == {
        k: v for k, v in before.items() if v[1] >= cut
    }
    new = [v for k, v in after.items() if k not in before]
    assert pinged > 0
    assert len(new) == pinged
    assert {v[2] for v in new} == {"ping"}
    assert [(b["status"], b["decided_by"], len(b["turns"])) for b in played] == [
        ("SCORED", "utility", 6)
    ] * len(matches)
    async with platform.db.session() as session:
        bodies = (
            await session.execute(select(Task.payload, Task.output).where(Task.run_id.in_(made)))
        ).all()
    assert len(bodies) == len(made) > 0
    assert all(payload is not None and output is not None for payload, output in bodies)


@pytest.mark.parametrize("crash_at", [1, 3, 6, 9])
async def test_a_pass_cut_short_anywhere_is_finished_by_the_next_losing_nothing(
    quick: Platform, crash_at: int
) -> None:
    platform = quick
    await _events(platform, await _agents(platform), days=40, per_day=50)
    await add_run(
        platform, [{"status": "SUCCEEDED", "payload": {"p": 1}, "output": {"o": 1}}]
    )  # finished now: kept
    before = await _all_events(platform)
    cut = day_of(platform.clock.now() - 30 * DAY_S)
    with pytest.raises(Crash):
        await Retention(platform, sleep=dies_at(crash_at)).run_once()
    # The dead runner's lease runs out; then a new pass finishes the work.
    platform.clock.current += 301  # type: ignore[attr-defined]
    report = await Retention(platform).run_once()

    assert not report.skipped
    old = {k: v for k, v in before.items() if v[1] < cut}
    assert _archived_events(platform.settings.effective_archive_dir) == old
    assert await _all_events(platform) == {k: v for k, v in before.items() if v[1] >= cut}
    assert all(entry.removed_at is not None for entry in await _logged(platform))


async def test_the_signed_headers_a_task_kept_go_with_its_body(quick: Platform) -> None:
    """``tasks.request_headers`` is treated as the payload is: archived, then cleared."""
    platform = quick
    agents = await _agents(platform, 1)
    start = platform.clock.now()
    signed = {
        "x-edgearena-signature": "sha256=" + "0f" * 32,
        "x-edgearena-timestamp": str(int(start - 100 * DAY_S)),
    }
    specs = [
        {
            "agent_id": agents[0],
            "status": "SUCCEEDED",
            "payload": {"goal": "g"},
            "output": {"o": i},
            "request_headers": signed | {"x-edgearena-task-id": f"t{i}"},
            "sent_at": start - 100 * DAY_S,
        }
        for i in range(2)
    ]
    platform.clock.current = start - 100 * DAY_S  # type: ignore[attr-defined]
    old = await add_run(platform, specs)
    platform.clock.current = start  # type: ignore[attr-defined]
    recent = await add_run(platform, specs)

    await Retention(platform).run_once()

    async with platform.db.session() as session:
        tasks = list(await session.scalars(select(Task)))
        where = await archived_bodies(session, start - 100 * DAY_S + 10)
    assert all(t.request_headers is None for t in tasks if t.run_id == old)
    assert all(t.request_headers is not None for t in tasks if t.run_id == recent)
    assert where is not None
    rows = read_archive(platform.settings.effective_archive_dir / where.file)
    assert sorted(json.loads(r["request_headers"])["x-edgearena-task-id"] for r in rows) == [
        "t0",
        "t1",
    ]
    assert all(json.loads(r["request_headers"])["x-edgearena-signature"] for r in rows)
    # The task's page says where they went.
    cleared = next(t for t in tasks if t.run_id == old)
    shown = await task_page(platform, cleared.id, Caller(owner_id=None, is_admin=True))
    assert shown is not None
    assert shown.headers_note == HEADERS_ARCHIVED
    assert shown.archived is not None
