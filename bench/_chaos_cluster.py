"""The chaos soak's platform: a Redis of its own, `serve --no-workers`, two workers, and the
faults the soak injects into them (SIGKILL and restart, a Redis restart, PostgreSQL
connections dropped), with every process's RSS sampled over time.

Everything listens on 127.0.0.1. The Redis server is the soak's own, on a free port with its
data in a temporary folder, so restarting it disturbs no one else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bench._support import HOST, free_port

__all__ = ["ADMIN", "Cluster", "Rss", "cluster", "redis_server"]

ADMIN: Final = "pa_admin_" + secrets.token_hex(24)
_UP_WITHIN_S: Final = 60.0


def rss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass
class Rss:
    """RSS samples of named processes: (seconds since start, name, KiB)."""

    started: float = field(default_factory=time.monotonic)
    samples: list[tuple[float, str, int]] = field(default_factory=list)

    def sample(self, pids: dict[str, int]) -> None:
        now = time.monotonic() - self.started
        for name, pid in pids.items():
            kb = rss_kb(pid)
            if kb is not None:
                self.samples.append((now, name, kb))

    def peaks(self) -> dict[str, int]:
        peaks: dict[str, int] = {}
        for _, name, kb in self.samples:
            peaks[name] = max(peaks.get(name, 0), kb)
        return peaks


@dataclass
class RedisServer:
    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", HOST, "--save", ""]
        args += ["--appendonly", "yes", "--dir", str(self.folder), "--protected-mode", "yes"]
        log = (self.folder / "redis.log").open("ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=log)
        _wait_for_port(self.port, self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)

    def restart(self, down_s: float) -> None:
        """Stop (SIGTERM: its append-only file is kept), stay down ``down_s``, start again."""
        self.stop()
        time.sleep(down_s)
        self.start()


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + _UP_WITHIN_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"process on port {port} exited {process.returncode}"
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Cluster:
    """The API process and the workers, started, killed and restarted by name."""

    env: dict[str, str]
    logs: Path
    port: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    #: Every process that ever ran, for the RSS samples and the logs.
    history: list[tuple[str, int]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, name: str) -> None:
        args = ["worker"] if name.startswith("worker") else ["serve", "--no-workers"]
        if not name.startswith("worker"):
            args += ["--port", str(self.port)]
        self.starts[name] = self.starts.get(name, 0) + 1
        log = (self.logs / f"{name}.{self.starts[name]}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "palaestra", *args], env=self.env, stdout=log, stderr=log
        )
        self.processes[name] = process
        self.history.append((f"{name}#{self.starts[name]}", process.pid))

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` and wait for it to be gone."""
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def pids(self) -> dict[str, int]:
        return {
            name: process.pid for name, process in self.processes.items() if process.poll() is None
        }

    def dead(self) -> list[str]:
        """Processes that exited though nobody killed them."""
        return [name for name, process in self.processes.items() if process.poll() is not None]

    async def wait_up(self, session: aiohttp.ClientSession) -> float:
        """Until the API answers /healthz; the seconds it took."""
        began = time.monotonic()
        while True:
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                async with session.get(self.base + "/healthz") as response:
                    if response.status == 200:
                        return time.monotonic() - began
            server = self.processes["serve"]
            if server.poll() is not None:
                raise RuntimeError(f"serve exited {server.returncode}\n{self.tail('serve')}")
            if time.monotonic() - began > _UP_WITHIN_S:
                raise RuntimeError("serve did not come up\n" + self.tail("serve"))
            await asyncio.sleep(0.1)

    def tail(self, name: str) -> str:
        path = self.logs / f"{name}.{self.starts.get(name, 1)}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def environment(database_url: str, redis_url: str, data: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    env.update(
        {
            "PALAESTRA_DATA_DIR": str(data),
            "PALAESTRA_DATABASE_URL": database_url,
            "PALAESTRA_BROKER_URL": redis_url,
            "PALAESTRA_BROKER_QUEUE": "palaestra-chaos",
            "PALAESTRA_ADMIN_TOKEN": ADMIN,
            "PALAESTRA_SECRET_KEY": Fernet.generate_key().decode(),
            "PALAESTRA_EGRESS_ALLOW": "127.0.0.0/8",
            "PALAESTRA_LOCAL_MODEL_ENABLED": "false",
            "PALAESTRA_LOG_LEVEL": "INFO",
            **{f"PALAESTRA_{k.upper()}": v for k, v in settings.items()},
        }
    )
    return env


@contextlib.asynccontextmanager
async def cluster(env: dict[str, str], logs: Path, workers: int) -> AsyncIterator[Cluster]:
    """Serve, then (once it answers) the workers; everything stopped afterwards."""
    running = Cluster(env, logs, free_port())
    running.env["PALAESTRA_PUBLIC_URL"] = running.base
    try:
        running.start("serve")
        async with aiohttp.ClientSession() as session:
            await running.wait_up(session)
        for n in range(workers):
            running.start(f"worker-{n + 1}")
        yield running
    finally:
        running.stop()


async def drop_connections(engine: AsyncEngine, database: str) -> int:
    """Terminate every other backend connected to ``database``; how many were."""
    query = text(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = :name AND pid <> pg_backend_pid()"
    )
    async with engine.connect() as connection:
        dropped: Any = (await connection.execute(query, {"name": database})).scalar()
        await connection.commit()
    return int(dropped or 0)
