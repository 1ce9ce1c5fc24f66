"""Part 2 of ``bench/dispatch.py``: the completion endpoint at load.

Requests per second of ``POST /api/agent-tasks/{taskId}/complete`` (parse, look
up, verify, validate, record exactly once) served by ``palaestra serve`` in a
separate process, beside a bare FastAPI handler (same uvicorn) that only
verifies the signature. Target: >= 0.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import aiohttp
import orjson

from bench._support import (
    HOST,
    KEY,
    SCOUT_OUTPUT,
    SCOUTS_PER_RUN,
    bench_settings,
    free_port,
    scout_slots,
    seed_scouts,
)
from palaestra.clock import FrozenClock
from palaestra.engine.runs.dispatch import open_slots
from palaestra.platform import Platform
from palaestra.protocol import hmac_signer

__all__ = ["completion_endpoint"]

BARE_APP = """
import os
from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse
from palaestra.protocol import VerificationFailed, signature_target, verify
from palaestra.clock import SystemClock

KEY, PUBLIC = os.environ["BENCH_KEY"], os.environ["BENCH_PUBLIC"]
clock = SystemClock()
app = FastAPI()


@app.post("/api/agent-tasks/{task_id}/complete")
async def complete(
    task_id: str,
    request: Request,
    x_edgearena_signature: str | None = Header(None),
    x_edgearena_timestamp: str | None = Header(None),
):
    raw = await request.body()
    target = signature_target(f"{PUBLIC}/api/agent-tasks/{task_id}/complete")
    try:
        verify(KEY, target, raw, x_edgearena_signature, x_edgearena_timestamp, clock.now())
    except VerificationFailed as exc:
        return JSONResponse({"error": exc.message}, status_code=401)
    return {"accepted": True}
"""


@contextlib.contextmanager
def server(command: list[str], port: int, env: dict[str, str]) -> Iterator[None]:
    process = subprocess.Popen(
        command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex((HOST, port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                error = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"server did not start: {error[-2000:]}")
            time.sleep(0.05)
        yield
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


async def running_tasks(platform: Platform, count: int) -> list[str]:
    """``count`` tasks RUNNING against external agents, as if each had answered 202."""
    urls = [f"http://{HOST}:9/agents/{n}" for n in range(10)]
    await seed_scouts(platform, urls)
    requests = await scout_slots(platform, count // SCOUTS_PER_RUN + 1, 3600)
    ids = []
    for start in range(0, len(requests), 500):
        opened = await open_slots(platform, requests[start : start + 500], house_executor="h")
        ids += [item.task_id for item in opened]
    return ids[:count]


def signed_completions(
    task_ids: Sequence[str], public: str
) -> list[tuple[str, bytes, dict[str, str]]]:
    clock = FrozenClock(int(time.time()))  # one second for all: signed once, posted at once
    out = []
    for task_id in task_ids:
        raw = orjson.dumps(
            {
                "taskId": task_id,
                "output": SCOUT_OUTPUT,
                "promptTokens": 812,
                "completionTokens": 164,
                "modelId": "m",
            }
        )
        url = f"{public}/api/agent-tasks/{task_id}/complete"
        headers = {"Content-Type": "application/json", **hmac_signer(KEY, clock)(url, raw)}
        out.append((task_id, raw, headers))
    return out


async def post_all(
    base: str, completions: Sequence[tuple[str, bytes, dict[str, str]]], concurrency: int
) -> float:
    semaphore = asyncio.Semaphore(concurrency)
    statuses: list[int] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(task_id: str, raw: bytes, headers: dict[str, str]) -> None:
            url = f"{base}/api/agent-tasks/{task_id}/complete"
            async with semaphore, session.post(url, data=raw, headers=headers) as response:
                await response.read()
                statuses.append(response.status)

        started = time.perf_counter()
        await asyncio.gather(*(one(*c) for c in completions))
        elapsed = time.perf_counter() - started
    assert statuses.count(200) == len(completions), {s: statuses.count(s) for s in set(statuses)}
    return len(completions) / elapsed


async def completion_endpoint(args: argparse.Namespace) -> None:
    per_round = args.completions
    with tempfile.TemporaryDirectory() as data:
        settings = bench_settings(Path(data), runs_enabled=False)
        key = settings.ensure_secret_key()
        platform = await Platform.open(settings)
        try:
            ids = await running_tasks(platform, per_round * (args.rounds + 1))
        finally:
            await platform.close()
        palaestra_port, bare_port = free_port(), free_port()
        public = f"http://{HOST}:{palaestra_port}"
        env = {
            "PALAESTRA_DATA_DIR": data,
            "PALAESTRA_SECRET_KEY": key,
            "PALAESTRA_PUBLIC_URL": public,
            "PALAESTRA_MONITOR_ENABLED": "false",
            "PALAESTRA_RUNS_ENABLED": "false",
            "PALAESTRA_REFEREE_ENABLED": "false",  # nothing else busy in the server
            "PALAESTRA_RATINGS_ENABLED": "false",
            "PALAESTRA_MATCHMAKING_ENABLED": "false",
            "PALAESTRA_ADMIN_TOKEN": "bench-admin",
            "PALAESTRA_LOG_LEVEL": "WARNING",
        }
        (Path(data) / "bare_app.py").write_text(BARE_APP)
        bare = [sys.executable, "-m", "uvicorn", "--app-dir", data, "--log-level", "warning"]
        bare += ["--host", HOST, "--port", str(bare_port), "bare_app:app"]
        ours = [sys.executable, "-m", "palaestra", "serve", "--port", str(palaestra_port)]
        rates: dict[str, list[float]] = {"palaestra": [], "bare": []}
        chunks = [ids[n * per_round : (n + 1) * per_round] for n in range(args.rounds + 1)]
        bare_env = {"BENCH_KEY": KEY, "BENCH_PUBLIC": public}
        with server(ours, palaestra_port, env), server(bare, bare_port, bare_env):
            warm = signed_completions(chunks[0][:200], public)
            await post_all(public, warm, args.concurrency)
            await post_all(f"http://{HOST}:{bare_port}", warm, args.concurrency)
            for round_ in range(args.rounds):
                batch = signed_completions(chunks[round_ + 1], public)
                order = ["palaestra", "bare"] if round_ % 2 == 0 else ["bare", "palaestra"]
                for name in order:
                    base = public if name == "palaestra" else f"http://{HOST}:{bare_port}"
                    rates[name].append(await post_all(base, batch, args.concurrency))
                print(
                    f"  round {round_ + 1}: completion endpoint {rates['palaestra'][-1]:,.0f} "
                    f"req/s, bare FastAPI verify-only {rates['bare'][-1]:,.0f} req/s",
                    flush=True,
                )
    endpoint, verify_only = statistics.median(rates["palaestra"]), statistics.median(rates["bare"])
    paired = statistics.median(
        p / b for p, b in zip(rates["palaestra"], rates["bare"], strict=True)
    )
    print(
        f"completion ({per_round:,} per round, concurrency {args.concurrency}, median of "
        f"{args.rounds}): endpoint {endpoint:,.0f} req/s (parse + look up + verify + validate + "
        f"record once, SQLite), bare FastAPI verify-only {verify_only:,.0f} req/s; ratio "
        f"{endpoint / verify_only:.2f}x of the medians, {paired:.2f}x median of rounds "
        "(target >= 0.50x)",
        flush=True,
    )
