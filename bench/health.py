"""The health monitor at scale: sustained pings per second and schedule lag, on loopback.

    .venv/bin/python bench/health.py [--agents 5000] [--seconds 20] [--servers 2] [--rounds 3]
                                      [--quick]

Agents live in a fresh SQLite store (the embedded default), each on its own
path of one of a few endpoint processes. Two measurements:

1. Throughput: every agent is due at once; the monitor drains them
   (claim, ping, record) beside a bare aiohttp loop sending the same GETs at
   the same concurrency, alternating which goes first; medians of the rounds.
2. Schedule: the ACTIVE cadence is compressed so that the agents ask for
   ``agents / interval`` pings per second (1,000/s by default: 5,000 agents
   pinged every 5 s); the monitor runs its normal loop for ``--seconds`` and
   the lag between when each ping was due and when it started is reported.

At 1,000 pings/s with p99 lag under 1 s, one process covers 300,000 agents at
the protocol's 5-minute cadence.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web
from sqlalchemy import insert, select, update

from palaestra.engine.agents.health import HealthMonitor
from palaestra.platform import Platform
from palaestra.store.models import Agent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import (
    HOST,
    add_owner,
    agent_row,
    agents_process,
    bench_settings,
    parse_args,
)

ACTIVE_INTERVAL_S = 300.0


async def healthy(request: web.BaseRequest) -> web.StreamResponse:
    return web.Response(body=b'{"ok":true}', content_type="application/json")


async def open_platform(data: Path, interval_s: float, concurrency: int) -> Platform:
    settings = bench_settings(
        data,
        health_interval_scale=interval_s / ACTIVE_INTERVAL_S,
        health_concurrency=concurrency,
    )
    return await Platform.open(settings)


async def seed_agents(platform: Platform, urls: list[str], first_due: list[float]) -> None:
    now = time.time()
    owner = await add_owner(platform, now)
    rows = [
        agent_row(owner, f"agent-{i}", now, endpoint_url=url, next_ping_at=due)
        for i, (url, due) in enumerate(zip(urls, first_due, strict=True))
    ]
    async with platform.db.session() as session, session.begin():
        for start in range(0, len(rows), 1000):
            await session.execute(insert(Agent), rows[start : start + 1000])


async def make_all_due(platform: Platform) -> None:
    async with platform.db.session() as session, session.begin():
        await session.execute(update(Agent).values(next_ping_at=0.0))


async def monitor_drain(platform: Platform, expected: int) -> float:
    await make_all_due(platform)
    monitor = HealthMonitor(platform)
    started = time.perf_counter()
    pinged = await monitor.run_once()
    elapsed = time.perf_counter() - started
    assert pinged == expected, (pinged, expected)
    return pinged / elapsed


async def bare_loop(urls: list[str], concurrency: int) -> float:
    semaphore = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(url: str) -> None:
            async with semaphore, session.get(url) as response:
                await response.read()
                assert response.status == 200

        started = time.perf_counter()
        await asyncio.gather(*(one(url) for url in urls))
        return len(urls) / (time.perf_counter() - started)


async def sustained(platform: Platform, agents: int, interval_s: float, seconds: float) -> None:
    monitor = HealthMonitor(platform, record_lags=True)
    now = time.time()
    # Spread the first pings over one interval, as a running arena's would be.
    async with platform.db.session() as session, session.begin():
        rng = random.Random(7)
        ids = (await session.scalars(select(Agent.id))).all()
        for agent_id in ids:
            await session.execute(
                update(Agent)
                .where(Agent.id == agent_id)
                .values(next_ping_at=now + 1 + rng.random() * interval_s)
            )
    stop = asyncio.Event()
    task = asyncio.create_task(monitor.run(stop))
    await asyncio.sleep(1 + interval_s)  # warm-up: one full period
    monitor.lags.clear()
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    measured = list(monitor.lags)
    elapsed = time.perf_counter() - started
    stop.set()
    await task
    lags = sorted(measured)
    p50 = lags[len(lags) // 2] if lags else float("nan")
    p99 = lags[int(len(lags) * 0.99)] if lags else float("nan")
    print(
        f"sustained: demand {agents / interval_s:,.0f} pings/s, "
        f"achieved {len(measured) / elapsed:,.0f} pings/s over {elapsed:.0f} s; "
        f"schedule lag p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
        f"(target: >= 1,000 pings/s, p99 < 1 s)"
    )


async def main(args: argparse.Namespace) -> None:
    with contextlib.ExitStack() as servers:
        ports = [servers.enter_context(agents_process(healthy)) for _ in range(args.servers)]
        urls = [f"http://{HOST}:{ports[i % len(ports)]}/agents/{i}" for i in range(args.agents)]
        with tempfile.TemporaryDirectory() as data:
            platform = await open_platform(Path(data), args.interval, args.concurrency)
            try:
                await seed_agents(platform, urls, [float("inf")] * len(urls))
                monitor_rates, bare_rates = [], []
                for round_ in range(args.rounds):
                    first, second = (
                        (monitor_drain, bare_loop)
                        if round_ % 2 == 0
                        else (
                            bare_loop,
                            monitor_drain,
                        )
                    )
                    for runner in (first, second):
                        if runner is monitor_drain:
                            monitor_rates.append(await monitor_drain(platform, len(urls)))
                        else:
                            bare_rates.append(await bare_loop(urls, args.concurrency))
                monitor_rate = statistics.median(monitor_rates)
                bare_rate = statistics.median(bare_rates)
                print(
                    f"throughput ({args.agents:,} agents, concurrency {args.concurrency}, "
                    f"median of {args.rounds}): monitor {monitor_rate:,.0f} pings/s "
                    f"(claim + ping + record in SQLite), bare aiohttp {bare_rate:,.0f} GET/s, "
                    f"ratio {monitor_rate / bare_rate:.2f}x"
                )
                await sustained(platform, args.agents, args.interval, args.seconds)
            finally:
                await platform.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=5000)
    parser.add_argument("--interval", type=float, default=5.0, help="compressed ACTIVE cadence, s")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    quick = {"agents": 200, "interval": 1.0, "seconds": 2.0, "servers": 1, "rounds": 1}
    asyncio.run(main(parse_args(parser, quick)))
