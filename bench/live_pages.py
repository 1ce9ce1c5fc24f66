"""What an open page costs the server: N browsers keeping ``/runs``, and a run's page, up to date.

``palaestra serve`` runs in a process of its own, on SQLite or (``--store postgres``) on a
PostgreSQL database of the bench's own, with a few hundred runs stored; N clients
(aiohttp, in this process) each ask once per ``--interval`` seconds, their starts spread
over the interval, as N open tabs would. Phases of ``--seconds`` each, on the same
server; first the list ``/runs``:

1. **reload**: each client fetches the whole page (what keeping a page fresh costs
   without live parts: the baseline);
2. **reload, changing**: the same while a writer in another process adds a run every
   ``--change-every`` seconds;
3. **live, unchanged**: each client polls the page's live part with the tag it holds,
   as the page does (``Palaestra-Live``, ``If-None-Match``): answered 304;
4. **live, changing**: the same while a run is added every ``--change-every`` seconds: a
   client is sent the live part once after each change, 304 otherwise;

then the page of a run under way (``--running`` runs, each with its tasks running, the
clients' tabs spread over them):

5. **run page, reload**: each client fetches its run's whole page;
6. **run page, unchanged**: each polls its run's live part with its tag: answered 304;
7. **run page, changing**: the same while a writer ends one task every
   ``--change-every`` seconds, a run after the other, as a step of the run does (the
   task's row, then the run's): every open run page is drawn again once after each
   step of any running run (the stamp is shared), 304 otherwise;

8. **healthz**: each client asks ``/healthz`` instead (a small JSON answer after a
   ``SELECT 1``): near the floor of what any request costs this server.

For each phase: the requests answered, the server's CPU time per second of the phase (in
cores) and per request (from /proc), and the answers by status. Its checks (the exit
status): every reload is a 200 holding the rows; unchanged polls are all 304 (but
one when the minute turns); in the changing phases every client ends holding the newest
run, or every task its run's writer ended.

    python bench/live_pages.py                   # 100 clients, 10 s a phase, SQLite
    python bench/live_pages.py --store postgres  # the same on PostgreSQL
    python bench/live_pages.py --clients 300     # more tabs
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
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import update

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._support import (
    HOST,
    bench_database,
    bench_settings,
    cpu_seconds,
    environment,
    free_port,
    parse_args,
)
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import Run, Task
from palaestra.web.live import AGE_STEP_S, LIVE_HEADER, STAMP_TTL_S

PAGE = "/runs"
#: A run's page: the clients' tabs are spread over the runs under way.
RUN_PAGE = "/runs/{}"
#: The tasks of each run under way, all running when the bench begins.
TASKS_PER_RUN = 8
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


async def add_running_runs(platform: Platform, count: int) -> dict[str, list[str]]:
    """``count`` runs under way, each with :data:`TASKS_PER_RUN` tasks sent and running (the
    run driver is off: nothing moves them but the bench's writer); their tasks by run."""
    now = platform.clock.now()
    tasks: dict[str, list[str]] = {}
    async with platform.db.session() as session, session.begin():
        for i in range(count):
            run_id = new_id()
            session.add(
                Run(
                    id=run_id,
                    owner_id=None,
                    goal=f"under way {i}",
                    launchpad="make-money",
                    status="RUNNING",
                    phase="SCOUT",
                    config={},
                    created_at=now - 1 + i * 1e-3,
                    updated_at=now,
                )
            )
            await session.flush()
            tasks[run_id] = []
            for slot in range(TASKS_PER_RUN):
                task_id = new_id()
                tasks[run_id].append(task_id)
                session.add(
                    Task(
                        id=task_id,
                        run_id=run_id,
                        candidate_id=None,
                        phase="SCOUT",
                        slot=slot,
                        attempt=0,
                        executor="bench-agent",
                        status="RUNNING",
                        sent_at=now,
                        deadline_at=now + 3600,
                        created_at=now,
                    )
                )
    return tasks


async def writer(platform: Platform, every: float, until: float, goals: list[str]) -> None:
    """A run added every ``every`` seconds until ``until``, from a platform of its own (as a
    worker would write)."""
    while time.monotonic() < until:
        goals.append(await add_runs(platform, 1, "added"))
        await asyncio.sleep(every)


async def stepper(
    platform: Platform,
    every: float,
    until: float,
    tasks: dict[str, list[str]],
    ended: dict[str, int],
) -> None:
    """One task ended every ``every`` seconds until ``until``, a run after the other, as a
    step writes it (the task, then its run's ``updated_at``), from a platform of its own;
    ``ended`` counts the tasks ended in each run."""
    runs = list(tasks)
    step = 0
    while time.monotonic() < until:
        run_id = runs[step % len(runs)]
        done = ended.get(run_id, 0)
        if done < len(tasks[run_id]):
            now = platform.clock.now()
            async with platform.db.session() as session, session.begin():
                await session.execute(
                    update(Task)
                    .where(Task.id == tasks[run_id][done])
                    .values(status="SUCCEEDED", latency_ms=420.0, completed_at=now, via="sync")
                )
                await session.execute(update(Run).where(Run.id == run_id).values(updated_at=now))
            ended[run_id] = done + 1
        step += 1
        await asyncio.sleep(every)


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
    rows = 'data-run="' if path == PAGE else 'data-task="'
    while time.monotonic() < until:
        began = time.monotonic()
        headers = {**LIVE, "If-None-Match": f'"{tag}"'} if live else HTML
        async with session.get(base + path, headers=headers) as response:
            text = await response.text()
            phase.requests += 1
            phase.statuses[response.status] += 1
            if response.status == 200:
                body, tag = text, response.headers.get("ETag", "").strip('"')
                if path != FLOOR and not live and rows not in text:
                    phase.problems.append("a reload without its rows")
                full += 1
                if live and phase.name.endswith("unchanged") and full > 1:
                    # (one is the minute turning: "3 min ago" redrawn)
                    phase.problems.append("an unchanged poll answered in full twice")
            elif response.status != 304:
                phase.problems.append(f"answered {response.status}")
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - began)))
    return body


async def loaded(session: aiohttp.ClientSession, base: str, path: str) -> str:
    """The tag of the page as a tab loads it, before the phase is measured."""
    async with session.get(base + path, headers=LIVE) as response:
        await response.read()
        return response.headers.get("ETag", "").strip('"')


@dataclass
class Bench:
    """What the phases share: the server, the options, and the runs under way."""

    base: str
    server_pid: int
    args: argparse.Namespace
    settings: Settings
    running: dict[str, list[str]]

    def path(self, name: str, n: int) -> str:
        """The page client ``n`` keeps open in the phase ``name``."""
        if name == FLOOR_PHASE:
            return FLOOR
        if name.startswith("run page"):
            runs = list(self.running)
            return RUN_PAGE.format(runs[n % len(runs)])
        return PAGE


async def within_one_age_step(seconds: float) -> None:
    """Wait, if need be, until ``seconds`` pass before the minute turns: a live part's tag
    holds the minute (``AGE_STEP_S``), so every open page is drawn again when it turns."""
    left = AGE_STEP_S - time.time() % AGE_STEP_S
    if left < seconds:
        await asyncio.sleep(left + 0.1)


async def run_phase(name: str, bench: Bench) -> tuple[Phase, list[str], list[str], list[str]]:
    """The phase ``name``: the phase, each client's last body and page, and what changed
    meanwhile (the goals added, or the runs whose tasks were ended, a run per task)."""
    args = bench.args
    phase = Phase(name)
    live = name.startswith("live") or (name.startswith("run page") and "reload" not in name)
    changing = name.endswith("changing")
    if name.endswith("unchanged"):  # all 304: not a page drawn again as the minute turns
        await within_one_age_step(args.seconds + 1.0)
    paths = [bench.path(name, n) for n in range(args.clients)]
    changes: list[str] = []
    ended: dict[str, int] = {}
    connector = aiohttp.TCPConnector(limit=args.clients)
    async with AsyncExitStack() as stack:
        session = await stack.enter_async_context(aiohttp.ClientSession(connector=connector))
        tags = await asyncio.gather(*(loaded(session, bench.base, path) for path in paths))
        # The writer's platform (its own, as a worker's) is opened before the phase's clock
        # starts: its first change is written at once, however long opening takes.
        writes = await Platform.open(bench.settings) if changing else None
        if writes is not None:
            stack.push_async_callback(writes.close)
        cpu_before, began = cpu_seconds(bench.server_pid), time.monotonic()
        until = began + args.seconds
        # The last change leaves every client time to ask once more and be told of it.
        quiet = until - args.interval - STAMP_TTL_S - 0.5
        write = None
        if writes is not None and name.startswith("run page"):
            write = stepper(writes, args.change_every, quiet, bench.running, ended)
        elif writes is not None:
            write = writer(writes, args.change_every, quiet, changes)
        written = asyncio.create_task(write) if write is not None else None
        bodies = await asyncio.gather(
            *(
                client(
                    session,
                    bench.base,
                    phase,
                    live=live,
                    offset=args.interval * n / args.clients,
                    interval=args.interval,
                    until=until,
                    tag=tags[n],
                    path=paths[n],
                )
                for n in range(args.clients)
            )
        )
        phase.seconds = time.monotonic() - began
        phase.cpu_s = cpu_seconds(bench.server_pid) - cpu_before
        if written is not None:
            await written
    for run_id, count in ended.items():
        changes += [run_id] * count
    return phase, list(bodies), paths, changes


async def main(args: argparse.Namespace) -> int:
    async with AsyncExitStack() as stack:
        data = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        given: dict[str, Any] = {}
        if args.store == "postgres":
            given["database_url"] = await stack.enter_async_context(bench_database())
        settings = bench_settings(
            data,
            public_runs=True,
            runs_enabled=False,
            referee_enabled=False,
            ratings_enabled=False,
            leaderboard_interval_s=0,
            **given,
        )
        platform = await Platform.open(settings)
        await add_runs(platform, args.runs, "stored")
        running = await add_running_runs(platform, args.running)
        await platform.close()
        port = free_port()
        base = f"http://{HOST}:{port}"
        with serving(settings, port) as server:
            await wait_for(base, server)
            return await measure(Bench(base, server.pid, args, settings, running))
    raise AssertionError("unreachable")  # pragma: no cover - the stack returns above


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


NAMES = (
    "reload",
    "reload, changing",
    "live, unchanged",
    "live, changing",
    "run page, reload",
    "run page, unchanged",
    "run page, changing",
    FLOOR_PHASE,
)


def held(name: str, bodies: list[str], paths: list[str], changes: list[str]) -> str | None:
    """What a client does not hold at the end of the phase ``name``, if anything."""
    if not changes:
        return None
    if not name.startswith("run page"):
        if all(changes[-1] in body for body in bodies):
            return None
        return "a client does not hold the newest run"
    ended = {run_id: changes.count(run_id) for run_id in set(changes)}
    for body, path in zip(bodies, paths, strict=True):
        expected = ended.get(path.rsplit("/", 1)[-1], 0)
        if body.count('data-status="SUCCEEDED"') != expected:
            return "a client does not hold every task its run's writer ended"
    return None


async def measure(bench: Bench) -> int:
    args = bench.args
    store = "PostgreSQL" if args.store == "postgres" else "SQLite"
    print(
        f"{args.clients} open pages of {PAGE} ({args.runs} runs stored, 50 shown), then of "
        f"{args.running} runs under way ({TASKS_PER_RUN} tasks each), each asking every "
        f"{args.interval:g} s, {args.seconds:g} s a phase, a run added (a task ended) every "
        f"{args.change_every:g} s while changing; server: palaestra serve, {store}"
    )
    print(
        f"  {'phase':<20} {'requests':>6} {'req/s':>8} {'CPU cores':>10} {'CPU ms/req':>10}"
        "   answers"
    )
    async with aiohttp.ClientSession() as session:  # templates compiled, connections warm
        for path in (PAGE, RUN_PAGE.format(next(iter(bench.running)))):
            for headers in (HTML, LIVE) * 5:
                async with session.get(bench.base + path, headers=headers) as response:
                    await response.read()
    phases: dict[str, Phase] = {}
    failures: list[str] = []
    for name in NAMES:
        phase, bodies, paths, changes = await run_phase(name, bench)
        phases[name] = phase
        print(phase.line(), flush=True)
        failures += [f"{name}: {problem}" for problem in sorted(set(phase.problems))]
        missing = held(name, bodies, paths, changes)
        if missing is not None:
            failures.append(f"{name}: {missing}")
    for name, against in (
        ("live, unchanged", "reload"),
        ("live, changing", "reload, changing"),
        ("run page, unchanged", "run page, reload"),
        ("run page, changing", "run page, reload"),
    ):
        phase, base = phases[name], phases[against]
        ratio = (phase.cpu_s / phase.seconds) / max(base.cpu_s / base.seconds, 1e-9)
        print(f"{name}: {ratio:.0%} of the server CPU of {against}")
    if failures:
        for failure in failures:
            print("FAIL ", failure)
        return 1
    print(
        "PASS  every reload held the rows, unchanged polls were 304, "
        "every client holds the newest run and every task ended"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100, help="open pages")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between asks")
    parser.add_argument("--runs", type=int, default=300, help="runs stored")
    parser.add_argument("--running", type=int, default=10, help="runs under way, their pages")
    parser.add_argument(
        "--change-every", type=float, default=5.0, help="seconds between changes, changing"
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the server's database (postgres: a database of its own on "
        "PALAESTRA_BENCH_POSTGRES_URL's server)",
    )
    quick = {
        "clients": 5,
        "seconds": 2.5,
        "interval": 0.5,
        "runs": 60,
        "running": 2,
        "change_every": 1.0,
    }
    arguments = parse_args(parser, quick)
    sys.exit(asyncio.run(main(arguments)))
