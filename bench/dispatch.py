"""The dispatcher and the completion callback at load, on loopback, on the embedded store.

    .venv/bin/python bench/dispatch.py [--tasks 4000] [--concurrency 200] [--rounds 3]
                                        [--completions 3000] [--in-flight 10000] [--quick]

Three measurements, each printed with its target:

1. Dispatch throughput: tasks per second through the whole dispatcher (select
   an agent, store the task RUNNING, sign, POST, validate the envelope and the
   schema, record the outcome with the agent's status and history) against
   fast agents in a separate process, beside a bare aiohttp loop POSTing the
   same bodies at the same concurrency; rounds alternate which goes first,
   medians reported. Target: >= 0.5x the bare loop. Also printed: the share of
   the time the event loop's thread ran; the rest it waited, for the GIL (held
   by the store's writer thread) or for work (replies, slots being opened).
2. Completion endpoint (``bench/_completion.py``): requests per second of ``POST
   /api/agent-tasks/{taskId}/complete`` (parse, look up, verify, validate,
   record exactly once) served by ``palaestra serve`` in a separate process,
   beside a bare FastAPI handler (same uvicorn) that only verifies the
   signature. Target: >= 0.5x.
3. Memory: dispatches in flight against agents that hold every connection
   until the deadline; RSS growth of this process per in-flight task.
   Target: under 20 KB.

The store is a fresh SQLite file (the embedded default) in a temporary folder.
This process settles its interpreter after set-up (``palaestra.runtime``: the
long-lived heap frozen, a shorter GIL switch interval), as ``palaestra serve``
does after start, for both contenders alike. CPU per task is printed beside
the rates: on a shared machine it is the steadier figure.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from sqlalchemy import update

from palaestra import runtime
from palaestra.engine.runs.dispatch import Opened, SlotRequest, open_slots, payload_of
from palaestra.engine.runs.recorder import Recorder, Recording
from palaestra.engine.runs.work import send
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol import Phase
from palaestra.rules.runs.prompts import LAUNCHPADS, messages_for
from palaestra.settings import Settings
from palaestra.store.models import Agent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._completion import completion_endpoint
from bench._support import (
    ENVELOPE,
    HOST,
    SCOUTS_PER_RUN,
    Handler,
    agents_process,
    bench_settings,
    parse_args,
    scout_slots,
    seed_scouts,
)

# Agents, in their own process.


def agents(hold: bool = False) -> Handler:
    """Fast agents answering every dispatch at once; with ``hold``, agents that keep every
    connection until the client gives up. ``GET /_held`` tells how many they hold."""
    held = 0

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        nonlocal held
        if request.path == "/_held":
            return web.json_response({"held": held})
        await request.read()
        if hold:
            held += 1
            try:
                await asyncio.sleep(3600)
            finally:
                held -= 1
        return web.Response(body=ENVELOPE, content_type="application/json")

    return handle


# The platform, in this process.


def settings_for(data: Path) -> Settings:
    return bench_settings(data, runs_enabled=False)


async def pipeline(
    platform: Platform,
    requests: Sequence[SlotRequest],
    concurrency: int,
    *,
    batch: int = 200,
    record: bool = True,
) -> tuple[int, list[asyncio.Task[Any]]]:
    """Open slots in batches ahead of need, keep ``concurrency`` sends in flight, and record
    every outcome through the recorder's group commit, as the orchestrator does.

    Two batches are being opened at any time, as a busy producer keeps its pipeline
    full: under load a batch's trip to the store's writer thread and back takes longer
    than the store takes to open it, and one batch at a time left the senders waiting
    for slots a third of the time."""
    recorder = Recorder(platform)
    ready: asyncio.Queue[Opened | None] = asyncio.Queue(maxsize=2 * batch)
    jobs: list[asyncio.Task[Any]] = []
    recordings: list[tuple[bool, asyncio.Future[Recording]]] = []

    async def opener() -> None:
        opening: collections.deque[asyncio.Task[list[Opened]]] = collections.deque()
        for start in range(0, len(requests) + 2 * batch, batch):
            if start < len(requests):
                chunk = requests[start : start + batch]
                opening.append(
                    asyncio.create_task(
                        open_slots(platform, chunk, house_executor="house-baseline")
                    )
                )
            if len(opening) == 2 or (opening and start >= len(requests)):
                for item in await opening.popleft():
                    await ready.put(item)
        for _ in range(concurrency):
            await ready.put(None)

    async def sender() -> None:
        while (item := await ready.get()) is not None:
            end = await send(platform, item)
            if record and end is not None:
                recordings.append((end.status == "SUCCEEDED", recorder.submit(end)))

    feeding = asyncio.create_task(opener())
    jobs = [asyncio.create_task(sender()) for _ in range(concurrency)]
    if not record:
        await feeding
        return 0, jobs
    await asyncio.gather(feeding, *jobs)
    succeeded = 0
    for ok, verdict in recordings:
        succeeded += ok and await verdict is Recording.RECORDED
    return succeeded, jobs


async def dispatcher_rate(
    platform: Platform, tasks: int, concurrency: int, deadline_s: float
) -> tuple[float, float, float]:
    """Tasks per second, and CPU microseconds per task, through the whole dispatcher: all
    threads, and the event loop's thread alone (the store's threads are the rest)."""
    requests = await scout_slots(platform, tasks // SCOUTS_PER_RUN, deadline_s)
    started, cpu, loop_cpu = time.perf_counter(), time.process_time(), time.thread_time()
    succeeded, _ = await pipeline(platform, requests, concurrency)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    loop_cpu = time.thread_time() - loop_cpu
    assert succeeded == len(requests), (succeeded, len(requests))
    per_task = 1e6 / len(requests)
    return len(requests) / elapsed, cpu * per_task, loop_cpu * per_task


async def bare_rate(urls: Sequence[str], tasks: int, concurrency: int) -> tuple[float, float]:
    """Requests per second, and CPU microseconds per request, of a bare aiohttp loop."""
    launchpad = LAUNCHPADS["make-money"]
    goal = "Find a business a solo developer can start"
    bodies = []
    for n in range(tasks):
        request = SlotRequest(
            run_id=new_id(),
            phase=Phase.SCOUT,
            candidate_id=None,
            slot=n % SCOUTS_PER_RUN,
            attempt=0,
            goal=goal,
            launchpad_name=launchpad.title,
            messages=messages_for(Phase.SCOUT, launchpad, goal, slot=n % SCOUTS_PER_RUN),
            deadline_s=30,
        )
        bodies.append(orjson.dumps(payload_of(new_id(), request)))
    semaphore = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(n: int) -> None:
            async with (
                semaphore,
                session.post(urls[n % len(urls)], data=bodies[n], headers=headers) as response,
            ):
                data = orjson.loads(await response.read())
                assert response.status == 200
                assert isinstance(data, dict)

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(n) for n in range(tasks)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        return tasks / elapsed, cpu / tasks * 1e6


async def throughput(args: argparse.Namespace) -> None:
    with agents_process(agents(), fast=True) as port, tempfile.TemporaryDirectory() as data:
        urls = [f"http://{HOST}:{port}/agents/{n}" for n in range(50)]
        platform = await Platform.open(settings_for(Path(data)))
        try:
            await seed_scouts(platform, urls)
            await dispatcher_rate(platform, 500, args.concurrency, 30)  # warm-up
            await bare_rate(urls, 500, args.concurrency)
            serving_gc()
            rates: dict[str, list[float]] = {"dispatcher": [], "bare": []}
            cpus: dict[str, list[float]] = {"dispatcher": [], "bare": []}
            loop_busy: list[float] = []  # the share of the wall time the loop's thread ran
            for round_ in range(args.rounds):
                order = ["dispatcher", "bare"] if round_ % 2 == 0 else ["bare", "dispatcher"]
                for name in order:
                    if name == "dispatcher":
                        rate, cpu, loop_cpu = await dispatcher_rate(
                            platform, args.tasks, args.concurrency, 30
                        )
                        loop_busy.append(loop_cpu * rate / 1e6)
                    else:
                        rate, cpu = await bare_rate(urls, args.tasks, args.concurrency)
                    rates[name].append(rate)
                    cpus[name].append(cpu)
                print(
                    f"  round {round_ + 1}: dispatcher {rates['dispatcher'][-1]:,.0f} tasks/s "
                    f"({cpus['dispatcher'][-1]:.0f} us CPU each), bare aiohttp "
                    f"{rates['bare'][-1]:,.0f} req/s ({cpus['bare'][-1]:.0f} us CPU each)",
                    flush=True,
                )
        finally:
            await platform.close()
    dispatcher, bare = statistics.median(rates["dispatcher"]), statistics.median(rates["bare"])
    paired = statistics.median(
        d / b for d, b in zip(rates["dispatcher"], rates["bare"], strict=True)
    )
    print(
        f"dispatch ({args.tasks:,} tasks, concurrency {args.concurrency}, median of "
        f"{args.rounds}): dispatcher {dispatcher:,.0f} tasks/s (select + store + sign + send + "
        f"validate + record, SQLite), bare aiohttp {bare:,.0f} req/s; ratio "
        f"{dispatcher / bare:.2f}x of the medians, {paired:.2f}x median of rounds "
        f"(target >= 0.50x); CPU per task {statistics.median(cpus['dispatcher']):.0f} us vs "
        f"{statistics.median(cpus['bare']):.0f} us per bare request (this process, "
        f"store thread included); the event loop's thread ran "
        f"{statistics.median(loop_busy):.0%} of the time (otherwise it waited, for the GIL or "
        "for work)",
        flush=True,
    )


def serving_gc() -> None:
    """As ``palaestra serve`` does once started (``palaestra.runtime``), for both contenders."""
    runtime.settle()


# Memory.


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def memory(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.in_flight + 1000:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.in_flight + 2000), hard))
    with (
        agents_process(agents(hold=True), fast=True) as port,
        tempfile.TemporaryDirectory() as data,
    ):
        urls = [f"http://{HOST}:{port}/agents/{n}" for n in range(50)]
        platform = await Platform.open(settings_for(Path(data)))
        try:
            await seed_scouts(platform, urls)
            requests = await scout_slots(platform, args.in_flight // SCOUTS_PER_RUN, 120)
            warm = await scout_slots(platform, 20, 0.2)  # warm every code path once
            await pipeline(platform, warm, 100)
            async with platform.db.session() as db, db.begin():  # forgive the warm-up
                await db.execute(
                    update(Agent).values(
                        cooldown_until=None, consecutive_failures=0, status="ACTIVE"
                    )
                )
            serving_gc()
            before = rss_bytes()
            jobs = []
            for start in range(0, len(requests), 500):
                batch = requests[start : start + 500]
                for item in await open_slots(platform, batch, house_executor="house-baseline"):
                    jobs.append(asyncio.create_task(send(platform, item)))
            limit = time.monotonic() + 90
            async with aiohttp.ClientSession() as session:
                while True:
                    async with session.get(f"http://{HOST}:{port}/_held") as response:
                        held = (await response.json())["held"]
                    if held >= len(requests):
                        break
                    assert time.monotonic() < limit, f"only {held} dispatches reached the agents"
                    await asyncio.sleep(0.2)
            gc.collect()
            peak = rss_bytes()
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
        finally:
            await platform.close()
    growth = (peak - before) / len(requests)
    print(
        f"memory: {len(requests):,} dispatches in flight (held by the agents until the "
        f"deadline): RSS {before / 2**20:,.0f} MiB -> {peak / 2**20:,.0f} MiB, "
        f"{growth / 1024:.1f} KB per in-flight task (target < 20 KB)",
        flush=True,
    )


async def main(args: argparse.Namespace) -> None:
    if "dispatch" in args.only:
        await throughput(args)
    if "completion" in args.only:
        await completion_endpoint(args)
    if "memory" in args.only:
        await memory(args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--completions", type=int, default=3000)
    parser.add_argument("--in-flight", type=int, default=10_000)
    parser.add_argument(
        "--only", nargs="*", default=["dispatch", "completion", "memory"], help="parts to run"
    )
    quick = {"tasks": 200, "concurrency": 50, "rounds": 1, "completions": 100, "in_flight": 200}
    args = parse_args(parser, quick)
    try:
        import uvloop

        uvloop.run(main(args))
    except ImportError:  # pragma: no cover
        asyncio.run(main(args))
