"""Reads against history: every page and API read, fresh and after a month of history.

    .venv/bin/python bench/history.py [--events 10000000] [--tasks 1000000] [--agents 18000]
                                      [--hot 280000] [--repeats 15] [--stores sqlite,postgres]
                                      [--phases reads,storage] [--simulate-days 90]
                                      [--events-days N] [--bodies-days N] [--quick]

For each store a fresh platform is served on 127.0.0.1 (``palaestra serve``'s app,
uvicorn in this process) with a small arena and a day of history (:data:`FRESH`: a
page of each list, the leaderboards' tables included, and a chart's worth of events on
the paused agent whose page is read, so that fresh and grown pages show as much), and 20
agents pinged by the health monitor.
Each read is timed ``--repeats`` times (median), with a health-monitor tick (the 20
agents due at once: claim, ping, record) and a whole run (``POST /api/runs``, answered
by the house as no agent takes tasks, until COMPLETED; median of 3 after one to warm).
Then history is grown by bulk
SQL (PostgreSQL's ``generate_series``, SQLite's recursive CTE), as about 30 days of a
busy arena leave it: ``--agents`` more agents, ``--tasks`` tasks in runs of 9, a match
per 100 tasks, and ``--events`` agent events (pings, dispatches, status changes, a
twentieth of them failures), ``--hot`` of them on the paused agent. The roll-ups are
then rebuilt from the grown rows as migration 0014 builds them (its back-fill: every
closed hour in turn, timed),
the tables analysed, and everything is timed again.

Target: each read, the tick and the run within 1.5x of their fresh time (PASS or FAIL
per line; a missed target does not change the exit status).

Storage under retention (``--phases storage``): on a fresh platform of each store, under
a clock of its own, ``--simulate-days`` days (90) of a busy arena are written a day at a
time (``--events`` / 30 events and ``--tasks`` / 30 tasks a day, each task with a
completion receipt, a match per 100 tasks, among ``--agents`` agents), each day followed
by the roll-up job and a retention pass at the default windows (events 30 days, task
bodies and receipts 90; ``--events-days`` and ``--bodies-days`` set others, so that a
run at the full rate passes its windows in fewer days), as ``palaestra serve`` runs
them. The database's size, its agent events, the archive folder's size and the seconds
the day's writing and its passes took are printed every day, then the largest tables,
``agent_rollups``' hour and day rows, and how much the database grew a day before and
after the events' window filled. Target: the agent events held at
the window's worth (a day more at most) whatever the days written (PASS or FAIL); what
still grows is what is kept for ever (tasks, runs, matches, roll-ups) and, until their
own window, the task bodies and receipts.

The exit status is 1 when a read fails (a status other than 200), the roll-ups differ
from the raw aggregates after the growth, or more events are kept than the window's;
0 otherwise. PostgreSQL is ``PALAESTRA_BENCH_POSTGRES_URL`` (a database of the bench's
own is created on it and dropped afterwards).
"""

# The SQL of rollups_agree is built from the watermark, a number read from the database.
# ruff: noqa: S608

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import uvicorn
from aiohttp import web
from sqlalchemy import insert, text, update
from sqlalchemy.engine import Connection

from palaestra.app import create_app
from palaestra.clock import FrozenClock
from palaestra.engine.agents.health import HealthMonitor
from palaestra.engine.history.retention import build_retention
from palaestra.engine.ratings.leaderboard import recompute
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.store.models import Agent, AgentEvent, Match
from palaestra.store.rollup_sql import TABLES
from palaestra.store.rollups import (
    DEFAULT_GRACE_S,
    UNTIL_KEY,
    backfill,
    roll_up,
    until_of,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._history_growth import grow, grow_day
from bench._support import (
    HOST,
    add_owner,
    agent_row,
    agents_process,
    bench_database,
    bench_settings,
    parse_args,
)

ADMIN = "pa_admin_bench-history-token"
MONITORED = 20
RUNS = 3  # whole runs timed, after one to warm
TARGET = 1.5
#: The fresh arena's day of history: a page of each list (the agents and, a twentieth of
#: them, the fighters: 209, a page of the live table's API; the matches, one per 100 tasks:
#: 51 with the seeded one, a page of the matches page and of the API's), a chart's worth on
#: the read agent.
FRESH = {"events": 21_000, "tasks": 5_000, "agents": 4_100, "hot": 20_000}
QUICK = {
    "events": 20_000,
    "tasks": 3_000,
    "agents": 300,
    "hot": 5_000,
    "repeats": 2,
    # Past both windows, shortened so that a few days pass them (every retention path once).
    "simulate_days": 6,
    "events_days": 2,
    "bodies_days": 3,
}
DAY = 86400.0


async def healthy(request: web.BaseRequest) -> web.StreamResponse:
    return web.Response(body=b'{"ok":true}', content_type="application/json")


@asynccontextmanager
async def served(platform: Platform) -> AsyncIterator[str]:
    config = uvicorn.Config(
        create_app(platform=platform), host=HOST, port=0, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://{HOST}:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


async def seed(platform: Platform, ping_url: str) -> dict[str, str]:
    """The fresh arena; the ids of the rows whose pages are read."""
    now = time.time()
    owner = await add_owner(platform, now)
    hot = agent_row(owner, "hot", now, status="PAUSED")
    monitored = [
        agent_row(owner, f"pinged-{i}", now, endpoint_url=f"{ping_url}/{i}", next_ping_at=now + 9e6)
        for i in range(MONITORED)
    ]
    fighters = [
        agent_row(owner, f"fighter-{i}", now, arena="cage", role=None, entrant_type="harness")
        for i in range(4)
    ]
    match = {
        "id": new_id(),
        "attacker_id": fighters[0]["id"],
        "defender_id": fighters[1]["id"],
        "ruleset": "cage.v1",
        "kind": "rated",
        "status": "SCORED",
        "outcome": "draw",
        "decided_by": "utility",
        "seed": 1,
        "material": {
            "entrants": {
                side: {"fighter_id": fighter["id"], "name": fighter["name"]}
                for side, fighter in (("attacker", fighters[0]), ("defender", fighters[1]))
            }
        },
        "deadline_ms": 1000,
        "next_turn": 6,
        "created_at": now,
        "updated_at": now,
        "finished_at": now,
    }
    event = {"agent_id": hot["id"], "at": now, "kind": "ping", "outcome": "success"}
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(Agent), [hot, *monitored, *fighters])
        await session.execute(insert(Match), [match])
        await session.execute(insert(AgentEvent), [{**event, "latency_ms": 12.0}] * 3)
    return {"owner": owner, "hot": hot["id"], "fighter": fighters[0]["id"], "match": match["id"]}


def reads(ids: dict[str, str], run_id: str) -> dict[str, str]:
    return {
        "overview": "/",
        "agents page": "/agents",
        "agent page": f"/agents/{ids['hot']}",
        "fighter page": f"/fighters/{ids['fighter']}",
        "runs page": "/runs",
        "run page": f"/runs/{run_id}",
        "matches page": "/matches",
        "match page": f"/matches/{ids['match']}",
        "leaderboard": "/leaderboard",
        "GET /api/agents": "/api/agents",
        "GET /api/agents/{id}/history": f"/api/agents/{ids['hot']}/history",
        "GET /api/runs": "/api/runs",
        "GET /api/matches": "/api/matches",
        "GET /api/leaderboard/live": "/api/leaderboard/live",
        "GET /metrics": "/metrics",
    }


async def timed(work: Callable[[], Awaitable[Any]], repeats: int) -> float:
    await work()  # warm: plans, caches, pools
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        await work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def measure(
    platform: Platform, base: str, ids: dict[str, str], repeats: int, failures: list[str]
) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    found: dict[str, float] = {}
    async with aiohttp.ClientSession(headers=headers) as http:
        run_id = await whole_run(http, base)  # warm: the first run plans every statement
        runs: list[float] = []
        for _ in range(RUNS):
            started = time.perf_counter()
            await whole_run(http, base)
            runs.append((time.perf_counter() - started) * 1000)
        found["whole run (house)"] = statistics.median(runs)
        for name, path in reads(ids, run_id).items():

            async def get(path: str = path, name: str = name) -> None:
                async with http.get(base + path) as response:
                    await response.read()
                    if response.status != 200:
                        failures.append(f"{name}: {response.status}")

            found[name] = await timed(get, repeats)
    found["health-monitor tick"] = await timed(lambda: tick(platform), repeats)
    return found


async def whole_run(http: aiohttp.ClientSession, base: str) -> str:
    sizes = {"scouts": 3, "shortlist": 2, "builds": 1, "verifies": 1, "critiques": 1}
    async with http.post(f"{base}/api/runs", json={"goal": "bench", "sizes": sizes}) as response:
        run_id: str = (await response.json())["run_id"]
    while True:
        async with http.get(f"{base}/api/runs/{run_id}") as response:
            if (await response.json())["status"] != "RUNNING":
                return run_id
        await asyncio.sleep(0.01)


async def tick(platform: Platform) -> None:
    async with platform.db.session() as session, session.begin():
        await session.execute(
            update(Agent).where(Agent.name.like("pinged-%")).values(next_ping_at=0.0)
        )
    pinged = await HealthMonitor(platform).run_once()
    assert pinged == MONITORED, pinged


async def publish(platform: Platform) -> None:
    """The leaderboards, as ``palaestra serve`` publishes them (not timed: not a read)."""
    for arena in (Arena.CAGE, Arena.EDGEARENA):
        await recompute(platform, arena, resamples=10)


def rebuild_rollups(connection: Connection) -> int:
    """Migration 0014's back-fill over every row: the roll-ups and their watermark forgotten,
    then every closed hour rolled up again, one by one; how many hours."""
    for table in TABLES:
        connection.execute(text(f"DELETE FROM {table}"))
    connection.execute(text("DELETE FROM meta WHERE key = :key"), {"key": UNTIL_KEY})
    return backfill(connection, time.time(), DEFAULT_GRACE_S)


def rollups_agree(connection: Connection) -> bool:
    """The roll-ups before the watermark and the rows after it, against the raw rows' counts."""
    until = until_of(connection) or 0.0
    day = until - until % 86400
    closed = (
        f"((span = 86400 AND start <= {until - 86400}) "
        f"OR (span = 3600 AND start >= {day} AND start < {until}))"
    )
    pairs = [
        (f"SELECT sum(events) FROM agent_rollups WHERE {closed}",
         f"SELECT count(*) FROM agent_events WHERE at < {until}"),
        (f"SELECT sum(tasks) FROM task_rollups WHERE {closed}",
         f"SELECT count(*) FROM tasks WHERE agent_id IS NOT NULL AND created_at < {until}"),
        (f"SELECT sum(matches) FROM match_rollups WHERE side = 'attacker' AND {closed}",
         f"SELECT count(*) FROM matches WHERE created_at < {until}"),
        (f"SELECT sum(matches) FROM arena_rollups WHERE {closed}",
         f"SELECT count(*) FROM matches WHERE created_at < {until}"),
        (f"SELECT sum(runs) FROM arena_rollups WHERE {closed}",
         f"SELECT count(*) FROM runs WHERE created_at < {until}"),
    ]  # fmt: skip
    return all(
        int(connection.scalar(text(rolled)) or 0) == int(connection.scalar(text(raw)) or 0)
        for rolled, raw in pairs
    )


async def one_store(store: str, args: argparse.Namespace, failures: list[str]) -> None:
    async with AsyncExitStack() as stack:
        data = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        given: dict[str, Any] = {
            "admin_token": ADMIN,
            "matchmaking_enabled": False,
            "local_model_enabled": False,
            "public_runs": True,
            "leaderboard_interval_s": 0.0,  # published below, outside the timings
            "rollup_interval_s": 1e9,  # the roll-ups are rebuilt below, timed apart
        }
        if store == "postgres":
            given["database_url"] = await stack.enter_async_context(bench_database())
        platform = await Platform.open(bench_settings(data, **given))
        stack.push_async_callback(platform.close)
        port = stack.enter_context(agents_process(healthy))
        ids = await seed(platform, f"http://{HOST}:{port}")
        # Fresh: a day of history, a page of each list, rolled up by the job's back-fill.
        await platform.db.transact(lambda c: grow(c, ids, days=1, mark="1", **FRESH))
        await platform.db.transact(rebuild_rollups)
        if not await platform.db.transact(rollups_agree):
            failures.append(f"{store}: the roll-ups differ from the raw rows when fresh")
        base = await stack.enter_async_context(served(platform))
        await publish(platform)
        fresh = await measure(platform, base, ids, args.repeats, failures)
        fresh_load = os.getloadavg()[0]
        started = time.perf_counter()
        sizes = await platform.db.transact(
            lambda c: grow(c, ids, events=args.events, tasks=args.tasks, agents=args.agents,
                           hot=args.hot)
        )  # fmt: skip
        grown_s = time.perf_counter() - started
        started = time.perf_counter()
        hours = await platform.db.transact(rebuild_rollups)
        backfill_s = time.perf_counter() - started
        if not await platform.db.transact(rollups_agree):
            failures.append(f"{store}: the roll-ups differ from the raw rows after the growth")
        await platform.db.transact(lambda c: c.execute(text("ANALYZE")))
        await publish(platform)
        grown = await measure(platform, base, ids, args.repeats, failures)
        grown_load = os.getloadavg()[0]
        size = await platform.db.query(_database_size)
    print(
        f"{store}: grown by {sizes} in {grown_s:.0f} s; roll-ups back-filled in "
        f"{backfill_s:.1f} s ({hours} hours); database {size / 2**20:,.0f} MiB"
    )
    print(f"  load average (1 min) after the fresh timings {fresh_load:.1f}, after the grown ones "
          f"{grown_load:.1f}")  # fmt: skip
    print(f"  {'read':<32} {'fresh ms':>9} {'grown ms':>9} {'ratio':>7}")
    for name, before in fresh.items():
        after = grown[name]
        ratio = after / before if before else float("inf")
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        print(f"  {name:<32} {before:>9.1f} {after:>9.1f} {ratio:>6.2f}x  {verdict}")


async def storage(store: str, args: argparse.Namespace, failures: list[str]) -> None:
    """``--simulate-days`` days written a day at a time, each followed by the roll-up job
    and a retention pass; the storage, and the time each took, printed every day."""
    days = args.simulate_days
    per_day = {"events": args.events // 30, "tasks": args.tasks // 30}
    async with AsyncExitStack() as stack:
        data = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        given: dict[str, Any] = {"retention_pause_s": 0.0}
        if args.events_days is not None:
            given["retention_events_days"] = args.events_days
        if args.bodies_days is not None:
            given["retention_task_bodies_days"] = args.bodies_days
            given["retention_receipts_days"] = args.bodies_days
        if store == "postgres":
            given["database_url"] = await stack.enter_async_context(bench_database())
        # Whole days, ending yesterday: the rows' times are in the past of the real clock.
        first = (time.time() // DAY - days - 1) * DAY
        clock = FrozenClock(first)
        platform = await Platform.open(bench_settings(data, **given), clock=clock)
        stack.push_async_callback(platform.close)
        owner = await add_owner(platform, first)
        await platform.db.transact(
            lambda c: grow(c, {"owner": owner, "hot": ""}, events=0, tasks=0,
                           agents=args.agents, hot=0, days=1, mark="2")
        )  # fmt: skip
        retention = build_retention(platform)
        settings = platform.settings
        print(
            f"{store}: {days} days of {per_day['events']:,} events and {per_day['tasks']:,} "
            f"tasks (and receipts) a day among {args.agents:,} agents; retention windows: "
            f"events {settings.retention_events_days} days, task bodies "
            f"{settings.retention_task_bodies_days}, receipts {settings.retention_receipts_days}"
        )
        print(f"  {'day':>4} {'database MiB':>13} {'agent events':>13} {'archive MiB':>12} "
              f"{'write s':>8} {'pass s':>7}")  # fmt: skip
        sizes = {0: await platform.db.query(_database_size)}  # the agents, before any day
        started = time.perf_counter()
        for day in range(days):
            start = first + day * DAY
            written = time.perf_counter()
            await platform.db.transact(
                partial(grow_day, day=day, start=start, agents=args.agents, **per_day)
            )
            write_s = time.perf_counter() - written
            clock.current = start + DAY + 2 * 3600  # the next morning: yesterday's hours closed
            passed = time.perf_counter()
            await roll_up_to_now(platform)
            report = await retention.run_once()
            if report.deferred:
                print(f"  day {day + 1}: left for the next pass: {report.deferred}")
            pass_s = time.perf_counter() - passed
            sizes[day + 1] = size = await platform.db.query(_database_size)
            events = await platform.db.query(_event_count)
            archive = sum(
                f.stat().st_size for f in settings.effective_archive_dir.rglob("*") if f.is_file()
            )
            print(f"  {day + 1:>4} {size / 2**20:>13,.0f} {events:>13,} "
                  f"{archive / 2**20:>12,.0f} {write_s:>8.1f} {pass_s:>7.1f}")  # fmt: skip
        largest = await platform.db.query(_largest_tables)
        print("  the largest tables at the end (MiB, indexes included): " + ", ".join(
            f"{name} {size / 2**20:,.0f}" for name, size in largest
        ))  # fmt: skip
        hours, day_rows = await platform.db.query(_agent_rollup_rows)
        print(f"  agent_rollups at the end: {day_rows:,} day rows ({day_rows / days:,.0f} a "
              f"day), {hours:,} hour rows")  # fmt: skip
    window = settings.retention_events_days
    if days <= window + 1:
        print(f"  ({days} days do not pass the events' window: nothing to compare)")
        return
    before = (sizes[window] - sizes[0]) / window / 2**20
    after = (sizes[days] - sizes[window + 1]) / (days - window - 1) / 2**20
    held = (window + 1) * per_day["events"]
    verdict = "PASS" if events <= held else "FAIL"
    print(
        f"  the database grew {before:,.1f} MiB a day until the events' window filled (days "
        f"1 to {window}), {after:,.1f} MiB a day after it (days {window + 1} to {days}: the "
        f"rows kept for ever, and task bodies and receipts until their own windows); agent "
        f"events held at {events:,} (at most {held:,})  {verdict}; "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    if verdict == "FAIL":
        failures.append(f"{store}: {events:,} agent events kept after {days} days")


async def roll_up_to_now(platform: Platform) -> None:
    """The roll-up job, as the server runs it, until no closed hour is left."""
    while await roll_up(
        platform.db, platform.clock.now(), grace_s=DEFAULT_GRACE_S,
        keep_raw_s=platform.settings.retention_events_days * DAY, max_hours=None,
    ):  # fmt: skip
        pass


def _agent_rollup_rows(connection: Connection) -> tuple[int, int]:
    """How many hour rows and day rows ``agent_rollups`` holds."""
    rows = connection.execute(text("SELECT span, count(*) FROM agent_rollups GROUP BY span"))
    found: dict[int, int] = {int(span): int(count) for span, count in rows}
    return found.get(3600, 0), found.get(int(DAY), 0)


def _event_count(connection: Connection) -> int:
    return int(connection.scalar(text("SELECT count(*) FROM agent_events")) or 0)


def _largest_tables(connection: Connection) -> list[tuple[str, int]]:
    """The eight largest tables, in bytes, their indexes (and partitions) counted in."""
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql(
            "SELECT coalesce(m.tbl_name, s.name), sum(s.pgsize) FROM dbstat AS s "
            "LEFT JOIN sqlite_master AS m ON m.name = s.name GROUP BY 1"
        ).all()
    else:
        rows = connection.execute(
            text(
                "SELECT coalesce(p.relname, c.relname), sum(pg_total_relation_size(c.oid)) "
                "FROM pg_class AS c LEFT JOIN pg_inherits AS i ON i.inhrelid = c.oid "
                "LEFT JOIN pg_class AS p ON p.oid = i.inhparent "
                "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
                "WHERE c.relkind = 'r' AND n.nspname = current_schema() GROUP BY 1"
            )
        ).all()
    return sorted(((str(name), int(size)) for name, size in rows), key=lambda r: -r[1])[:8]


def _database_size(connection: Connection) -> int:
    if connection.dialect.name == "sqlite":
        pages = connection.exec_driver_sql("PRAGMA page_count").scalar() or 0
        size = connection.exec_driver_sql("PRAGMA page_size").scalar() or 0
        return int(pages) * int(size)
    return int(connection.scalar(text("SELECT pg_database_size(current_database())")) or 0)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--agents", type=int, default=18_000)
    parser.add_argument("--hot", type=int, default=280_000, help="events on the read agent")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--phases", default="reads,storage", help="reads, storage or both")
    parser.add_argument("--simulate-days", type=int, default=90)
    parser.add_argument(
        "--events-days", type=int, default=None, help="the events' window (default: the setting's)"
    )
    parser.add_argument(
        "--bodies-days",
        type=int,
        default=None,
        help="the task bodies' and receipts' window (default: the settings')",
    )
    args = parse_args(parser, QUICK, argv)
    failures: list[str] = []
    phases = args.phases.split(",")
    for store in args.stores.split(","):
        if "reads" in phases:
            await one_store(store, args, failures)
        if "storage" in phases:
            await storage(store, args, failures)
    for failure in failures:
        print(f"FAIL  {failure}")
    print("PASS  every read answered 200 and the roll-ups equal the raw rows" if not failures
          else "FAIL  see above")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
