"""`palaestra serve` as a real process: SIGKILL loses nothing committed; SIGTERM stops cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography.fernet import Fernet

from tests.integration.edge_agents import EdgeAgent
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

ADMIN = "pa_admin_acceptance"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def palaestra_serve(data_dir: Path, port: int, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    environment = {
        **os.environ,
        "PALAESTRA_DATA_DIR": str(data_dir),
        "PALAESTRA_ADMIN_TOKEN": ADMIN,
        "PALAESTRA_SECRET_KEY": env.pop("secret"),
        "PALAESTRA_HEALTH_JITTER": "0",
        **env,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "serve", "--port", str(port), "--allow", "127.0.0.0/8"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


@asynccontextmanager
async def client(port: int) -> AsyncIterator[Any]:
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:

        async def call(method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
            async with session.request(method, base + path, **kwargs) as response:
                return response.status, await response.json()

        deadline = time.monotonic() + 30
        while True:
            try:
                if (await call("GET", "/healthz"))[0] == 200:
                    break
            except aiohttp.ClientConnectionError:
                pass
            assert time.monotonic() < deadline, "palaestra serve did not come up"
            await asyncio.sleep(0.1)
        yield call


def snapshot(data_dir: Path) -> tuple[tuple[Any, ...], int]:
    with sqlite3.connect(data_dir / "palaestra.db") as db:
        agent = db.execute(
            "SELECT id, status, consecutive_failures, last_heartbeat FROM agents"
        ).fetchone()
        events = db.execute("SELECT count(*) FROM agent_events").fetchone()[0]
    return agent, events


async def test_sigkill_between_pings_loses_no_agent_history_or_counter(tmp_path: Path) -> None:
    secret = Fernet.generate_key().decode()
    port = free_port()
    agent = EdgeAgent(key="")
    auth = {"Authorization": f"Bearer {ADMIN}"}
    async with serve(agent) as endpoint:
        # 0.01 scale: ACTIVE agents are pinged every 3 s, DEGRADED ones every 0.6 s.
        scaled = {"PALAESTRA_HEALTH_INTERVAL_SCALE": "0.01"}
        with palaestra_serve(tmp_path, port, secret=secret, **scaled) as process:
            async with client(port) as call:
                _, owner = await call("POST", "/api/owners", json={"name": "o"}, headers=auth)
                owner_auth = {"Authorization": f"Bearer {owner['token']}"}
                status, created = await call(
                    "POST",
                    "/api/agents",
                    headers=owner_auth,
                    json={"name": "a", "role": "SCOUT", "endpoint_url": endpoint.url("/a")},
                )
                assert status == 201, created
                agent.key = created["api_key"]
                agent_id = created["agent_id"]
                _, wizard = await call("POST", f"/api/agents/{agent_id}/wizard", headers=owner_auth)
                assert wizard["passed"] is True
                agent.failing = True
                deadline = time.monotonic() + 30
                while True:
                    _, body = await call("GET", f"/api/agents/{agent_id}", headers=owner_auth)
                    if body["consecutive_failures"] >= 4:
                        break
                    assert time.monotonic() < deadline, body
                    await asyncio.sleep(0.05)
            process.send_signal(signal.SIGKILL)  # the server itself: uvicorn runs in-process
            assert process.wait(timeout=10) == -signal.SIGKILL
        before_agent, before_events = snapshot(tmp_path)
        assert before_agent[0] == agent_id
        assert before_agent[2] >= 4
        assert before_events >= 4 + 14  # probe + wizard checks + pings + status changes

        port = free_port()
        with palaestra_serve(tmp_path, port, secret=secret, PALAESTRA_MONITOR_ENABLED="false"):
            async with client(port) as call:
                _, body = await call("GET", f"/api/agents/{agent_id}", headers=owner_auth)
                _, history = await call(
                    "GET", f"/api/agents/{agent_id}/history?limit=1000", headers=owner_auth
                )
    assert (body["agent_id"], body["status"], body["consecutive_failures"]) == before_agent[:3]
    assert len(history) == before_events
    assert snapshot(tmp_path) == (before_agent, before_events)


async def test_sigterm_shuts_down_cleanly(tmp_path: Path) -> None:
    port = free_port()
    secret = Fernet.generate_key().decode()
    with palaestra_serve(tmp_path, port, secret=secret) as process:
        async with client(port) as call:
            assert (await call("GET", "/healthz"))[0] == 200
        process.send_signal(signal.SIGTERM)
        # uvicorn finishes the shutdown, then re-raises the signal it caught.
        assert process.wait(timeout=15) in (0, -signal.SIGTERM)
        output = process.stdout.read().decode() if process.stdout else ""
    assert "Palaestra stopped cleanly" in output
    assert "Traceback" not in output
    with sqlite3.connect(tmp_path / "palaestra.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
