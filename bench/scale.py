"""Scale-out on this machine: dispatch throughput by worker count, and health pings at 100,000.

    .venv/bin/python bench/scale.py [--tasks 3000] [--workers 1,2,4] [--concurrency 64]
                                    [--agents 100000] [--interval 60] [--seconds 75]
                                    [--ping-workers 2] [--skip-dispatch] [--skip-pings]

Everything runs on loopback against the machine's PostgreSQL (a database of
its own, dropped afterwards) and Redis (a stream and keys of its own, deleted
afterwards); agents are one separate process answering at once.

1. Dispatch: ``--tasks`` edgearena tasks are stored RUNNING (the run step's
   *open*), then sent and recorded: by the embedded path in this process
   (``send`` and the recorder, ``--concurrency`` at once, as ``palaestra
   serve`` does), and by 1, 2 and 4 ``palaestra worker`` processes, each
   running ``--concurrency`` jobs: a ``dispatch`` job per task (claim the
   send, sign, POST, record, kick the run's step) through Redis.
2. Health pings: ``--agents`` ACTIVE agents pinged every ``--interval``
   seconds (the protocol's 5 minutes, compressed so that the run takes a
   couple of minutes: 100,000 agents every 60 s ask for 1,667 pings/s) by
   ``--ping-workers`` workers for ``--seconds``; the schedule lag (how late
   each ping started after it was due) is read from the workers' metrics.
   Shrink with ``--agents 20000 --seconds 40`` on a busy machine.

On a 2-core machine every process (workers, PostgreSQL, Redis, the agents,
this script) shares the same two cores, so the gain of more workers flattens
at the core count: past two workers they only take turns on the same CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from sqlalchemy import func, insert, select, update

from palaestra.engine.runs.dispatch import Opened, SlotRequest, open_slots
from palaestra.engine.runs.recorder import Recorder
from palaestra.engine.runs.work import send
from palaestra.ids import new_id
from palaestra.jobs.broker import make_broker
from palaestra.jobs.tasks import Jobs
from palaestra.platform import Platform
from palaestra.protocol import Phase
from palaestra.settings import Settings
from palaestra.store.models import Agent, Run, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import (
    ENVELOPE,
    HOST,
    REDIS,
    add_owner,
    agent_row,
    agents_process,
    bench_database,
    bench_settings,
    forget_queue,
    free_port,
    seed_scouts,
    workers,
)

SCOUTS = 200  # scout agents for the dispatch runs (5 distinct ones per run)
PER_RUN = 5
# Agents, in their own process.


async def answer(request: web.BaseRequest) -> web.StreamResponse:
    """Fast agents: a health ping's reply to a GET, a scout's output to a dispatch."""
    if request.method == "GET":
        return web.Response(body=b'{"ok":true}', content_type="application/json")
    await request.read()
    return web.Response(body=ENVELOPE, content_type="application/json")


# The store and the broker of this bench.


def settings_for(data: Path, database: str, queue: str, **extra: Any) -> Settings:
    given: dict[str, Any] = {
        "ratings_enabled": False,
        "matchmaking_enabled": False,
        "sweep_interval_s": 3600,
        **extra,
    }
    return bench_settings(
        data, database_url=database, broker_url=REDIS, broker_queue=queue, **given
    )


# 1. Dispatch throughput.


async def open_tasks(platform: Platform, count: int) -> list[Opened]:
    """``count`` SCOUT tasks stored RUNNING on runs of their own (marked finished, so that the
    run step each dispatch kicks has nothing to do and only the dispatch is measured)."""
    now = time.time()
    runs = [new_id() for _ in range(count // PER_RUN)]
    async with platform.db.session() as session, session.begin():
        await session.execute(
            insert(Run),
            [
                {
                    "id": run_id,
                    "owner_id": None,
                    "goal": "Find a business",
                    "launchpad": "make-money",
                    "status": "RUNNING",
                    "phase": "SCOUT",
                    "config": {},
                    "created_at": now,
                    "updated_at": now,
                }
                for run_id in runs
            ],
        )
    requests = [
        SlotRequest(
            run_id=run_id,
            phase=Phase.SCOUT,
            candidate_id=None,
            slot=slot,
            attempt=0,
            goal="Find a business",
            launchpad_name="Make Money",
            messages=[{"role": "user", "content": "Find a business"}],
            deadline_s=30.0,
            seed=run_id,
        )
        for run_id in runs
        for slot in range(PER_RUN)
    ]
    opened = []
    for start in range(0, len(requests), 500):
        opened += await open_slots(platform, requests[start : start + 500], house_executor="h")
    async with platform.db.session() as session, session.begin():
        await session.execute(update(Run).where(Run.id.in_(runs)).values(status="COMPLETED"))
    # Cooldowns and statuses are left as the previous round left them: every agent stays fast.
    return opened


async def embedded_rate(platform: Platform, count: int, concurrency: int) -> float:
    opened = await open_tasks(platform, count)
    recorder = Recorder(platform)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item: Opened) -> None:
        async with semaphore:
            end = await send(platform, item)
            assert end is not None
            await recorder.finish(end)

    started = time.perf_counter()
    await asyncio.gather(*(one(item) for item in opened))
    elapsed = time.perf_counter() - started
    await recorder.close()
    return len(opened) / elapsed


async def running_count(platform: Platform) -> int:
    """Tasks still RUNNING (earlier rounds have all ended: these are this round's)."""
    async with platform.db.session() as session:
        query = select(func.count()).select_from(Task).where(Task.status == "RUNNING")
        return int(await session.scalar(query) or 0)


async def workers_rate(
    platform: Platform, settings: Settings, count: int, processes: int, concurrency: int
) -> float:
    opened = await open_tasks(platform, count)
    ids = [item.task_id for item in opened]
    broker = make_broker(settings)
    jobs = Jobs(broker, platform)
    await broker.startup()
    try:
        with workers(settings, processes, concurrency):
            started = time.perf_counter()
            for start in range(0, len(ids), 200):
                await asyncio.gather(*(jobs.dispatch.kiq(i) for i in ids[start : start + 200]))
            while await running_count(platform):  # noqa: ASYNC110 (polling the store)
                await asyncio.sleep(0.1)
            elapsed = time.perf_counter() - started
    finally:
        await broker.shutdown()
    return len(ids) / elapsed


async def dispatch_bench(args: argparse.Namespace, data: Path, database: str, port: int) -> None:
    queue = f"palaestra-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    settings = settings_for(data, database, queue)
    platform = await Platform.open(settings)
    try:
        await seed_scouts(platform, [f"http://{HOST}:{port}/scout-{n}" for n in range(SCOUTS)])
        await embedded_rate(platform, min(500, args.tasks), args.concurrency)  # warm up
        rows = [
            (
                "embedded (in-process, 1 process)",
                await embedded_rate(platform, args.tasks, args.concurrency),
            )
        ]
        for count in args.workers:
            rate = await workers_rate(platform, settings, args.tasks, count, args.concurrency)
            rows.append((f"{count} worker process{'es' if count > 1 else ''} (Redis)", rate))
    finally:
        await platform.close()
        await forget_queue(queue)
    print(
        f"\nDispatch throughput: {args.tasks} tasks, {args.concurrency} at once per process, "
        f"PostgreSQL, {os.cpu_count()} cores"
    )
    print(f"  {'mode':<36} {'tasks/s':>8}")
    for label, rate in rows:
        print(f"  {label:<36} {rate:>8.0f}")


# 2. Health pings at scale.


async def seed_pinged(platform: Platform, port: int, agents: int, interval: float) -> None:
    now = time.time()
    owner = await add_owner(platform, now)
    rng = random.Random(1)
    for start in range(0, agents, 5000):
        rows = [
            agent_row(
                owner,
                f"pinged-{n}",
                now,
                endpoint_url=f"http://{HOST}:{port}/a{n}",
                next_ping_at=now + 5 + rng.uniform(0, interval),  # spread over one period
            )
            for n in range(start, min(agents, start + 5000))
        ]
        async with platform.db.session() as session, session.begin():
            await session.execute(insert(Agent), rows)


_BUCKET = re.compile(r'palaestra_health_ping_lag_seconds_bucket\{le="([^"]+)"\} (\S+)')


async def lag_buckets(ports: list[int]) -> tuple[dict[float, float], float]:
    buckets: dict[float, float] = {}
    pings = 0.0
    async with aiohttp.ClientSession() as session:
        for port in ports:
            async with session.get(f"http://{HOST}:{port}/metrics") as response:
                body = await response.text()
            for le, value in _BUCKET.findall(body):
                bound = float("inf") if le == "+Inf" else float(le)
                buckets[bound] = buckets.get(bound, 0.0) + float(value)
            for line in body.splitlines():
                if line.startswith("palaestra_health_pings_total{"):
                    pings += float(line.split()[-1])
    return buckets, pings


def quantile(buckets: dict[float, float], q: float) -> str:
    total = buckets.get(float("inf"), 0.0)
    if not total:
        return "n/a"
    for bound in sorted(buckets):
        if buckets[bound] >= q * total:
            return "> 10 s" if bound == float("inf") else f"<= {bound:g} s"
    return "n/a"


async def pings_bench(args: argparse.Namespace, data: Path, database: str, port: int) -> None:
    queue = f"palaestra-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    settings = settings_for(
        data,
        database,
        queue,
        monitor_enabled=True,
        health_interval_scale=args.interval / 300,
        schedule_tick_s=0.5,
    )
    platform = await Platform.open(settings)
    try:
        await seed_pinged(platform, port, args.agents, args.interval)
        ports = [free_port() for _ in range(args.ping_workers)]
        with workers(settings, args.ping_workers, args.concurrency * 4, ports):
            await asyncio.sleep(args.seconds)
            buckets, pings = await lag_buckets(ports)
    finally:
        await platform.close()
        await forget_queue(queue)
    asked = args.agents / args.interval
    print(
        f"\nHealth pings: {args.agents:,} agents every {args.interval:g} s "
        f"({asked:,.0f} pings/s asked), {args.ping_workers} workers, {args.seconds:g} s"
    )
    print(
        f"  pings done          {pings:,.0f} ({pings / args.seconds:,.0f}/s, first due after 5 s)"
    )
    print(f"  schedule lag p50    {quantile(buckets, 0.50)}")
    print(f"  schedule lag p99    {quantile(buckets, 0.99)}")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder, agents_process(answer, fast=True) as port:
        async with bench_database() as database:
            if not args.skip_dispatch:
                await dispatch_bench(args, Path(folder), database, port)
        if not args.skip_pings:
            async with bench_database() as database:
                await pings_bench(args, Path(folder), database, port)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument(
        "--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4]
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--interval", type=float, default=60.0)
    parser.add_argument("--seconds", type=float, default=75.0)
    parser.add_argument("--ping-workers", type=int, default=2)
    parser.add_argument("--skip-dispatch", action="store_true")
    parser.add_argument("--skip-pings", action="store_true")
    asyncio.run(main(parser.parse_args()))
