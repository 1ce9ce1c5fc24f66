"""The chaos soak: a scale-out Palaestra under steady load, hostile agents and killed processes.

    .venv/bin/python bench/chaos.py [--minutes 5] [--run-every 2] [--match-every 1.5]
                                     [--quick]

`palaestra serve --no-workers` and two `palaestra worker` processes on PostgreSQL (a
database of the soak's own, dropped afterwards) and a Redis server of its own (a free
loopback port, its data in a temporary folder). For ``--minutes`` the soak starts runs and
cage matches at a steady pace, and tries bad inputs on the API, against a zoo of agents
served from a process of their own (``bench/_chaos_zoo.py``): good ones, and hostile ones
(a slow drip, an endless body, a gzip bomb, a redirect, an untrusted TLS certificate, a 5xx
storm, a schema breaker, flapping health, doubled and replayed callbacks, late callbacks, a
harness that hangs, a fighter that answers 256 KiB + 1). While the load runs it injects
faults: SIGKILL of a worker (restarted), SIGKILL of the API process (restarted), a Redis
restart, PostgreSQL connections dropped, SIGKILL of the other worker.

When the load stops and everything started has ended, it checks (``bench/_chaos_checks.py``)
and prints: every run and match ended; no taskId reached an agent twice and no turn was
played twice; no task or turn stayed RUNNING past its deadline; good agents never charged;
hostile agents charged only for what they did, with the seed's reason lines; the RSS of every
process over time, under a bound; no secret in any log line, export, or (for a match not yet
ended, its access code) API answer. The exit status is 1 on any violation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
import orjson
from sqlalchemy import func, make_url, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from tests.acceptance.cluster import holder_of

from bench._chaos_checks import (
    Check,
    Outage,
    page_split,
    read_facts,
    run_checks,
    secrets_found,
)
from bench._chaos_cluster import ADMIN, Cluster, Rss, cluster, drop_connections, environment
from bench._chaos_cluster import redis_server as own_redis
from bench._chaos_zoo import ASYNC_EDGE, FIGHTERS, GOOD_EDGE, HOSTILE_EDGE, zoo_process
from bench._support import POSTGRES, bench_database, parse_args
from palaestra.store.models import Match, Task, Turn

#: What the platform runs under: short deadlines (SCOUT, VERIFY, CRITIQUE 6 s, BUILD 18 s;
#: cage turns 4 s), quick recovery, health pings every 6 s (ACTIVE) and 1.2 s (degraded).
SETTINGS: Final = {
    "dispatch_deadline_scale": "0.2",
    "cage_turn_deadline_ms": "4000",
    "broker_redelivery_s": "2",
    "sweep_interval_s": "1",
    "health_interval_scale": "0.02",
    "matchmaking_enabled": "false",
    "owner_matches_in_flight": "0",
    "owner_matches_per_hour": "0",
}
SIZES: Final = {"scouts": 4, "shortlist": 2, "builds": 1, "verifies": 1, "critiques": 1}
#: The fighters' pairings, in turn: good against good, and each hostile fighter on each side.
PAIRS: Final = [
    ("red", "blue"),
    ("blue", "hang"),
    ("green", "red"),
    ("big", "green"),
    ("blue", "green"),
    ("hang", "red"),
    ("red", "big"),
]
#: A task or turn still RUNNING this long past its deadline is a violation (the stepper ends
#: it 5 s after; a fault's outage and a job's redelivery may hold it up a little more).
OVERDUE_S: Final = 45.0
RSS_BOUND_KB: Final = 600 * 1024
DRAIN_S: Final = 150.0
#: (fraction of the load's time, the fault)
FAULTS: Final = [
    (0.15, "kill worker-1"),
    (0.30, "kill serve"),
    (0.45, "restart redis"),
    (0.60, "drop postgres connections"),
    (0.75, "kill worker-2"),
]


@dataclass
class Soak:
    """What the soak knows while it runs."""

    cluster: Cluster
    engine: AsyncEngine
    database: str
    zoo: str
    session: aiohttp.ClientSession
    redis: Any
    rss: Rss = field(default_factory=Rss)
    ids: dict[str, str] = field(default_factory=dict)
    fighter_ids: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    matches: list[str] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)
    bad_inputs: Counter[str] = field(default_factory=Counter)
    faults: list[str] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    overdue_max_s: float = 0.0
    peeks: int = 0
    zoo_pid: int = 0
    callbacks: dict[str, dict[str, int]] = field(default_factory=dict)
    #: How long a fault waits for its moment (a request in flight, a callback due).
    patience_s: float = 10.0
    #: The bad inputs come from another loopback address (127.0.0.2): the API throttles
    #: guessing per address, and the soak's own calls must not pay for them.
    stranger: aiohttp.ClientSession | None = None

    def extra_pids(self) -> dict[str, int]:
        pids = {"zoo": self.zoo_pid}
        if self.redis.process is not None and self.redis.process.poll() is None:
            pids["redis"] = self.redis.process.pid
        return pids

    async def call(
        self,
        method: str,
        path: str,
        token: str | None = ADMIN,
        via: aiohttp.ClientSession | None = None,
        **kw: Any,
    ) -> tuple[int, Any]:
        headers = kw.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with (via or self.session).request(
            method, self.cluster.base + path, headers=headers, **kw
        ) as response:
            return response.status, await response.json(content_type=None)

    async def expect(self, status: int, method: str, path: str, **kw: Any) -> Any:
        got, body = await self.call(method, path, **kw)
        if got != status:
            raise RuntimeError(f"{method} {path}: {got} {body}")
        return body


async def register(soak: Soak, tls_port: int) -> None:
    """Every agent and fighter through the API, as their owners would; then arm the zoo."""
    keys: dict[str, str] = {}
    owners = {}
    for kind in ("good", "hostile"):
        owner = await soak.expect(201, "POST", "/api/owners", json={"name": f"{kind}-owner"})
        owners[kind] = owner["token"]
        soak.secrets[owner["token"]] = f"{kind} owner's token"
    agents = {**GOOD_EDGE, **{name: role for name, (role, _) in HOSTILE_EDGE.items()}}
    for name, role in agents.items():
        token = owners["good" if name in GOOD_EDGE else "hostile"]
        body = {"name": name, "role": role, "endpoint_url": f"{soak.zoo}/{name}"}
        created = await soak.expect(201, "POST", "/api/agents", token=token, json=body)
        soak.ids[name] = created["agent_id"]
        keys[name] = created["api_key"]
        soak.secrets[created["api_key"]] = f"{name}'s key"
        await control(
            soak, "_keys", {"keys": {name: keys[name]}, "platform_url": soak.cluster.base}
        )
        wizard = await soak.expect(
            200, "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
        )
        if not wizard["passed"]:
            raise RuntimeError(f"{name} did not pass the wizard: {wizard}")
    for name in FIGHTERS:
        owner = await soak.expect(201, "POST", "/api/owners", json={"name": f"{name}-fighter"})
        soak.secrets[owner["token"]] = f"{name}'s owner's token"
        body = {"name": name, "entrant_type": "harness", "class": "rogue"}
        created = await soak.expect(201, "POST", "/api/fighters", token=owner["token"], json=body)
        soak.secrets[created["claim_code"]] = f"{name}'s claim code"
        claim = {
            "fighter_id": created["fighter_id"],
            "claim_code": created["claim_code"],
            "url": f"{soak.zoo}/{name}",
            "harness_name": name,
            "sandbox_attested": True,
        }
        await soak.expect(200, "POST", "/api/fighters/endpoint", token=None, json=claim)
        soak.fighter_ids[name] = created["fighter_id"]
    await control(soak, "_arm", {})
    # The TLS agent moves to the zoo's TLS port, whose certificate nobody trusts.
    async with soak.engine.begin() as connection:
        await connection.execute(
            text("UPDATE agents SET endpoint_url = :url WHERE id = :id"),
            {"url": f"https://127.0.0.1:{tls_port}/tls", "id": soak.ids["tls"]},
        )


async def control(soak: Soak, path: str, body: dict[str, Any]) -> Any:
    async with soak.session.post(f"{soak.zoo}/{path}", data=orjson.dumps(body)) as response:
        return await response.json(content_type=None)


async def every(seconds: float, until: float, step: Callable[[int], Awaitable[None]]) -> None:
    for n in itertools.count():
        if time.monotonic() >= until:
            return
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
            await step(n)
        await asyncio.sleep(seconds)


def _answered(soak: Soak, what: str, status: int) -> None:
    soak.answers[f"{what} {status}"] += 1
    if status >= 500 and status != 503:
        soak.violations.append(f"{what} answered {status}")


async def start(soak: Soak, what: str, body: dict[str, Any], started: list[str]) -> None:
    """POST a run or a match (``what``: runs, matches) as the admin; note its id."""
    try:
        status, answer = await soak.call("POST", f"/api/{what}", json=body)
    except aiohttp.ClientConnectionError:
        soak.answers[f"POST /api/{what} refused (API down)"] += 1
        return
    _answered(soak, f"POST /api/{what}", status)
    if status == 202:
        started.append(answer["run_id" if what == "runs" else "match_id"])


async def start_run(soak: Soak, n: int) -> None:
    body = {"goal": f"A business, take {n}", "sizes": SIZES}
    await start(soak, "runs", body, soak.runs)


async def start_match(soak: Soak, n: int) -> None:
    attacker, defender = PAIRS[n % len(PAIRS)]
    pair = {"attacker": soak.fighter_ids[attacker], "defender": soak.fighter_ids[defender]}
    await start(soak, "matches", pair, soak.matches)


#: Bad inputs tried on the API while it runs: (label, method, path, keyword arguments).
BAD_INPUTS: Final[list[tuple[str, str, str, dict[str, Any]]]] = [
    ("invalid JSON", "POST", "/api/runs", {"data": b"{not json"}),
    ("oversized body", "POST", "/api/runs", {"data": b'{"goal": "' + b"x" * (2 << 20) + b'"}'}),
    ("unknown fighter", "POST", "/api/matches", {"json": {"attacker": "x", "defender": "y"}}),
    ("wrong method", "DELETE", "/api/runs", {}),
    ("bad token", "GET", "/api/agents", {"token": "pa_not_a_token"}),
    ("forged callback", "POST", "/api/agent-tasks/{task}/complete", {}),
]


async def bad_input(soak: Soak, n: int) -> None:
    label, method, path, kw = BAD_INPUTS[n % len(BAD_INPUTS)]
    if "{task}" in path:  # a real task's callback, signed with a key that is not its agent's
        async with soak.engine.connect() as connection:
            newest = select(Task.id).order_by(Task.created_at.desc()).limit(1)
            task = (await connection.execute(newest)).scalar() or "0"
        path = path.format(task=task)
        body = {"taskId": task, "output": {}, "promptTokens": 1, "completionTokens": 1}
        stamp = str(int(time.time()))
        forged = {"x-edgearena-timestamp": stamp, "x-edgearena-signature": "sha256=" + "0" * 64}
        kw = {"data": orjson.dumps({**body, "modelId": "m"}), "headers": forged, "token": None}
    try:
        status, _ = await soak.call(method, path, **{"token": ADMIN, "via": soak.stranger, **kw})
    except aiohttp.ClientConnectionError:
        return
    soak.bad_inputs[f"{label} -> {status}"] += 1
    if status >= 500 and status != 503:
        soak.violations.append(f"bad input ({label}) answered {status}")


async def watch(soak: Soak, n: int) -> None:
    """RSS, tasks and turns overdue, and a running match's access code kept from the API."""
    soak.rss.sample({**soak.cluster.pids(), **soak.extra_pids()})
    now = time.time()
    async with soak.engine.connect() as connection:
        task_late = (
            await connection.execute(
                select(func.min(func.coalesce(Task.deadline_at, Task.created_at + 18))).where(
                    Task.status == "RUNNING"
                )
            )
        ).scalar()
        turn_late = (
            await connection.execute(
                select(func.min(Turn.started_at + Match.deadline_ms / 1000.0))
                .join(Match, Match.id == Turn.match_id)
                .where(Turn.status == "RUNNING")
            )
        ).scalar()
        running = (
            await connection.execute(
                select(Match.id, Match.material).where(Match.status == "RUNNING").limit(1)
            )
        ).first()
    for what, due in (("task", task_late), ("turn", turn_late)):
        if due is not None:
            soak.overdue_max_s = max(soak.overdue_max_s, now - due)
            if now - due > OVERDUE_S:
                soak.violations.append(f"a {what} RUNNING {now - due:.0f} s past its deadline")
    if running is not None:
        with contextlib.suppress(aiohttp.ClientConnectionError):
            _, body = await soak.call("GET", f"/api/matches/{running.id}", token=None)
            soak.peeks += 1
            code = running.material.get("access_code", "")
            if code and code in orjson.dumps(body).decode():
                soak.violations.append(f"match {running.id}'s access code shown while it runs")


async def inject(soak: Soak, fault: str) -> None:
    began = time.monotonic()
    cluster = soak.cluster
    if fault.startswith("kill "):
        name = fault.split()[1]
        if name.startswith("worker") and await mid_request(soak, name, soak.patience_s):
            fault += " mid-request"
        if name == "serve" and await callback_due(soak, soak.patience_s):
            fault += " with a callback due"
        killed = time.time()
        cluster.kill(name)
        await asyncio.sleep(1.0)
        cluster.start(name)
        if name == "serve":
            await cluster.wait_up(soak.session)
            soak.outages.append((killed, time.time()))
    elif fault == "restart redis":
        await asyncio.to_thread(soak.redis.restart, 2.0)
    else:
        dropped = await drop_connections(soak.engine, soak.database)
        fault += f" ({dropped} dropped)"
    at, took = time.monotonic() - soak.rss.started, time.monotonic() - began
    soak.faults.append(f"{at:6.1f} s  {fault}: back in {took:.1f} s")


async def mid_request(soak: Soak, name: str, within_s: float) -> bool:
    """Wait (a while) until worker ``name`` holds a request an agent is answering now."""
    pid = soak.cluster.pids().get(name)
    if pid is None:
        return False  # it exited on its own: the end's checks say so
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for port in (await control_get(soak, "_in_flight"))["ports"]:
            if holder_of(port, [pid]) == pid:
                return True
        await asyncio.sleep(0.02)
    return False


async def callback_due(soak: Soak, within_s: float) -> bool:
    """Wait (a while) until an agent that answers by callback (and not late) has one to make."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        due = (await control_get(soak, "_in_flight"))["callbacks"]
        if any(name in due for name in (*ASYNC_EDGE, "replay")):
            return True
        await asyncio.sleep(0.02)
    return False


async def faults(soak: Soak, began: float, load_s: float) -> None:
    for at, fault in FAULTS:
        await asyncio.sleep(max(0.0, began + at * load_s - time.monotonic()))
        await inject(soak, fault)


async def drain(soak: Soak) -> float:
    """Until every run and match started has ended; the seconds it took."""
    began = time.monotonic()
    while time.monotonic() - began < DRAIN_S:
        await watch(soak, 0)
        async with soak.engine.connect() as connection:
            running = (
                await connection.execute(
                    text(
                        "SELECT (SELECT count(*) FROM runs WHERE status = 'RUNNING')"
                        " + (SELECT count(*) FROM matches WHERE status IN ('PENDING', 'RUNNING'))"
                    )
                )
            ).scalar()
        if not running:
            break
        await asyncio.sleep(1.0)
    return time.monotonic() - began


def export(soak: Soak, folder: Path) -> list[Path]:
    """`palaestra export` of everything finished; the files it wrote."""
    out = folder / "export"
    subprocess.run(
        [sys.executable, "-m", "palaestra", "export", "--out", str(out)],
        env=soak.cluster.env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return sorted(path for path in out.rglob("*") if path.is_file())


async def access_codes(soak: Soak) -> dict[str, str]:
    async with soak.engine.connect() as connection:
        rows = (await connection.execute(select(Match.id, Match.material))).all()
    return {
        row.material["access_code"]: f"match {row.id}'s access code"
        for row in rows
        if row.material.get("access_code")
    }


def rss_table(soak: Soak) -> list[str]:
    """Each process's RSS at about ten moments, in MiB, and its peak."""
    names = sorted({name for _, name, _ in soak.rss.samples})
    last = max((t for t, _, _ in soak.rss.samples), default=0.0)
    marks = [last * k / 9 for k in range(10)]
    lines = ["  RSS MiB  " + " ".join(f"{m:6.0f}s" for m in marks) + "    peak"]
    for name in names:
        series = [(t, kb) for t, n, kb in soak.rss.samples if n == name]
        cells = []
        for mark in marks:
            near = min(series, key=lambda s: abs(s[0] - mark))
            cells.append(f"{near[1] / 1024:7.0f}")
        peak = max(kb for _, kb in series)
        lines.append(f"  {name:<9}" + " ".join(cells) + f" {peak / 1024:7.0f}")
        if name != "redis" and peak > RSS_BOUND_KB:
            soak.violations.append(
                f"{name}'s RSS reached {peak / 1024:.0f} MiB (bound {RSS_BOUND_KB / 1024:.0f})"
            )
    return lines


async def finish(soak: Soak, folder: Path, load_s: float, drained_s: float) -> list[Check]:
    ledger = await control_get(soak, "_ledger")
    for name in (*ASYNC_EDGE, "replay", "late"):
        answers = Counter(
            f"{status} {code}".strip() for _, status, code in ledger["agents"][name]["callbacks"]
        )
        soak.callbacks[name] = dict(answers)
    facts = await read_facts(soak.engine)
    checks = run_checks(facts, ledger, soak.ids, soak.fighter_ids, soak.outages)
    checks.append(page_split(facts, await agent_pages(soak), soak.ids))
    secret = Check("no secret in any log line or export")
    codes = await access_codes(soak)
    soak.cluster.stop()  # its logs are complete
    logs = sorted(soak.cluster.logs.glob("*.log"))
    for line in secrets_found({**soak.secrets, **codes, ADMIN: "the admin token"}, logs):
        secret.fail(f"log {line}")
    files = export(soak, folder)
    for line in secrets_found({**soak.secrets, ADMIN: "the admin token"}, files):
        secret.fail(f"export {line}")
    size = sum(path.stat().st_size for path in logs)
    secret.summary = (
        f"{len(soak.secrets) + len(codes) + 1} secrets looked for in {len(logs)} logs "
        f"({size / 1024:,.0f} KiB) and {len(files)} export files; "
        f"{soak.peeks} looks at a running match's public view"
    )
    checks.append(secret)
    during = Check("during the soak")
    for line in soak.violations:
        during.fail(line)
    during.summary = (
        f"longest a task or turn ran past its deadline: {soak.overdue_max_s:.1f} s "
        f"(bound {OVERDUE_S:.0f} s); no 5xx but 503 from the API"
    )
    checks.append(during)
    return checks


async def agent_pages(soak: Soak) -> dict[str, str]:
    """Every edgearena agent's public page, by name."""
    pages = {}
    for name, agent_id in soak.ids.items():
        headers = {"Accept": "text/html"}
        async with soak.session.get(f"{soak.cluster.base}/agents/{agent_id}", headers=headers) as r:
            pages[name] = await r.text()
    return pages


async def control_get(soak: Soak, path: str) -> Any:
    timeout = aiohttp.ClientTimeout(total=120)
    async with soak.session.get(f"{soak.zoo}/{path}", timeout=timeout) as response:
        return await response.json(content_type=None)


def report(soak: Soak, checks: list[Check], load_s: float, drained_s: float) -> bool:
    print(f"chaos soak: {load_s / 60:.1f} min of load, drained in {drained_s:.0f} s")
    print(f"  started {len(soak.runs)} runs and {len(soak.matches)} matches")
    print(f"  API answers: {dict(sorted(soak.answers.items()))}")
    print(f"  bad inputs tried: {dict(sorted(soak.bad_inputs.items()))}")
    print(f"  callbacks answered: {soak.callbacks}")
    print("  faults injected:")
    for line in soak.faults:
        print(f"    {line}")
    for line in rss_table(soak):
        print(line)
    ok = True
    for check in checks:
        verdict = "PASS" if not check.violations else "FAIL"
        ok = ok and not check.violations
        print(f"{verdict}  {check.name}: {check.summary}")
        for line in check.violations:
            print(f"        {line}")
    return ok


async def soak_once(args: argparse.Namespace, folder: Path) -> bool:
    load_s = args.minutes * 60
    with zoo_process() as (zoo_pid, plain, secure), own_redis(folder) as redis:
        async with bench_database(args.postgres) as database:
            env = environment(database, redis.url, folder, **SETTINGS)
            engine = create_async_engine(database, pool_pre_ping=True)  # it drops connections
            try:
                async with (
                    cluster(env, folder, workers=2) as running,
                    aiohttp.ClientSession() as session,
                ):
                    soak = Soak(
                        running,
                        engine,
                        make_url(database).database or "",
                        f"http://127.0.0.1:{plain}",
                        session,
                        redis,
                    )
                    soak.zoo_pid = zoo_pid
                    soak.patience_s = min(20.0, load_s / 6)
                    stranger = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
                    soak.stranger = aiohttp.ClientSession(connector=stranger)
                    await register(soak, secure)
                    began = time.monotonic()
                    until = began + load_s
                    await asyncio.gather(
                        every(args.run_every, until, lambda n: start_run(soak, n)),
                        every(args.match_every, until, lambda n: start_match(soak, n)),
                        every(1.0, until, lambda n: bad_input(soak, n)),
                        every(2.0, until, lambda n: watch(soak, n)),
                        faults(soak, began, load_s),
                    )
                    await soak.stranger.close()
                    drained_s = await drain(soak)
                    checks = await finish(soak, folder, load_s, drained_s)
                    for name in soak.cluster.dead():
                        if name not in {f.split()[1] for _, f in FAULTS if f.startswith("kill")}:
                            checks[-1].fail(f"{name} exited on its own")
                    return report(soak, checks, load_s, drained_s)
            finally:
                await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long the load runs")
    parser.add_argument("--run-every", type=float, default=2.0, help="seconds between runs")
    parser.add_argument("--match-every", type=float, default=1.5, help="seconds between matches")
    parser.add_argument("--postgres", default=POSTGRES, help="server for the soak's database")
    parser.add_argument("--keep", type=Path, help="keep the logs and export in this folder")
    # Its faults are spread over the load: one minute is the smallest soak that has them all.
    args = parse_args(parser, {"minutes": 1.0}, argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        ok = asyncio.run(soak_once(args, args.keep))
    else:
        with tempfile.TemporaryDirectory(prefix="palaestra-chaos-") as folder:
            ok = asyncio.run(soak_once(args, Path(folder)))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
