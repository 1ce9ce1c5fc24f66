"""A scale-out Palaestra on this machine: `serve --no-workers` and `worker` processes.

The processes share the per-test-process PostgreSQL database and a Redis
stream of their own (its name carries the process id and a random part; the
stream and the scheduler's keys are deleted afterwards, nothing else).
:func:`holder_of` tells which process holds the other end of a connection
that reached a test agent, so that a test can kill the worker that is in the
middle of a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from redis.asyncio import Redis

from tests.integration.edge_agents import EdgeAgent

__all__ = ["ADMIN", "Cluster", "InFlight", "Router", "enter_agent", "holder_of", "scale_out"]

ADMIN = "pa_admin_scale_out"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def holder_of(port: int, pids: list[int]) -> int | None:
    """The process among ``pids`` whose socket has the local address 127.0.0.1:``port``."""
    wanted = f"0100007F:{port:04X}"
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == wanted:
            inode = fields[9]
            break
    if inode is None:
        return None
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if f"socket:[{inode}]" in links:
            return pid
    return None


@dataclass
class InFlight:
    """Wraps an agent's handler: which client ports have a request being answered now."""

    handler: Callable[[web.BaseRequest], Any]
    #: client port -> the request's taskId or idempotency key
    ports: dict[int, str] = field(default_factory=dict)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        port = int(peer[1]) if peer else 0
        headers = request.headers
        self.ports[port] = (
            headers.get("x-edgearena-task-id") or headers.get("idempotency-key") or ""
        )
        try:
            response: web.StreamResponse = await self.handler(request)
            return response
        finally:
            self.ports.pop(port, None)


@dataclass
class Router:
    """One server for many edgearena agents, by path."""

    agents: dict[str, EdgeAgent]

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        return await self.agents[request.path.strip("/")](request)


@dataclass
class Cluster:
    base: str
    server: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]
    session: aiohttp.ClientSession
    logs: Path

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        headers = kwargs.pop("headers", {"Authorization": f"Bearer {ADMIN}"})
        try:
            async with self.session.request(
                method, self.base + path, headers=headers, **kwargs
            ) as response:
                return response.status, await response.json(content_type=None)
        except aiohttp.ClientConnectionError as exc:
            alive = "running" if self.server.poll() is None else f"exited {self.server.poll()}"
            raise AssertionError(
                f"{method} {path}: {exc!r} (serve {alive})\n{self.output()}"
            ) from exc

    @property
    def worker_pids(self) -> list[int]:
        return [w.pid for w in self.workers if w.poll() is None]

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        for worker in self.workers:
            if worker.pid == pid:
                assert worker.wait(timeout=10) == -signal.SIGKILL

    def output(self) -> str:
        return "\n".join(
            f"== {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.logs.glob("*.log"))
        )


@contextmanager
def _process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "palaestra", *args], env=env, stdout=out, stderr=out
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@asynccontextmanager
async def scale_out(
    database_url: str, redis_url: str, logs: Path, *, workers: int = 3, **settings: str
) -> AsyncIterator[Cluster]:
    """Start the API (``serve --no-workers``), wait for it, then the workers."""
    from cryptography.fernet import Fernet

    queue = f"palaestra-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "PALAESTRA_DATA_DIR": str(logs),
        "PALAESTRA_DATABASE_URL": database_url,
        "PALAESTRA_BROKER_URL": redis_url,
        "PALAESTRA_BROKER_QUEUE": queue,
        "PALAESTRA_ADMIN_TOKEN": ADMIN,
        "PALAESTRA_SECRET_KEY": Fernet.generate_key().decode(),
        "PALAESTRA_EGRESS_ALLOW": "127.0.0.0/8",
        "PALAESTRA_LOG_LEVEL": "WARNING",
        **{f"PALAESTRA_{k.upper()}": v for k, v in settings.items()},
    }
    port = free_port()
    try:
        with _process(
            ["serve", "--no-workers", "--port", str(port)], env, logs / "serve.log"
        ) as server:
            # A fresh connection per call: a kept-alive one that the server closes
            # after its idle timeout, just as a call goes out, would fail the call.
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(connector=connector) as session:
                base = f"http://127.0.0.1:{port}"
                deadline = time.monotonic() + 30
                while True:
                    try:
                        async with session.get(base + "/healthz") as response:
                            if response.status == 200:
                                break
                    except aiohttp.ClientConnectionError:
                        pass
                    assert server.poll() is None, (logs / "serve.log").read_text()
                    assert time.monotonic() < deadline, "serve did not come up"
                    await asyncio.sleep(0.1)
                with contextlib.ExitStack() as stack:
                    started = [
                        stack.enter_context(_process(["worker"], env, logs / f"worker-{n}.log"))
                        for n in range(workers)
                    ]
                    yield Cluster(base, server, started, session, logs)
    finally:
        redis = Redis.from_url(redis_url)
        keys = [key async for key in redis.scan_iter(match=f"{queue}*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


async def enter_agent(cluster: Cluster, name: str, role: str, agent: EdgeAgent, url: str) -> str:
    status, owner = await cluster.call("POST", "/api/owners", json={"name": name})
    assert status == 201, owner
    auth = {"Authorization": f"Bearer {owner['token']}"}
    body = {"name": name, "role": role, "endpoint_url": url}
    status, created = await cluster.call("POST", "/api/agents", json=body, headers=auth)
    assert status == 201, created
    agent.key = created["api_key"]
    path = f"/api/agents/{created['agent_id']}/wizard"
    status, wizard = await cluster.call("POST", path, headers=auth)
    assert wizard["passed"] is True, wizard
    return str(created["agent_id"])
