"""What the bench scripts share: agents served from a process of their own, a free port, a
platform's settings, stored agents to dispatch to or ping and runs' SCOUT slots to send
them, and for scale-out a PostgreSQL database, a Redis queue and worker processes.

The scripts run as files (``python bench/dispatch.py``, as ``make bench`` runs them): each
puts the repository's root on ``sys.path`` before it imports this module as
``bench._support``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

import orjson
from aiohttp import web
from cryptography.fernet import Fernet
from pydantic import SecretStr
from redis.asyncio import Redis
from sqlalchemy import insert, make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.dispatch import SlotRequest
from palaestra.engine.runs.service import start_run
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena, Phase
from palaestra.rules.runs.prompts import LAUNCHPADS, messages_for
from palaestra.settings import Settings
from palaestra.store.models import Agent, Owner

__all__ = [
    "ENVELOPE",
    "HOST",
    "KEY",
    "POSTGRES",
    "REDIS",
    "SCOUTS_PER_RUN",
    "SCOUT_OUTPUT",
    "Handler",
    "add_owner",
    "agent_row",
    "agents_process",
    "bench_database",
    "bench_settings",
    "cpu_seconds",
    "environment",
    "forget_queue",
    "free_port",
    "parse_args",
    "scout_slots",
    "seed_scouts",
    "workers",
]

HOST: Final = "127.0.0.1"
Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
#: The key the bench's scouts sign with.
KEY: Final = "ea_bench-agent-key-0123456789"
SCOUTS_PER_RUN: Final = 5
#: A scout's valid output, and the reply of a scout that answers a dispatch at once.
SCOUT_OUTPUT: Final[dict[str, Any]] = {
    "candidate_title": "Timesheet-to-invoice autopilot for small agencies",
    "target_customer": "Design and marketing agencies with 5 to 20 people",
    "core_problem": "Turning timesheets into invoices takes hours of admin every month",
    "proposed_solution": "A tool that reads timesheets and drafts ready-to-send invoices",
    "why_now": "Accounting and time-tracking APIs are stable and well documented",
    "claims": [{"type": "market", "text": "Agencies bill by the hour"}],
    "evidence": [{"kind": "observation", "summary": "Owners say invoicing takes a day"}],
}
ENVELOPE: Final = orjson.dumps(
    {"output": SCOUT_OUTPUT, "promptTokens": 812, "completionTokens": 164, "modelId": "m"}
)
POSTGRES: Final = os.environ.get(
    "PALAESTRA_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1/test"
)
REDIS: Final = os.environ.get("PALAESTRA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def parse_args(
    parser: argparse.ArgumentParser, quick: Mapping[str, Any], argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """``parser``'s arguments, with ``--quick``: the benchmark at the small size ``quick``
    gives (its options' values; an option given on the command line still wins).

    A quick run takes seconds and goes through every code path of the benchmark once, so
    that the test tiers can run it as a smoke test: its figures mean nothing, its
    correctness checks are as strict as in a full run (its exit status says them).
    """
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the smallest size that takes every path once: whether it works, not how fast",
    )
    unknown = sorted(set(quick) - {action.dest for action in parser._actions})
    if unknown:  # a quick size that names no option would silently leave the full one
        raise ValueError(f"quick sizes name no option: {unknown}")
    if parser.parse_known_args(argv)[0].quick:
        parser.set_defaults(**quick)
    return parser.parse_args(argv)


def _serve(conn: Connection, handle: Handler, fast: bool) -> None:
    async def main() -> None:
        server = web.Server(handle, handler_cancellation=True)
        runner = web.ServerRunner(server, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, HOST, 0, backlog=4096)
        await site.start()
        conn.send(runner.addresses[0][1])
        await asyncio.Event().wait()

    if fast:
        try:
            import uvloop

            uvloop.run(main())
            return
        except ImportError:  # pragma: no cover
            pass
    asyncio.run(main())


@contextlib.contextmanager
def agents_process(handle: Handler, *, fast: bool = False, spawn: bool = False) -> Iterator[int]:
    """Serve ``handle`` on loopback from a process of its own, so that the agents share neither
    this process's event loop nor, on a machine with cores to spare, its core; yield the port.

    ``fast``: on uvloop where it is installed. ``spawn``: a fresh interpreter rather than a
    fork of this one (``handle`` must then be a module-level function).
    """
    context = multiprocessing.get_context("spawn" if spawn else None)
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(child, handle, fast), daemon=True)
    process.start()
    try:
        if not parent.poll(30):
            raise RuntimeError("the bench's agents did not start")
        yield parent.recv()
    finally:
        process.terminate()
        process.join(5)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process, from /proc (no psutil needed)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def bench_settings(data: Path, **given: Any) -> Settings:
    """A platform on a fresh store in ``data``: a new secret key, agents on loopback allowed,
    no health monitor unless ``given`` asks for one."""
    return Settings(
        _env_file=None,
        data_dir=data,
        secret_key=SecretStr(Fernet.generate_key().decode()),
        egress_allow=["127.0.0.0/8"],
        **{"monitor_enabled": False, **given},
    )


async def add_owner(platform: Platform, now: float) -> str:
    """The owner of the bench's agents."""
    owner = new_id()
    async with platform.db.session() as session, session.begin():
        session.add(Owner(id=owner, name="bench", token_hash=new_id(), created_at=now))
    return owner


def agent_row(owner: str, name: str, now: float, **columns: Any) -> dict[str, Any]:
    """An ACTIVE agent's row, for a bulk INSERT: an edgearena SCOUT unless ``columns``, which
    add to the row or replace its values, say otherwise."""
    return {
        "id": new_id(),
        "owner_id": owner,
        "name": name,
        "arena": Arena.EDGEARENA.value,
        "role": "SCOUT",
        "sandbox_attested": False,
        "status": "ACTIVE",
        "consecutive_failures": 0,
        "hold": False,
        "reputation": 0.0,
        "created_at": now,
        "updated_at": now,
        **columns,
    }


async def seed_scouts(platform: Platform, urls: Sequence[str]) -> list[str]:
    """An ACTIVE scout at each of ``urls``, signing with :data:`KEY`; their ids."""
    now = time.time()
    owner = await add_owner(platform, now)
    sealed = platform.vault.seal(KEY)
    rows = [
        agent_row(owner, f"scout-{n}", now, endpoint_url=url, key_sealed=sealed)
        for n, url in enumerate(urls)
    ]
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(Agent), rows)
    return [str(row["id"]) for row in rows]


async def scout_slots(platform: Platform, runs: int, deadline_s: float) -> list[SlotRequest]:
    """The SCOUT slots of ``runs`` new runs, ready to be opened."""
    launchpad = LAUNCHPADS["make-money"]
    admin = Caller(None, is_admin=True)
    requests = []
    for _ in range(runs):
        run = await start_run(platform, admin, "Find a business a solo developer can start")
        for slot in range(SCOUTS_PER_RUN):
            requests.append(
                SlotRequest(
                    run_id=run.id,
                    phase=Phase.SCOUT,
                    candidate_id=None,
                    slot=slot,
                    attempt=0,
                    goal=run.goal,
                    launchpad_name=launchpad.title,
                    messages=messages_for(Phase.SCOUT, launchpad, run.goal, slot=slot),
                    deadline_s=deadline_s,
                    seed=run.id,
                )
            )
    return requests


# Scale-out: the machine's PostgreSQL and Redis, and worker processes.


@contextlib.asynccontextmanager
async def bench_database(server: str = POSTGRES) -> AsyncIterator[str]:
    """The URL of a PostgreSQL database of the bench's own on ``server``, dropped afterwards."""
    base = make_url(server)
    name = f"palaestra_bench_{os.getpid()}"
    admin = create_async_engine(base, isolation_level="AUTOCOMMIT")
    async with admin.connect() as connection:
        await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        async with admin.connect() as connection:
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


async def forget_queue(queue: str) -> None:
    """Delete the Redis keys of ``queue``."""
    redis = Redis.from_url(REDIS)
    keys = [key async for key in redis.scan_iter(match=f"{queue}*")]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()


def environment(settings: Settings) -> dict[str, str]:
    """The settings as a worker (or ``serve``) process reads them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        elif isinstance(value, list):
            value = ",".join(value)
        env[f"PALAESTRA_{name.upper()}"] = str(value)
    env["PALAESTRA_LOG_LEVEL"] = "WARNING"
    return env


@contextlib.contextmanager
def workers(
    settings: Settings, count: int, concurrency: int, metrics_ports: list[int] | None = None
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` ``palaestra worker`` processes on ``settings``, stopped afterwards."""
    env = environment(settings)
    started = []
    try:
        for n in range(count):
            args = [sys.executable, "-m", "palaestra", "worker", "--concurrency", str(concurrency)]
            if metrics_ports:
                args += ["--metrics-port", str(metrics_ports[n])]
            started.append(
                subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            )
        for process in started:  # wait until each says it runs
            assert process.stderr is not None
            line = process.stderr.readline().decode()
            assert "worker running" in line, line
        yield started
    finally:
        for process in started:
            process.send_signal(signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
