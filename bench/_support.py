"""What the bench scripts share: agents served from a process of their own, a free port, a
platform's settings, and stored agents to dispatch to or ping.

The scripts run as files (``python bench/dispatch.py``, as ``make bench`` runs them): each
puts the repository's root on ``sys.path`` before it imports this module as
``bench._support``.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import socket
from collections.abc import Awaitable, Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

from aiohttp import web
from cryptography.fernet import Fernet
from pydantic import SecretStr

from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.settings import Settings
from palaestra.store.models import Owner

__all__ = [
    "HOST",
    "Handler",
    "add_owner",
    "agent_row",
    "agents_process",
    "bench_settings",
    "free_port",
]

HOST: Final = "127.0.0.1"
Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


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
