"""Scale-out on this machine: health pings at 100,000 agents, shared by worker processes.

    .venv/bin/python bench/scale.py [--agents 100000] [--interval 60] [--seconds 75]
                                    [--ping-workers 2]

Everything runs on loopback against the machine's PostgreSQL (a database of
its own, dropped afterwards) and Redis (a stream and keys of its own, deleted
afterwards); agents are one separate process answering at once.

``--agents`` ACTIVE agents are pinged every ``--interval`` seconds (the
protocol's 5 minutes, compressed so that the run takes a couple of minutes:
100,000 agents every 60 s ask for 1,667 pings/s) by ``--ping-workers``
workers for ``--seconds``; the schedule lag (how late each ping started after
it was due) is read from the workers' metrics. Shrink with ``--agents 20000
--seconds 40`` on a busy machine.

Whole runs, tasks dispatched by one and by two worker processes, are
``bench/runs.py``'s (modes ``workers1`` and ``workers2``).

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
from sqlalchemy import insert

from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import Agent

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
    workers,
)

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


# Health pings at scale.


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
            await pings_bench(args, Path(folder), database, port)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--interval", type=float, default=60.0)
    parser.add_argument("--seconds", type=float, default=75.0)
    parser.add_argument("--ping-workers", type=int, default=2)
    asyncio.run(main(parser.parse_args()))
