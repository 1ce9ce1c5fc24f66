"""``palaestra demo``: a populated arena on this machine, through the real API and wizard.

It starts ``palaestra serve`` (SQLite in a demo folder, loopback agents
allowed, a short health cadence), starts the example agents with
``palaestra agent serve``, registers them as an owner would (probe, key,
restart the agent with its key, wizard), adds the cage fighters, starts a run
and a round of matches when this build has those APIs, prints where to look,
and stops every process it started on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp

from palaestra.demo.api import ADMIN_TOKEN, Api, DemoStepFailed
from palaestra.demo.lineup import GUARD, HOUSE, LAB, LINEUP, Entry
from palaestra.demo.local import DemoModel, demo_model
from palaestra.demo.populate import add_fighters, register_agents, run_wizards, start_play
from palaestra.demo.processes import (
    Child,
    ChildFailed,
    base_environment,
    port_free,
    python_command,
    start_child,
)
from palaestra.errors import ConfigurationError
from palaestra.settings import Settings

__all__ = ["Demo", "DemoOptions", "run_demo"]

MARKER: Final = ".palaestra-demo"
#: How often the demo republishes its leaderboards (the default is every 15 minutes).
LEADERBOARD_INTERVAL_S: Final = 20


@dataclass(frozen=True, slots=True)
class DemoOptions:
    port: int = 8000
    data_dir: Path = Path("./demo-data")
    agent_port: int = 9100
    health_scale: float = 0.02
    workdir: Path = field(default_factory=Path.cwd)


class Demo:
    """The demo's processes and what it registered; ``say`` prints progress."""

    def __init__(self, options: DemoOptions, say: Callable[[str], None] = print) -> None:
        self.options = options
        self.say = say
        self.children: list[Child] = []
        self.server: Child | None = None
        self.base = f"http://127.0.0.1:{options.port}"
        self.data_dir = options.data_dir.resolve()
        self.logs = self.data_dir / "logs"
        self.agents: dict[str, dict[str, Any]] = {}  # name -> {id, status, port, failed}
        self.owner_token = ""
        self.notes: list[str] = []
        self.model: DemoModel = demo_model(Settings())

    # set-up

    def prepare_data_dir(self) -> None:
        """A fresh demo folder each time; a folder that is not a demo's is never emptied."""
        folder = self.data_dir
        if folder.exists() and any(folder.iterdir()):
            if not (folder / MARKER).exists():
                raise ConfigurationError(
                    f"{folder} is not empty and is not a demo folder; choose another --data-dir"
                )
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).write_text("created by palaestra demo; emptied by the next one\n")

    def _check_examples(self) -> None:
        if not (self.options.workdir / "examples" / "scout.py").exists():
            raise ConfigurationError(
                "palaestra demo serves the example agents in examples/: "
                "run it from the repository's root folder"
            )

    async def start(self) -> None:
        self._check_examples()
        self.prepare_data_dir()
        self.say(self.model.describe())
        await self._start_server()
        # No keep-alive: a connection the server closed while idle must never be reused
        # for a POST (aiohttp does not retry those).
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(connector=connector) as session:
            api = Api(session, self.base)
            self.owner_token = await api.owner(LAB)
            tokens = {LAB: self.owner_token}
            for owner in (GUARD, HOUSE):
                tokens[owner] = await api.owner(owner)
            await self._start_agents()
            urls = {entry.name: self._url(entry.name) for entry in LINEUP}
            registered = await register_agents(api, self.owner_token, urls)
            for name, (agent_id, key) in registered.items():
                self.agents[name].update(id=agent_id, key=key)
            self.say("registered the edgearena agents (probe passed, keys issued)")
            await self._restart_with_keys()
            ids = {name: agent_id for name, (agent_id, _) in registered.items()}
            statuses = await run_wizards(api, self.owner_token, ids, self.say)
            for name, status in statuses.items():
                self.agents[name]["status"] = status
            fighters, notes = await add_fighters(api, tokens, urls, self.model, self.say)
            self.notes += notes
            self.notes += await start_play(api, self.owner_token, fighters, self.model, self.say)

    async def _start_server(self) -> None:
        scale = self.options.health_scale
        env = base_environment() | {
            "PALAESTRA_DATA_DIR": str(self.data_dir),
            "PALAESTRA_DATABASE_URL": f"sqlite+aiosqlite:///{self.data_dir / 'palaestra.db'}",
            "PALAESTRA_ADMIN_TOKEN": ADMIN_TOKEN,
            "PALAESTRA_PUBLIC_URL": self.base,
            "PALAESTRA_PUBLIC_RUNS": "true",
            "PALAESTRA_HEALTH_INTERVAL_SCALE": str(scale),
            "PALAESTRA_LEADERBOARD_INTERVAL_S": str(LEADERBOARD_INTERVAL_S),
            "PALAESTRA_HOST": "127.0.0.1",
        }
        env |= self.model.server_environment()
        command = python_command(
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.options.port),
            "--allow",
            "127.0.0.0/8",
        )
        self.say(
            f"starting palaestra serve on {self.base} (data in {self.data_dir}; health pings every "
            f"{300 * scale:g}s while ACTIVE and {60 * scale:g}s while DEGRADED or PROBATION, "
            "instead of 5 min and 1 min, so that statuses visibly move; leaderboards republished "
            f"every {LEADERBOARD_INTERVAL_S}s instead of 15 min)"
        )
        self.server = await start_child(
            "palaestra serve",
            command,
            log=self.logs / "server.log",
            env=env,
            cwd=self.options.workdir,
        )
        self.children.append(self.server)
        await self.server.wait_http(self.base + "/healthz")

    def _agent_env(self, entry: Entry, key: str | None) -> dict[str, str]:
        env = base_environment()
        if key is not None:
            env["PALAESTRA_AGENT_KEY" if entry.script_args is None else "EDGE_AGENT_KEY"] = key
        return env

    async def _start_agent(self, index: int, entry: Entry, key: str | None) -> Child:
        port = self.options.agent_port + index
        if key is None and not port_free(port):
            raise ChildFailed(f"port {port} is in use: choose another --agent-port")
        if entry.script_args is None:
            target = entry.target_for(self.model.on)
            command = python_command(
                "agent", "serve", target, "--port", str(port), "--log-level", "warning"
            )
        else:
            command = [sys.executable, entry.target, "--port", str(port), *entry.script_args]
        child = await start_child(
            entry.name,
            command,
            log=self.logs / f"{entry.name}.log",
            env=self._agent_env(entry, key),
            cwd=self.options.workdir,
        )
        self.children.append(child)
        self.agents.setdefault(entry.name, {})["port"] = port
        self.agents[entry.name]["child"] = child
        return child

    def _url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.agents[name]['port']}/"

    async def _start_agents(self) -> None:
        self.say(f"starting {len(LINEUP)} agents with palaestra agent serve:")
        for index, entry in enumerate(LINEUP):
            await self._start_agent(index, entry, None)
            target = entry.target_for(self.model.on)
            shows = entry.shows + (", with the local model" if target != entry.target else "")
            self.say(f"  {entry.name:<17} {target:<36} {shows}")
        await asyncio.gather(
            *(self.agents[e.name]["child"].wait_http(self._url(e.name)) for e in LINEUP)
        )

    async def _restart_with_keys(self) -> None:
        async def one(index: int, entry: Entry) -> None:
            old: Child = self.agents[entry.name]["child"]
            await old.stop()
            self.children.remove(old)
            child = await self._start_agent(index, entry, self.agents[entry.name]["key"])
            await child.wait_http(self._url(entry.name))

        await asyncio.gather(*(one(i, e) for i, e in enumerate(LINEUP) if e.role is not None))
        self.say("restarted each agent with its key (PALAESTRA_AGENT_KEY)")

    # running and stopping

    def summary(self) -> str:
        lines = [
            "",
            f"Palaestra demo is up: open {self.base}/ in your browser",
            f"  admin token        {ADMIN_TOKEN}",
            f"  owner token        {self.owner_token}   (demo-lab: use it on {self.base}/register)",
            f"  API docs           {self.base}/docs",
            f"  logs               {self.logs}",
        ]
        lines += [f"  note: {note}" for note in self.notes]
        lines += ["Press Ctrl-C to stop the demo and every process it started.", ""]
        return "\n".join(lines)

    async def watch(self, stop: asyncio.Event) -> bool:
        """Wait for ``stop``; False if the server exited on its own first."""
        assert self.server is not None
        server_exit = asyncio.ensure_future(self.server.process.wait())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({server_exit, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (server_exit, stopped):
            waiter.cancel()
        if stop.is_set():
            return True
        self.say(f"palaestra serve exited on its own:\n{self.server.tail()}")
        return False

    async def stop(self) -> None:
        """Stop the server first (no more pings), then the agents; wait for every one."""
        if self.server is not None:
            await self.server.stop()
        await asyncio.gather(*(child.stop() for child in self.children))


async def run_demo(options: DemoOptions, say: Callable[[str], None] = print) -> int:
    """Start the demo, wait for Ctrl-C (or SIGTERM), stop everything; the exit status."""
    demo = Demo(options, say)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    status = 0
    try:
        setup = asyncio.ensure_future(demo.start())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({setup, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if setup.done():
            setup.result()
            say(demo.summary())
            if not await demo.watch(stop):
                status = 1
        else:
            setup.cancel()
            await asyncio.gather(setup, return_exceptions=True)
    except (ChildFailed, DemoStepFailed, ConfigurationError, aiohttp.ClientError) as exc:
        say(f"error: {exc}")
        status = 1
    finally:
        say("stopping the demo...")
        await demo.stop()
        say(f"stopped: all {len(demo.children)} processes the demo started have exited")
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return status
