"""What an open page costs the server: N browsers keeping ``/runs`` up to date.

``palaestra serve`` runs on SQLite in a process of its own, with a few hundred runs
stored; N clients (aiohttp, in this process) each ask once per ``--interval`` seconds,
their starts spread over the interval, as N open tabs would. Five phases of
``--seconds`` each, on the same server:

1. **reload**: each client fetches the whole page (what keeping a page fresh costs
   without live parts: the baseline);
2. **reload, changing**: the same while a writer in another process adds a run every
   ``--change-every`` seconds;
3. **live, unchanged**: each client polls the page's live part with the tag it holds,
   as the page does (``Palaestra-Live``, ``If-None-Match``): answered 304;
4. **live, changing**: the same while a run is added every ``--change-every`` seconds: a
   client is sent the live part once after each change, 304 otherwise;
5. **healthz**: each client asks ``/healthz`` instead (a small JSON answer after a
   ``SELECT 1``): near the floor of what any request costs this server.

For each phase: the requests answered, the server's CPU time per second of the phase (in
cores) and per request (from /proc), and the answers by status. Its checks (the exit
status): every reload is a 200 holding the rows; unchanged polls are all 304 (but
one when the minute turns); in the changing phase every client ends holding the newest run.

    python bench/live_pages.py                 # 100 clients, 10 s a phase
    python bench/live_pages.py --clients 300   # more tabs
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._support import (
    HOST,
    bench_settings,
    cpu_seconds,
    environment,
    free_port,
    parse_args,
)
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import Run
from palaestra.web.live import LIVE_HEADER, STAMP_TTL_S

PAGE = "/runs"
#: The floor: the cheapest answer the server gives with a query behind it.
FLOOR = "/healthz"
FLOOR_PHASE = "healthz (the floor)"
HTML = {"Accept": "text/html"}
#: What a page's live part sends when it asks.
LIVE = {**HTML, "HX-Request": "true", LIVE_HEADER: "1"}


@dataclass
class Phase:
    name: str
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    cpu_s: float = 0.0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        per_request = self.cpu_s / self.requests * 1000 if self.requests else 0.0
        answers = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        return (
            f"  {self.name:<20} {self.requests:>6} {self.requests / self.seconds:>8.1f} "
            f"{self.cpu_s / self.seconds:>10.3f} {per_request:>10.2f}   {answers}"
        )


async def add_runs(platform: Platform, count: int, prefix: str) -> str:
    """``count`` finished runs (the run driver has nothing to do); the newest one's goal."""
    now = platform.clock.now()
    goal = ""
    async with platform.db.session() as session, session.begin():
        for i in range(count):
            goal = f"{prefix} {i} {new_id()[-6:]}"
            session.add(
                Run(
                    id=new_id(),
                    owner_id=None,
                    goal=goal,
                    launchpad="make-money",
                    status="COMPLETED",
                    phase="REPORT",
                    config={},
                    report={"ranking": []},
                    created_at=now + i * 1e-3,
                    updated_at=now,
                    finished_at=now + 30,
                )
            )
    return goal


async def writer(settings: Settings, every: float, until: float, goals: list[str]) -> None:
    """A run added every ``every`` seconds until ``until``, from a platform of its own (as a
    worker would write)."""
    platform = await Platform.open(settings)
    try:
        while time.monotonic() < until:
            goals.append(await add_runs(platform, 1, "added"))
            await asyncio.sleep(every)
    finally:
        await platform.close()


async def client(
    session: aiohttp.ClientSession,
    base: str,
    phase: Phase,
    *,
    live: bool,
    offset: float,
    interval: float,
    until: float,
    tag: str,
    path: str = PAGE,
) -> str:
    """One open tab holding ``tag`` (its page as loaded): a request every ``interval`` until
    ``until``; the last body it holds."""
    await asyncio.sleep(offset)
    body, full = "", 0
    while time.monotonic() < until:
        began = time.monotonic()
        headers = {**LIVE, "If-None-Match": f'"{tag}"'} if live else HTML
        async with session.get(base + path, headers=headers) as response:
            text = await response.text()
            phase.requests += 1
            phase.statuses[response.status] += 1
            if response.status == 200:
                body, tag = text, response.headers.get("ETag", "").strip('"')
                if path == PAGE and not live and 'data-run="' not in text:
                    phase.problems.append("a reload without its rows")
                full += 1
                if live and phase.name == "live, unchanged" and full > 1:
                    # (one is the minute turning: "3 min ago" redrawn)
                    phase.problems.append("an unchanged poll answered in full twice")
            elif response.status != 304:
                phase.problems.append(f"answered {response.status}")
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - began)))
    return body


async def loaded(session: aiohttp.ClientSession, base: str) -> str:
    """The tag of the page as a tab loads it, before the phase is measured."""
    async with session.get(base + PAGE, headers=LIVE) as response:
        await response.read()
        return response.headers.get("ETag", "").strip('"')


async def run_phase(
    name: str, base: str, server_pid: int, args: argparse.Namespace, settings: Settings
) -> tuple[Phase, list[str], list[str]]:
    phase = Phase(name)
    live, changing = name.startswith("live"), name.endswith("changing")
    goals: list[str] = []
    connector = aiohttp.TCPConnector(limit=args.clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        tags = await asyncio.gather(*(loaded(session, base) for _ in range(args.clients)))
        cpu_before, began = cpu_seconds(server_pid), time.monotonic()
        until = began + args.seconds
        # The last change leaves every client time to ask once more and be told of it.
        quiet = until - args.interval - STAMP_TTL_S - 0.5
        write = (
            asyncio.create_task(writer(settings, args.change_every, quiet, goals))
            if changing
            else None
        )
        bodies = await asyncio.gather(
            *(
                client(
                    session,
                    base,
                    phase,
                    live=live,
                    offset=args.interval * n / args.clients,
                    interval=args.interval,
                    until=until,
                    tag=tags[n],
                    path=FLOOR if name == FLOOR_PHASE else PAGE,
                )
                for n in range(args.clients)
            )
        )
        phase.seconds = time.monotonic() - began
        phase.cpu_s = cpu_seconds(server_pid) - cpu_before
        if write is not None:
            await write
    return phase, list(bodies), goals


async def main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as data:
        settings = bench_settings(
            Path(data),
            public_runs=True,
            runs_enabled=False,
            referee_enabled=False,
            ratings_enabled=False,
            leaderboard_interval_s=0,
        )
        platform = await Platform.open(settings)
        await add_runs(platform, args.runs, "stored")
        await platform.close()
        port = free_port()
        base = f"http://{HOST}:{port}"
        with serving(settings, port) as server:
            await wait_for(base, server)
            return await measure(base, server.pid, args, settings)


@contextlib.contextmanager
def serving(settings: Settings, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``palaestra serve`` on ``settings``, in a process of its own, stopped afterwards."""
    command = [sys.executable, "-m", "palaestra", "serve", "--port", str(port)]
    server = subprocess.Popen(
        command, env=environment(settings), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


async def wait_for(base: str, server: subprocess.Popen[bytes]) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            if server.poll() is not None:
                raise RuntimeError(f"serve exited with {server.returncode}")
            with contextlib.suppress(aiohttp.ClientConnectionError):
                async with session.get(base + "/healthz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise RuntimeError("serve did not answer /healthz")


async def measure(base: str, server_pid: int, args: argparse.Namespace, settings: Settings) -> int:
    print(
        f"{args.clients} open pages of {PAGE} ({args.runs} runs stored, 50 shown), each asking "
        f"every {args.interval:g} s, {args.seconds:g} s a phase, a run added every "
        f"{args.change_every:g} s while changing; server: palaestra serve, SQLite"
    )
    print(
        f"  {'phase':<20} {'requests':>6} {'req/s':>8} {'CPU cores':>10} {'CPU ms/req':>10}"
        "   answers"
    )
    async with aiohttp.ClientSession() as session:  # templates compiled, connections warm
        for headers in (HTML, LIVE) * 5:
            async with session.get(base + PAGE, headers=headers) as response:
                await response.read()
    phases: list[Phase] = []
    failures: list[str] = []
    names = ("reload", "reload, changing", "live, unchanged", "live, changing", FLOOR_PHASE)
    for name in names:
        phase, bodies, goals = await run_phase(name, base, server_pid, args, settings)
        phases.append(phase)
        print(phase.line(), flush=True)
        failures += [f"{name}: {problem}" for problem in sorted(set(phase.problems))]
        if goals and not all(goals[-1] in body for body in bodies):
            failures.append(f"{name}: a client does not hold the newest run")
    baseline, unchanged, changing = phases[0], phases[2], phases[3]
    for phase, against in ((unchanged, baseline), (changing, phases[1])):
        ratio = (phase.cpu_s / phase.seconds) / max(against.cpu_s / against.seconds, 1e-9)
        print(f"{phase.name}: {ratio:.0%} of the server CPU of {against.name}")
    if failures:
        for failure in failures:
            print("FAIL ", failure)
        return 1
    print(
        "PASS  every reload held the rows, unchanged polls were 304, "
        "every client holds the newest run"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100, help="open pages")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between asks")
    parser.add_argument("--runs", type=int, default=300, help="runs stored")
    parser.add_argument(
        "--change-every", type=float, default=5.0, help="seconds between runs added, changing"
    )
    quick = {"clients": 5, "seconds": 4.0, "interval": 1.0, "runs": 60, "change_every": 1.0}
    arguments = parse_args(parser, quick)
    sys.exit(asyncio.run(main(arguments)))
