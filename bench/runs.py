"""Whole runs through real ``palaestra serve`` (and ``worker``) processes, beside a bare loop.

    .venv/bin/python bench/runs.py [--runs 300] [--rounds 3] [--timeout 150]
                                   [--modes sqlite,postgres,workers1,workers2]
                                   [--agents-per-role 8,4,6] [--rss-runs 1000] [--logs DIR]
                                   [--profile DIR] [--quick]

What a user sees, end to end. For each mode a fresh platform is started as an
operator starts it, and fast agents (one separate process; each answers at
once, verifies every signature with the standard library's ``hmac``, records
every taskId it receives and answers health GETs) are registered through the
API and admitted by the wizard: by default 8 scouts, 4 builders and 6
analysts, so that selection spreads the load. Then, per round:

- platform: ``--runs`` runs are started at once (``POST /api/runs``, the
  launchpad's sizes: 5 scouts, shortlist 3, 17 tasks a run) and polled until
  all are COMPLETED; tasks per second count every task of those runs over the
  whole period, from the first POST to the last run's ``finished_at``. At
  the end every run is read (``GET /api/runs/{id}``): each task must have
  SUCCEEDED (any other status is counted by status and reason), every agent
  must still be ACTIVE with no failures (``GET /api/agents``), and no taskId
  may have reached an agent twice (the agents' own ledger).
- bare: as many POSTs as the platform round sent, of the same bodies (those
  the agents received, a fresh taskId each), each signed with the agent's key
  at send time, to the same agents, ``runs x 5`` at once (every run's scout
  slots, what the platform is asked to have in flight when the runs start), by
  a bare aiohttp loop in this process.

Rounds alternate which goes first (platform first in the first round, whose
bodies the bare loop replays); medians are reported. CPU per task is the CPU
time of the platform's processes (``serve``, and the workers) per task, and
of this process per bare request: on a shared machine it is the steadier
figure. RSS is the platform processes' resident memory before the first
measured round and at its peak while the runs are in flight; ``--rss-runs
1000`` adds a round of that many runs, measured for memory, before the timed
rounds (the target is stated at 1,000 runs).

Modes: ``sqlite`` (``palaestra serve``, SQLite in a temporary data folder),
``postgres`` (``palaestra serve`` on a PostgreSQL database of its own),
``workers1`` and ``workers2`` (``palaestra serve --no-workers`` and one or two
``palaestra worker`` processes, PostgreSQL and a Redis stream of their own).
The databases and the stream are removed afterwards. PostgreSQL and Redis are
``PALAESTRA_BENCH_POSTGRES_URL`` and ``PALAESTRA_BENCH_REDIS_URL`` (as for
``bench/scale.py``).

Targets, each printed PASS or FAIL: embedded SQLite >= 0.5x the bare loop;
embedded PostgreSQL >= 0.4x; 2 workers >= 1 worker; worker mode's CPU per
task <= 1.5x embedded PostgreSQL's (the same store; SQLite's when PostgreSQL
was not measured); RSS growth < 100 KB per run in flight at 1,000 runs; and in
every mode every task SUCCEEDED, every agent still ACTIVE with 0 failures,
every run COMPLETED and no taskId received twice. The exit status is 1 when
one of those correctness checks fails, 0 otherwise (a missed speed target is
printed as FAIL, it does not stop ``make bench``).

How long: a round is cut after ``--timeout`` seconds (150), its unfinished
runs reported, and its mode stops there (runs left in flight would only slow
the next round down). On the project's 2-core machine the defaults with
``--rss-runs 1000`` took 2.5 to 4 minutes (2026-12-03). Shrink it with
``--modes``, ``--runs`` and ``--rounds``; ``--logs DIR`` keeps the
platform's logs (their ends are printed under any round with a problem);
``--profile DIR`` samples the platform's processes with py-spy during the
timed rounds (``docs/contributing/benchmarks.md`` says how to read it).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import hashlib
import hmac
import multiprocessing
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from cryptography.fernet import Fernet
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine
from yarl import URL

from palaestra import runtime

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import HOST, REDIS, cpu_seconds, forget_queue, free_port, parse_args
from palaestra.clock import SystemClock
from palaestra.ids import new_id
from palaestra.protocol import UserAgent, hmac_signer

POSTGRES = os.environ.get(
    "PALAESTRA_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1/test"
)
ADMIN = "pa_admin_bench_runs"
MODES = ("sqlite", "postgres", "workers1", "workers2")
ROLES = ("SCOUT", "BUILDER", "ANALYST")
PHASE_ROLE = {"SCOUT": "SCOUT", "BUILD": "BUILDER", "VERIFY": "ANALYST", "CRITIQUE": "ANALYST"}
SCOUTS_PER_RUN = 5  # the launchpad's default; the shortlist keeps 3
RUNS_PER_OWNER = 500  # an owner's runs are read 500 a page: one page per owner a poll
WARM_UP_RUNS = 10
POLL_S = 0.5
GOAL = "Find a business a solo developer can start"
#: Distinct ideas, one per scout, so that the shortlist keeps three (near-duplicates merge).
IDEAS = (
    "Timesheet-to-invoice autopilot for small design agencies",
    "Allergen label checker for independent bakeries",
    "Shift swap marketplace for hospital nurses",
    "Drone roof inspection reports for insurers",
    "Tenant maintenance triage by photo for landlords",
    "Customs paperwork assistant for Etsy exporters",
    "Grant deadline tracker for rural charities",
    "Used forklift pricing index for warehouse buyers",
    "Wedding vendor contract comparison for planners",
    "Solar panel cleaning route planner for installers",
    "Pharmacy stock expiry alerts for clinics",
    "Podcast sponsorship matching for niche hosts",
    "Fleet tyre wear forecasting for courier firms",
    "School bus delay notifications for parents",
    "Vineyard frost warning service for growers",
    "Dental no-show prediction for practice managers",
)


# Agents, in their own process.


def _outputs() -> dict[str, dict[str, Any]]:
    return {
        "BUILD": {
            "execution": {
                "objective": "Ship an MVP to ten paying customers",
                "phases": ["Interview ten customers", "Build the smallest useful tool"],
                "first_milestone": "Five paying pilots",
                "success_check": "Pilots renew after a month",
            },
            "claims": [{"type": "market", "text": "Customers pay for saved hours"}],
        },
        "VERIFY": {
            "evidence_assessments": [],
            "claim_assessments": [],
            "evidence_quality_score": 70,
            "claim_coverage_score": 60,
            "overall_confidence": "medium",
            "red_flags": [],
        },
        "CRITIQUE": {
            "strengths": ["Clear, recurring pain"],
            "weaknesses": ["Crowded market"],
            "score_adjustments": {},
            "penalty_points": 0,
            "verdict": "pass",
            "fatal_flaw": False,
        },
    }


def _scout_output(idea: str) -> dict[str, Any]:
    return {
        "candidate_title": idea,
        "target_customer": "Owners of small businesses with 5 to 20 people",
        "core_problem": "The work takes hours of admin every month",
        "proposed_solution": "A tool that does the work and drafts the result",
        "why_now": "The APIs it needs are stable and well documented",
        "claims": [{"type": "market", "text": "Owners pay to save hours"}],
        "evidence": [{"kind": "observation", "summary": "Owners say it takes a day a month"}],
    }


@dataclass
class _Ledger:
    """What reached the agents: production dispatches, their taskIds, and what was wrong."""

    dispatches: int = 0
    duplicates: int = 0
    bad_signatures: int = 0
    gets: int = 0
    seen: set[str] = field(default_factory=set)
    samples: dict[str, str] = field(default_factory=dict)  # phase -> a body as received

    def counts(self) -> dict[str, int]:
        return {
            "dispatches": self.dispatches,
            "duplicates": self.duplicates,
            "bad_signatures": self.bad_signatures,
            "gets": self.gets,
        }


def _signed_well(key: str | None, request: web.BaseRequest, raw: bytes, task_id: Any) -> bool:
    stamp = request.headers.get("x-edgearena-timestamp", "")
    if key is None or not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
        return False
    material = f"{stamp}\n{request.host}{request.path}\n".encode() + raw
    expected = "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
    given = request.headers.get("x-edgearena-signature", "")
    if task_id is not None and request.headers.get("x-edgearena-task-id") != task_id:
        return False
    return hmac.compare_digest(expected, given)


def _agents(conn: Connection) -> None:
    keys: dict[str, str] = {}  # path -> the agent's API key, set after registration
    ledger = _Ledger()
    outputs = _outputs()
    scout_outputs = {n: _scout_output(IDEAS[n % len(IDEAS)]) for n in range(len(IDEAS))}

    async def control(request: web.BaseRequest) -> web.StreamResponse:
        if request.path == "/_bench/keys":
            keys.update(orjson.loads(await request.read()))
            return web.json_response({"keys": len(keys)})
        if request.path == "/_bench/samples":
            return web.json_response(ledger.samples)
        return web.json_response(ledger.counts())

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        if request.path.startswith("/_bench/"):
            return await control(request)
        if request.method == "GET":  # the registration probe and the health pings
            ledger.gets += 1
            return web.Response(body=b'{"ok":true}', content_type="application/json")
        raw = await request.read()
        body = orjson.loads(raw)
        key = keys.get(request.path)
        role, _, number = request.path.strip("/").partition("-")
        kind = body.get("type")
        if kind is None:  # a production dispatch
            ledger.dispatches += 1
            task_id = body.get("taskId")
            if not _signed_well(key, request, raw, task_id):
                ledger.bad_signatures += 1
                return web.json_response({"error": "invalid signature"}, status=401)
            if task_id in ledger.seen:
                ledger.duplicates += 1
            ledger.seen.add(task_id)
            phase = body["phase"]
            ledger.samples.setdefault(phase, raw.decode())
            if phase == "SCOUT":
                output = scout_outputs[int(number) % len(IDEAS)]
            else:
                output = {**outputs[phase], "candidate_id": body.get("candidateId")}
            envelope = {
                "output": output,
                "promptTokens": 812,
                "completionTokens": 164,
                "modelId": "bench",
            }
            return web.Response(body=orjson.dumps(envelope), content_type="application/json")
        has_signature = "x-edgearena-signature" in request.headers
        if has_signature and not _signed_well(key, request, raw, None):
            return web.json_response({"error": "invalid signature"}, status=401)
        if kind == "handshake":
            return web.json_response({"ok": True, "protocol": "edgearena-v1"})
        # The wizard's simulation of the role.
        if role == "scout":
            return web.json_response(scout_outputs[int(number) % len(IDEAS)])
        candidate_id = (body.get("candidate") or {}).get("id")
        phase = "BUILD" if role == "builder" else "CRITIQUE"
        return web.json_response({**outputs[phase], "candidate_id": candidate_id})

    async def main() -> None:
        runner = web.ServerRunner(web.Server(handle), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, HOST, 0, backlog=4096)
        await site.start()
        conn.send(runner.addresses[0][1])
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:  # pragma: no cover
        asyncio.run(main())


@contextlib.contextmanager
def agents_process() -> Iterator[tuple[int, int]]:
    """The agents' port and process id."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=_agents, args=(child,), daemon=True)
    process.start()
    try:
        if not parent.poll(30):
            raise RuntimeError("the agents process did not start")
        assert process.pid is not None
        yield parent.recv(), process.pid
    finally:
        process.terminate()
        process.join(5)


# The platform's processes.


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Platform:
    """A running platform: its API's base URL and its processes."""

    base: str
    processes: list[subprocess.Popen[bytes]]
    logs: Path

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def cpu(self) -> list[float]:
        """CPU seconds of each process: serve, then the workers."""
        return [cpu_seconds(pid) for pid in self.pids]

    def rss(self) -> int:
        return sum(rss_bytes(pid) for pid in self.pids)

    def check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise RuntimeError(f"a platform process exited\n{tail(self.logs)}")


def tail(logs: Path, chars: int = 3000) -> str:
    """The end of every log of the platform's processes."""
    return "\n".join(
        f"== {path.name}\n{path.read_text(errors='replace')[-chars:]}"
        for path in sorted(logs.glob("*.log"))
    )


@contextlib.contextmanager
def started(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
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
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@contextlib.asynccontextmanager
async def database(mode: str) -> AsyncIterator[str | None]:
    """A PostgreSQL database of this bench's own for ``mode`` (None for SQLite), dropped after."""
    if mode == "sqlite":
        yield None
        return
    base = make_url(POSTGRES)
    name = f"palaestra_bench_runs_{os.getpid()}_{mode}"
    admin = create_async_engine(base, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as connection:
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield base.set(database=name).render_as_string(hide_password=False)
        finally:
            async with admin.connect() as connection:
                await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()


async def wait_until(what: str, ready: Any, platform: Platform, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while not await ready():
        platform.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{what} did not happen within {within_s:g} s\n{tail(platform.logs)}"
            )
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def platform(mode: str, folder: Path, logs: Path) -> AsyncIterator[Platform]:
    """``palaestra serve`` as an operator starts it for ``mode``, and its workers."""
    workers = {"workers1": 1, "workers2": 2}.get(mode, 0)
    queue = f"palaestra-bench-runs-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    port = free_port()
    base = f"http://{HOST}:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    env |= {
        "PALAESTRA_DATA_DIR": str(folder),
        "PALAESTRA_PUBLIC_URL": base,
        "PALAESTRA_ADMIN_TOKEN": ADMIN,
        "PALAESTRA_SECRET_KEY": Fernet.generate_key().decode(),
        "PALAESTRA_EGRESS_ALLOW": "127.0.0.0/8",
        "PALAESTRA_LOG_LEVEL": "WARNING",
        # The owners here start hundreds of runs at once, by design: no per-owner quota.
        "PALAESTRA_OWNER_RUNS_IN_FLIGHT": "0",
        "PALAESTRA_OWNER_RUNS_PER_HOUR": "0",
    }
    async with database(mode) as url:
        if url is not None:
            env["PALAESTRA_DATABASE_URL"] = url
        if workers:
            env |= {"PALAESTRA_BROKER_URL": REDIS, "PALAESTRA_BROKER_QUEUE": queue}
        serve = ["serve", "--port", str(port)] + (["--no-workers"] if workers else [])
        try:
            with contextlib.ExitStack() as stack:
                server = stack.enter_context(started(serve, env, logs / "serve.log"))
                running = Platform(base, [server], logs)
                async with aiohttp.ClientSession() as session:

                    async def healthy() -> bool:
                        try:
                            async with session.get(base + "/healthz") as response:
                                return response.status == 200
                        except aiohttp.ClientConnectionError:
                            return False

                    await wait_until("serve answering /healthz", healthy, running)
                for n in range(workers):
                    log = logs / f"worker-{n}.log"
                    running.processes.append(stack.enter_context(started(["worker"], env, log)))

                    async def ready(log: Path = log) -> bool:
                        said = await asyncio.to_thread(log.read_text, errors="replace")
                        return "worker running" in said

                    await wait_until(f"worker {n} running", ready, running)
                yield running
        finally:
            if workers:
                await forget_queue(queue)


# Through the API, as a user.


@dataclass
class Api:
    base: str
    session: aiohttp.ClientSession

    async def call(self, method: str, path: str, token: str = ADMIN, **kwargs: Any) -> Any:
        """The answer's JSON; a read is tried again when its connection was dropped."""
        body, _ = await self.answer(method, path, token, **kwargs)
        return body

    async def answer(
        self, method: str, path: str, token: str = ADMIN, **kwargs: Any
    ) -> tuple[Any, str | None]:
        """The answer's JSON and the path of its next page, if it is a page with a next."""
        headers = {"Authorization": f"Bearer {token}"}
        for attempt in range(3 if method == "GET" else 1):
            try:
                async with self.session.request(
                    method, self.base + path, headers=headers, **kwargs
                ) as response:
                    body = await response.json(content_type=None)
                    if response.status >= 300:
                        raise RuntimeError(f"{method} {path}: {response.status} {body}")
                    following = response.links.get("next")
                    return body, URL(following["url"]).path_qs if following else None
            except aiohttp.ClientConnectionError:
                if attempt == 2 or method != "GET":
                    raise
                await asyncio.sleep(0.2)
        raise AssertionError("unreachable")

    async def owner(self, name: str) -> str:
        created = await self.call("POST", "/api/owners", json={"name": name})
        return str(created["token"])

    async def every(self, path: str, token: str = ADMIN) -> list[Any]:
        """Every row of a paged list, following its next links (``Link: <...>; rel="next"``)."""
        rows: list[Any] = []
        following: str | None = path
        while following is not None:
            body, following = await self.answer("GET", following, token)
            rows += body
        return rows


@dataclass
class Agent:
    name: str
    role: str
    url: str
    key: str = ""


async def register(api: Api, agents_base: str, counts: dict[str, int]) -> list[Agent]:
    """Each agent registered and admitted through the API, as its owner would."""
    owner = await api.owner("bench-agents")
    agents = [
        Agent(f"{role.lower()}-{n}", role, f"{agents_base}/{role.lower()}-{n}")
        for role in ROLES
        for n in range(counts[role])
    ]
    for agent in agents:
        body = {"name": agent.name, "role": agent.role, "endpoint_url": agent.url}
        created = await api.call("POST", "/api/agents", owner, json=body)
        agent.key = created["api_key"]
        path = "/" + agent.url.rsplit("/", 1)[1]
        async with api.session.post(f"{agents_base}/_bench/keys", json={path: agent.key}) as r:
            r.raise_for_status()
        wizard = await api.call("POST", f"/api/agents/{created['agent_id']}/wizard", owner)
        if not wizard["passed"]:
            raise RuntimeError(f"{agent.name} was not admitted: {wizard}")
    return agents


async def agents_ledger(session: aiohttp.ClientSession, agents_base: str) -> dict[str, int]:
    async with session.get(f"{agents_base}/_bench/ledger") as response:
        counts: dict[str, int] = await response.json()
        return counts


@dataclass
class PlatformRound:
    runs: int
    elapsed_s: float
    tasks: int
    finished: int  # tasks no longer RUNNING: all of them, unless the round was cut
    cpu_each: list[float]  # CPU seconds of serve, then of each worker
    rss_before: int
    rss_peak: int
    unfinished: collections.Counter[str]  # run status (RUNNING: timed out) -> runs
    by_phase: collections.Counter[str]
    bad_tasks: collections.Counter[tuple[str, str]]  # (status, reason) -> tasks
    house: int  # tasks the house served (after re-routes)
    bad_agents: list[str]
    ledger: dict[str, int]  # the agents' counts during the round

    @property
    def rate(self) -> float:
        return self.finished / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def cpu_s(self) -> float:
        return sum(self.cpu_each)

    @property
    def cpu_per_task_ms(self) -> float:
        return 1000 * self.cpu_s / self.finished if self.finished else float("nan")

    @property
    def cut(self) -> bool:
        """The round ran out of time with runs still going."""
        return bool(self.unfinished["RUNNING"] + self.unfinished["not listed"])

    @property
    def rss_growth_kb(self) -> float:
        return (self.rss_peak - self.rss_before) / 1024 / self.runs

    @property
    def problems(self) -> list[str]:
        found = []
        if self.unfinished:
            found.append(f"runs not COMPLETED: {dict(self.unfinished)}")
        if self.bad_tasks:
            found.append(
                "tasks not SUCCEEDED: "
                + ", ".join(f"{n} {s} ({r})" for (s, r), n in self.bad_tasks.most_common())
            )
        if self.bad_agents:
            found.append("agents not ACTIVE with 0 failures: " + ", ".join(self.bad_agents))
        if self.ledger["duplicates"]:
            found.append(f"taskIds received twice: {self.ledger['duplicates']}")
        if self.ledger["bad_signatures"]:
            found.append(f"dispatches badly signed: {self.ledger['bad_signatures']}")
        return found


@contextlib.contextmanager
def profiled(running: Platform, profile: Path | None, name: str) -> Iterator[None]:
    """With ``profile``, ``py-spy record`` on each platform process while the block runs: a
    raw (collapsed) stack file per process, of the samples holding the GIL."""
    if profile is None:
        yield
        return
    profile.mkdir(parents=True, exist_ok=True)
    beside = Path(sys.executable).with_name("py-spy")  # installed in the same environment
    spy_command = str(beside) if beside.exists() else "py-spy"
    spies = [
        subprocess.Popen(
            [
                spy_command,
                "record",
                "--gil",
                "--rate",
                "250",
                "--format",
                "raw",
                "--pid",
                str(pid),
                "--output",
                str(profile / f"{name}-{n}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n, pid in enumerate(running.pids)
    ]
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled, then exits
        for spy in spies:
            spy.wait(30)


async def platform_round(
    api: Api,
    running: Platform,
    agents_base: str,
    runs: int,
    timeout_s: float,
    profile: Path | None = None,
) -> PlatformRound:
    """``runs`` runs started at once and followed to their end, through the API; with
    ``profile``, the platform's processes are sampled while they are (:func:`profiled`)."""
    tokens = [await api.owner(f"bench-{n}") for n in range(-(-runs // RUNS_PER_OWNER))]
    before = await agents_ledger(api.session, agents_base)
    rss_before, rss_peak = running.rss(), 0
    sampling = True

    async def sample_rss() -> None:
        nonlocal rss_peak
        while sampling:
            rss_peak = max(rss_peak, running.rss())
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample_rss())
    spying = contextlib.ExitStack()
    spying.enter_context(profiled(running, profile, f"{runs}-runs-{time.time():.0f}"))
    cpu, started_at = running.cpu(), time.time()

    async def start(n: int) -> tuple[str, str]:
        token = tokens[n // RUNS_PER_OWNER]
        created = await api.call("POST", "/api/runs", token, json={"goal": f"{GOAL} ({n})"})
        return str(created["run_id"]), token

    owner_of = dict(await asyncio.gather(*(start(n) for n in range(runs))))
    deadline = time.monotonic() + timeout_s
    statuses: dict[str, str] = {}
    finished_at: dict[str, float] = {}
    while True:
        for token in tokens:
            for run in await api.every("/api/runs?limit=500", token):
                if run["run_id"] in owner_of:
                    statuses[run["run_id"]] = run["status"]
                    if run["finished_at"] is not None:
                        finished_at[run["run_id"]] = run["finished_at"]
        if all(statuses.get(run_id) not in (None, "RUNNING") for run_id in owner_of):
            break
        running.check_alive()
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(POLL_S)
    cpu = [after - before for after, before in zip(running.cpu(), cpu, strict=True)]
    spying.close()
    ended = max(finished_at.values()) if len(finished_at) == runs else time.time()
    sampling = False
    await sampler
    after = await agents_ledger(api.session, agents_base)

    reading = asyncio.Semaphore(16)

    async def detail(run_id: str) -> Any:
        async with reading:
            return await api.call("GET", f"/api/runs/{run_id}", owner_of[run_id])

    details = await asyncio.gather(*(detail(run_id) for run_id in owner_of))
    by_phase: collections.Counter[str] = collections.Counter()
    bad_tasks: collections.Counter[tuple[str, str]] = collections.Counter()
    house = finished = 0
    for run in details:
        for task in run["tasks"]:
            by_phase[task["phase"]] += 1
            finished += task["status"] != "RUNNING"
            house += task["agent_id"] is None
            if task["status"] != "SUCCEEDED":
                bad_tasks[(task["status"], task["reason"] or "no reason")] += 1
    unfinished = collections.Counter(statuses.get(run_id, "not listed") for run_id in owner_of)
    del unfinished["COMPLETED"]
    agents = await api.every("/api/agents?limit=1000")
    bad_agents = [
        f"{a['name']} {a['status']} ({a['consecutive_failures']} failures)"
        for a in agents
        if a["status"] != "ACTIVE" or a["consecutive_failures"]
    ]
    return PlatformRound(
        runs=runs,
        elapsed_s=ended - started_at,
        tasks=sum(by_phase.values()),
        finished=finished,
        cpu_each=cpu,
        rss_before=rss_before,
        rss_peak=max(rss_peak, rss_before),
        unfinished=unfinished,
        by_phase=by_phase,
        bad_tasks=bad_tasks,
        house=house,
        bad_agents=bad_agents,
        ledger={k: after[k] - before[k] for k in after},
    )


# The bare loop, in this process.


@dataclass
class BareRound:
    posts: int
    elapsed_s: float
    cpu_s: float
    failures: collections.Counter[str]

    @property
    def rate(self) -> float:
        return self.posts / self.elapsed_s

    @property
    def cpu_per_task_ms(self) -> float:
        return 1000 * self.cpu_s / self.posts


def bare_bodies(
    samples: dict[str, str], by_phase: collections.Counter[str], agents: Sequence[Agent]
) -> list[tuple[Agent, bytes, str]]:
    """As many bodies as the platform sent, phase by phase, each the body an agent received
    for that phase with a fresh taskId, bound for an agent of the phase's role in turn."""
    by_role = {role: [a for a in agents if a.role == role] for role in ROLES}
    bodies = []
    for phase, count in sorted(by_phase.items()):
        template = orjson.loads(samples[phase])
        chosen = by_role[PHASE_ROLE[phase]]
        for n in range(count):
            task_id = new_id()
            raw = orjson.dumps({**template, "taskId": task_id})
            bodies.append((chosen[n % len(chosen)], raw, task_id))
    return bodies


async def bare_round(bodies: Sequence[tuple[Agent, bytes, str]], concurrency: int) -> BareRound:
    """Every body signed with its agent's key (the protocol's signer) and POSTed,
    ``concurrency`` at once."""
    semaphore = asyncio.Semaphore(concurrency)
    clock = SystemClock()
    failures: collections.Counter[str] = collections.Counter()
    timeout = aiohttp.ClientTimeout(total=30)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(agent: Agent, raw: bytes, task_id: str) -> None:
            async with semaphore:
                headers = {
                    "Content-Type": "application/json",
                    "User-Agent": UserAgent.DISPATCH.value,
                    **hmac_signer(agent.key, clock, task_id)(agent.url, raw),
                }
                try:
                    async with session.post(agent.url, data=raw, headers=headers) as response:
                        data = orjson.loads(await response.read())
                        if response.status != 200 or not isinstance(data, dict):
                            failures[f"HTTP {response.status}"] += 1
                except (aiohttp.ClientError, TimeoutError) as exc:
                    failures[type(exc).__name__] += 1

        started_at, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(*body) for body in bodies))
        elapsed, cpu = time.perf_counter() - started_at, time.process_time() - cpu
    return BareRound(len(bodies), elapsed, cpu, failures)


# One mode.


@dataclass
class ModeResult:
    mode: str
    platform: list[PlatformRound] = field(default_factory=list)
    bare: list[BareRound] = field(default_factory=list)
    warm_up: PlatformRound | None = None
    memory: PlatformRound | None = None  # the --rss-runs round, or the first timed one
    error: str | None = None  # why the mode stopped before its rounds were done

    @property
    def measured(self) -> bool:
        return bool(self.platform and self.bare)

    @property
    def platform_rate(self) -> float:
        return statistics.median(r.rate for r in self.platform)

    @property
    def bare_rate(self) -> float:
        return statistics.median(r.rate for r in self.bare)

    @property
    def platform_cpu_ms(self) -> float:
        return statistics.median(r.cpu_per_task_ms for r in self.platform)

    @property
    def bare_cpu_ms(self) -> float:
        return statistics.median(r.cpu_per_task_ms for r in self.bare)

    @property
    def ratio(self) -> float:
        return self.platform_rate / self.bare_rate

    @property
    def paired_ratio(self) -> float:
        pairs = zip(self.platform, self.bare, strict=False)
        return statistics.median(p.rate / b.rate for p, b in pairs)

    @property
    def checked(self) -> list[PlatformRound]:
        """Every platform round, the warm-up included: each must have run cleanly."""
        rounds = [self.warm_up, self.memory, *self.platform]
        unique = {id(r): r for r in rounds if r is not None}
        return list(unique.values())


def describe(round_: PlatformRound) -> str:
    ended = f"{round_.finished:,} of {round_.tasks:,}" if round_.cut else f"{round_.tasks:,}"
    split = ""
    if len(round_.cpu_each) > 1 and round_.finished:
        shares = [f"{1000 * cpu / round_.finished:.2f}" for cpu in round_.cpu_each]
        split = f" (serve {shares[0]} + workers {' + '.join(shares[1:])})"
    line = (
        f"{round_.runs} runs, {ended} tasks in {round_.elapsed_s:.1f} s: "
        f"{round_.rate:,.0f} tasks/s, {round_.cpu_per_task_ms:.2f} ms CPU per task{split}, "
        f"RSS {round_.rss_before / 2**20:,.0f} -> {round_.rss_peak / 2**20:,.0f} MiB"
    )
    if round_.house:
        line += f", {round_.house} served by the house"
    return line + "".join(f"\n      PROBLEM: {p}" for p in round_.problems)


async def run_mode(result: ModeResult, args: argparse.Namespace, folder: Path) -> None:
    """Fill ``result`` round by round, so that what was measured survives a failure."""
    mode = result.mode
    logs = args.logs / mode if args.logs else folder
    logs.mkdir(parents=True, exist_ok=True)
    concurrency = args.runs * SCOUTS_PER_RUN
    counts = dict(zip(ROLES, args.agents_per_role, strict=True))
    with agents_process() as (port, agents_pid):
        agents_base = f"http://{HOST}:{port}"
        async with (
            platform(mode, folder, logs) as running,
            aiohttp.ClientSession(
                # Idle connections are dropped before uvicorn drops them (after 5 s), so that a
                # request is not sent on a connection the server is closing.
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=2),
                timeout=aiohttp.ClientTimeout(total=args.timeout),
            ) as session,
        ):
            api = Api(running.base, session)
            agents = await register(api, agents_base, counts)
            warm = await platform_round(api, running, agents_base, WARM_UP_RUNS, args.timeout)
            result.warm_up = warm
            print(f"  {mode}: warm-up {describe(warm)}", flush=True)
            async with session.get(f"{agents_base}/_bench/samples") as response:
                samples = await response.json()
            await bare_round(bare_bodies(samples, warm.by_phase, agents)[:200], 100)
            runtime.settle()
            if args.rss_runs:
                result.memory = await platform_round(
                    api, running, agents_base, args.rss_runs, args.timeout
                )
                print(f"  {mode}: memory round {describe(result.memory)}", flush=True)
            by_phase = warm.by_phase  # replaced by each platform round's, which goes first
            for round_ in range(args.rounds):
                order = ["platform", "bare"] if round_ % 2 == 0 else ["bare", "platform"]
                for contender in order:
                    if contender == "platform":
                        done = await platform_round(
                            api, running, agents_base, args.runs, args.timeout, args.profile
                        )
                        result.platform.append(done)
                        by_phase = done.by_phase
                        if result.memory is None:
                            result.memory = done
                    else:
                        bodies = bare_bodies(samples, by_phase, agents)
                        result.bare.append(await bare_round(bodies, concurrency))
                bare, last = result.bare[-1], result.platform[-1]
                print(
                    f"  {mode}: round {round_ + 1}: platform {describe(last)}\n"
                    f"      bare aiohttp {bare.posts:,} POSTs, {concurrency} at once, in "
                    f"{bare.elapsed_s:.1f} s: {bare.rate:,.0f} req/s, "
                    f"{bare.cpu_per_task_ms:.2f} ms CPU each"
                    + (f", FAILED: {dict(bare.failures)}" if bare.failures else ""),
                    flush=True,
                )
                if last.problems:
                    print(textwrap.indent(tail(logs, 1500), "      | "), flush=True)
                if last.cut:  # the runs left would only slow the next round down
                    print(f"  {mode}: the round ran out of time: no more rounds", flush=True)
                    break
            cpu_agents = cpu_seconds(agents_pid)
            print(f"  {mode}: the agents' process used {cpu_agents:.1f} s CPU in all", flush=True)


# The report.


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def report(results: dict[str, ModeResult], args: argparse.Namespace) -> bool:
    """The table and a line per target; whether every correctness check passed."""
    print(
        f"\nWhole runs: {args.runs} runs at once (5 scouts, shortlist 3), medians of "
        f"{args.rounds} alternating rounds, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} (a shared machine's figures are noisy)"
    )
    print(
        f"  {'mode':<9} {'tasks/s':>8} {'bare req/s':>10} {'ratio':>6} {'paired':>6} "
        f"{'CPU ms/task':>11} {'bare CPU ms':>11} {'RSS KB/run':>10}"
    )
    for mode, result in results.items():
        memory = result.memory
        growth = f"{memory.rss_growth_kb:.0f}@{memory.runs}" if memory else "n/a"
        if not result.measured:
            print(f"  {mode:<9} not measured: {result.error or 'no round finished'}")
            continue
        print(
            f"  {mode:<9} {result.platform_rate:>8,.0f} {result.bare_rate:>10,.0f} "
            f"{result.ratio:>5.2f}x {result.paired_ratio:>5.2f}x {result.platform_cpu_ms:>11.2f} "
            f"{result.bare_cpu_ms:>11.2f} {growth:>10}"
            + (f"  (stopped: {result.error})" if result.error else "")
        )
    print()

    def missing(*modes: str) -> str | None:
        absent = [m for m in modes if not results[m].measured]
        return f"FAIL  not measured: {', '.join(absent)} did not finish a round" if absent else None

    for mode, floor in {"sqlite": 0.5, "postgres": 0.4}.items():
        if mode in results:
            if gap := missing(mode):
                print(f"{gap} ({mode} >= {floor}x the bare loop)")
                continue
            ratio = results[mode].ratio
            print(f"{verdict(ratio >= floor)}  {mode}: {ratio:.2f}x the bare loop (>= {floor}x)")
    if "workers1" in results and "workers2" in results:
        if gap := missing("workers1", "workers2"):
            print(f"{gap} (2 workers >= 1 worker)")
        else:
            one, two = results["workers1"].platform_rate, results["workers2"].platform_rate
            print(f"{verdict(two >= one)}  2 workers {two:,.0f} tasks/s >= 1 worker {one:,.0f}")
    embedded = next((results[m] for m in ("postgres", "sqlite") if m in results), None)
    for mode in ("workers1", "workers2"):
        if mode in results and embedded is not None:
            if gap := missing(mode, embedded.mode):
                print(f"{gap} ({mode}'s CPU per task <= 1.5x embedded {embedded.mode}'s)")
                continue
            mine, theirs = results[mode].platform_cpu_ms, embedded.platform_cpu_ms
            print(
                f"{verdict(mine <= 1.5 * theirs)}  {mode}: {mine:.2f} ms CPU per task <= 1.5x "
                f"embedded {embedded.mode}'s {theirs:.2f} ms ({mine / theirs:.2f}x)"
            )
    for mode, result in results.items():
        memory = result.memory
        if memory is None:
            print(f"FAIL  {mode}: RSS growth not measured (< 100 KB per run in flight)")
            continue
        at = "" if memory.runs >= 1000 else " (the target is at 1,000: --rss-runs 1000)"
        print(
            f"{verdict(memory.rss_growth_kb < 100)}  {mode}: RSS growth "
            f"{memory.rss_growth_kb:.0f} KB per run in flight at {memory.runs} runs "
            f"(< 100 KB){at}"
        )
    correct = True
    for mode, result in results.items():
        problems = [p for r in result.checked for p in r.problems]
        problems += [f"bare loop: {dict(b.failures)}" for b in result.bare if b.failures]
        if result.error:
            problems.append(f"stopped: {result.error}")
        correct = correct and not problems
        runs = sum(r.runs for r in result.checked)
        tasks = sum(r.tasks for r in result.checked)
        print(
            f"{verdict(not problems)}  {mode}: {runs:,} runs, {tasks:,} tasks: every run "
            "COMPLETED, every task SUCCEEDED, every agent ACTIVE with 0 failures, no taskId "
            "received twice" + "".join(f"\n      {p}" for p in problems)
        )
    return correct


async def main(args: argparse.Namespace) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * max(args.runs, args.rss_runs or 0) * SCOUTS_PER_RUN + 1000
    if soft < wanted:  # the bare loop's connections, and the agents' (the process inherits it)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, wanted), hard))
    results = {}
    for mode in args.modes:
        print(f"== {mode}", flush=True)
        results[mode] = result = ModeResult(mode)
        try:
            with tempfile.TemporaryDirectory(prefix=f"palaestra-bench-{mode}-") as folder:
                await run_mode(result, args, Path(folder))
        except Exception as exc:  # the next modes still run; the report says this one failed
            traceback.print_exc()
            result.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return 0 if report(results, args) else 1


def run(job: Coroutine[Any, Any, int]) -> int:
    """On uvloop, as ``palaestra serve`` runs (uvicorn[standard]), when it is installed."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(job)
    return uvloop.run(job)


def modes(value: str) -> list[str]:
    chosen = [m.strip() for m in value.split(",") if m.strip()]
    unknown = set(chosen) - set(MODES)
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(MODES)}")
    return chosen


def per_role(value: str) -> list[int]:
    counts = [int(n) for n in value.split(",")]
    if len(counts) != 3 or counts[0] < SCOUTS_PER_RUN or min(counts) < 2:
        raise argparse.ArgumentTypeError(
            f"scouts,builders,analysts: at least {SCOUTS_PER_RUN} scouts and 2 of the others"
        )
    return counts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs started at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", type=modes, default=list(MODES), help=",".join(MODES))
    parser.add_argument(
        "--agents-per-role", type=per_role, default=[8, 4, 6], help="scouts,builders,analysts"
    )
    parser.add_argument(
        "--timeout", type=float, default=150, help="seconds a round may take before it is cut"
    )
    parser.add_argument(
        "--rss-runs", type=int, default=0, help="add a round of this many runs for memory"
    )
    parser.add_argument(
        "--logs", type=Path, help="keep the platform processes' logs here, a folder per mode"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="sample the platform's processes with py-spy during the timed rounds, "
        "a raw stack file per process and round in this folder",
    )
    # Quick: the embedded mode and the worker mode (with PostgreSQL) take every path once.
    quick = {"runs": 4, "rounds": 1, "agents_per_role": [5, 2, 2], "modes": ["sqlite", "workers2"]}
    parsed = parse_args(parser, quick)
    sys.exit(run(main(parsed)))
