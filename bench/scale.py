"""Scale-out on this machine: how many agents one and two worker processes keep on schedule.

    .venv/bin/python bench/scale.py [--agents 25000,50000,100000,200000] [--workers 1,2]
                                    [--interval 60] [--seconds 45] [--within 2] [--quick]

Everything runs on loopback against the machine's PostgreSQL (a database of
its own, dropped afterwards) and Redis (a stream and keys of its own, deleted
afterwards); agents are one separate process answering at once.

For each worker count of ``--workers`` and each agent count of ``--agents``,
in increasing order: that many ACTIVE agents are pinged every ``--interval``
seconds (the protocol's 5 minutes, compressed: 100,000 agents every 60 s ask
for 1,667 pings/s, the rate of 500,000 agents at the protocol's cadence) by
that many ``palaestra worker`` processes for ``--seconds``, their first pings
due over one interval from the start. The schedule lag is how late each ping
started after it was due: read from the workers' metrics, with each ping
still due at the end (the backlog of workers that do not keep up) counted at
the lag it has so far. A count is kept within schedule when the p99 lag is
at most ``--within`` seconds (the cluster looks for due pings every 0.5 s
here); past the first count that is not, the larger ones are not measured.
It prints a line per worker count and agent count, then the largest count
each worker count kept within schedule, and its equivalent at the protocol's
5-minute cadence.

A failed ping (the agents answer at once: it fails only when the machine is
too busy to serve them in time) is not kept either, and is printed with its
failure kinds. While the workers keep up every ping must succeed and every
agent stay ACTIVE: the exit status is 1 when one does not (whether a count
is kept within schedule is a figure, not a failure). ``--quick`` measures
tiny counts for a second each, as the test tiers do.

Whole runs, tasks dispatched by one and by two worker processes, are
``bench/runs.py``'s (modes ``workers1`` and ``workers2``).

On a 2-core machine every process (workers, PostgreSQL, Redis, the agents,
this script) shares the same two cores, so the gain of more workers flattens
at the core count: past two workers they only take turns on the same CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import aiohttp
from aiohttp import web
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import DBAPIError

from palaestra.platform import Platform
from palaestra.rules.status import PING_INTERVAL_S, Status
from palaestra.settings import Settings
from palaestra.store.models import Agent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import (
    HOST,
    REDIS,
    add_owner,
    agent_row,
    agents_process,
    bench_database,
    bench_settings,
    forget_queue,
    free_port,
    parse_args,
    workers,
)

#: The protocol's cadence for an ACTIVE agent, which ``--interval`` compresses.
ACTIVE_INTERVAL_S: Final = PING_INTERVAL_S[Status.ACTIVE]
#: How often the cluster looks for due pings in this bench.
TICK_S: Final = 0.5
#: PostgreSQL's SQLSTATE of a transaction it aborted to break a deadlock.
DEADLOCK: Final = "40P01"
#: The first pings fall due this long after the agents are scheduled (the workers are up).
START_S: Final = 0.5
#: The workers' lag histogram's bounds (palaestra.metrics), and the agents' backlog's.
BOUNDS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, float("inf"))
QUICK: Final = {"agents": [100, 200], "interval": 1.0, "seconds": 1.0}

# Agents, in their own process.


async def answer(request: web.BaseRequest) -> web.StreamResponse:
    """Fast agents: a health ping's reply."""
    return web.Response(body=b'{"ok":true}', content_type="application/json")


def settings_for(data: Path, database: str, queue: str, interval: float) -> Settings:
    return bench_settings(
        data,
        database_url=database,
        broker_url=REDIS,
        broker_queue=queue,
        ratings_enabled=False,
        matchmaking_enabled=False,
        sweep_interval_s=3600,
        monitor_enabled=True,
        health_interval_scale=interval / ACTIVE_INTERVAL_S,
        schedule_tick_s=TICK_S,
    )


@dataclass(frozen=True, slots=True)
class Measured:
    workers: int
    agents: int
    seconds: float
    interval: float
    pings: float
    failed: float
    #: The failed pings by failure kind, as "timeout 30, connect 3".
    failures: str
    not_active: int
    backlog: int
    #: Pings (done, and still due at the end) whose lag was at most each of BOUNDS.
    cumulative: tuple[float, ...]

    @property
    def asked(self) -> float:
        return self.agents / self.interval

    def quantile(self, q: float) -> float:
        """The smallest bound that at least ``q`` of the lags are within (inf: > 10 s)."""
        total = self.cumulative[-1]
        for bound, count in zip(BOUNDS, self.cumulative, strict=True):
            if total and count >= q * total:
                return bound
        return float("inf")

    def on_time(self, bound: float) -> bool:
        return self.quantile(0.99) <= bound

    def within(self, bound: float) -> bool:
        """On time, and every ping answered: a ping that failed was not kept, nor an agent
        moved out of ACTIVE by such failures."""
        return self.on_time(bound) and not self.failed and not self.not_active

    def problems(self, bound: float) -> list[str]:
        """Faults rather than figures. The agents answer at once, so a ping fails only when
        the machine is too busy to serve them in time, which comes with workers that fall
        behind; a ping that fails while they keep up, or no ping at all, is a fault."""
        found = []
        if self.on_time(bound) and self.failed:
            found.append(f"{self.failed:,.0f} pings failed ({self.failures}) on time")
        if self.on_time(bound) and self.not_active:
            found.append(f"{self.not_active:,} agents no longer ACTIVE")
        if not self.pings:
            found.append("no ping was done")
        return found


def shown(bound: float) -> str:
    return "> 10 s" if bound == float("inf") else f"<= {bound:g} s"


# Measuring one count.


async def seed(platform: Platform, port: int, agents: int) -> None:
    """``agents`` ACTIVE agents, none due yet (:func:`schedule` makes them due)."""
    now = time.time()
    owner = await add_owner(platform, now)
    for start in range(0, agents, 5000):
        rows = [
            agent_row(
                owner,
                f"pinged-{n}",
                now,
                endpoint_url=f"http://{HOST}:{port}/a{n}",
                next_ping_at=now + 10 * ACTIVE_INTERVAL_S,
            )
            for n in range(start, min(agents, start + 5000))
        ]
        async with platform.db.session() as session, session.begin():
            await session.execute(insert(Agent), rows)


async def schedule(platform: Platform, interval: float) -> None:
    """Every agent's first ping due at a random moment of one interval from now."""
    async with platform.db.session() as session, session.begin():
        await session.execute(
            text("UPDATE agents SET next_ping_at = :start + random() * :interval"),
            {"start": time.time() + START_S, "interval": interval},
        )


async def forget_agents(platform: Platform) -> None:
    """Remove every agent and its history. A worker still recording a ping that began
    before its agent stopped being due can deadlock the TRUNCATE (PostgreSQL then aborts
    one of the two): the TRUNCATE is tried again a tick later, once that ping has ended."""
    for attempt in range(5):
        try:
            async with platform.db.session() as session, session.begin():
                await session.execute(text("TRUNCATE agent_events, agents, owners CASCADE"))
            return
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) != DEADLOCK or attempt == 4:
                raise
            await asyncio.sleep(TICK_S)


_BUCKET = re.compile(r'palaestra_health_ping_lag_seconds_bucket\{le="([^"]+)"\} (\S+)')
_PINGS = re.compile(r'palaestra_health_pings_total\{outcome="(\w+)"\} (\S+)')
_KINDS = re.compile(r'palaestra_agent_failures_total\{kind="([^"]+)"\} (\S+)')


async def scraped(ports: list[int]) -> tuple[dict[float, float], dict[str, float]]:
    """The workers' lag histogram (cumulative, by bound), and their pings by outcome and
    failures by kind (``kind:<kind>``), summed."""
    buckets: dict[float, float] = {}
    pings: dict[str, float] = {}
    async with aiohttp.ClientSession() as session:
        for port in ports:
            async with session.get(f"http://{HOST}:{port}/metrics") as response:
                body = await response.text()
            for le, value in _BUCKET.findall(body):
                bound = float("inf") if le == "+Inf" else float(le)
                buckets[bound] = buckets.get(bound, 0.0) + float(value)
            for outcome, value in _PINGS.findall(body):
                pings[outcome] = pings.get(outcome, 0.0) + float(value)
            for kind, value in _KINDS.findall(body):
                pings[f"kind:{kind}"] = pings.get(f"kind:{kind}", 0.0) + float(value)
    return buckets, pings


async def still_due(platform: Platform) -> tuple[list[int], int]:
    """Agents whose ping is due and not yet claimed, by how late they are so far: how many
    are at most each bound late (cumulative), and how many are no longer ACTIVE."""
    now = time.time()
    late = [func.count().filter(Agent.next_ping_at <= now - b) for b in BOUNDS[:-1]]
    async with platform.db.session() as session:
        row = (
            await session.execute(select(func.count().filter(Agent.next_ping_at <= now), *late))
        ).one()
        not_active = await session.scalar(
            select(func.count()).select_from(Agent).where(Agent.status != "ACTIVE")
        )
    due = int(row[0])
    return [due - int(n) for n in row[1:]] + [due], int(not_active or 0)


#: No agent due any more. The rows are locked in the order of their ids, as every writer of
#: agents takes them (a plain UPDATE takes them as it finds them: a deadlock with the
#: workers' records of the pings in flight).
_UNSCHEDULE: Final = text(
    "UPDATE agents SET next_ping_at = NULL "
    "WHERE id IN (SELECT id FROM agents ORDER BY id FOR NO KEY UPDATE)"
)


async def quiet(platform: Platform) -> None:
    """No agent due, then none at all: the pings in flight end before the agents go."""
    async with platform.db.session() as session, session.begin():
        agents = (await session.execute(_UNSCHEDULE)).rowcount  # type: ignore[attr-defined]
    if agents:
        await asyncio.sleep(2 * TICK_S)
    await forget_agents(platform)


async def measure(
    platform: Platform, ports: list[int], port: int, agents: int, args: argparse.Namespace
) -> Measured:
    """``agents`` agents pinged for ``args.seconds`` by the running workers on ``ports``."""
    await quiet(platform)
    await seed(platform, port, agents)
    before_buckets, before_pings = await scraped(ports)
    await schedule(platform, args.interval)
    await asyncio.sleep(START_S + args.seconds)
    backlog, not_active = await still_due(platform)
    buckets, pings = await scraped(ports)
    done = [buckets.get(b, 0.0) - before_buckets.get(b, 0.0) for b in BOUNDS]
    by_outcome = {k: v - before_pings.get(k, 0.0) for k, v in pings.items()}
    return Measured(
        workers=len(ports),
        agents=agents,
        seconds=args.seconds,
        interval=args.interval,
        pings=by_outcome.get("success", 0.0) + by_outcome.get("failure", 0.0),
        failed=by_outcome.get("failure", 0.0),
        failures=", ".join(
            f"{k.removeprefix('kind:')} {n:,.0f}"
            for k, n in sorted(by_outcome.items())
            if k.startswith("kind:") and n
        ),
        not_active=not_active,
        backlog=backlog[-1],
        cumulative=tuple(d + b for d, b in zip(done, backlog, strict=True)),
    )


def line(m: Measured, bound: float) -> str:
    verdict = "within schedule" if m.within(bound) else "BEHIND schedule"
    if m.failed:
        verdict += f" ({m.failed:,.0f} pings failed: {m.failures})"
    return (
        f"  {m.workers:>7}  {m.agents:>9,}  {m.asked:>8,.0f}  {m.pings / m.seconds:>8,.0f}"
        f"  {m.backlog:>8,}  {shown(m.quantile(0.5)):>8}  {shown(m.quantile(0.99)):>8}  {verdict}"
    )


async def main(args: argparse.Namespace) -> int:
    queue = f"palaestra-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    counts = sorted(args.agents)
    print(
        f"Health pings every {args.interval:g} s (the protocol's {ACTIVE_INTERVAL_S:g} s "
        f"compressed {ACTIVE_INTERVAL_S / args.interval:g}x), {args.seconds:g} s per count; "
        f"within schedule: p99 lag <= {args.within:g} s"
    )
    print(
        f"  {'workers':>7}  {'agents':>9}  {'asked/s':>8}  {'done/s':>8}  {'backlog':>8}"
        f"  {'lag p50':>8}  {'lag p99':>8}"
    )
    results: list[Measured] = []
    with tempfile.TemporaryDirectory() as folder, agents_process(answer, fast=True) as port:
        async with bench_database() as database:
            settings = settings_for(Path(folder), database, queue, args.interval)
            platform = await Platform.open(settings)
            try:
                for count in args.workers:
                    ports = [free_port() for _ in range(count)]
                    with workers(settings, count, settings.worker_concurrency, ports):
                        for agents in counts:
                            measured = await measure(platform, ports, port, agents, args)
                            results.append(measured)
                            print(line(measured, args.within), flush=True)
                            if not measured.within(args.within):
                                break  # the larger counts would be further behind
                    await quiet(platform)
            finally:
                await platform.close()
                await forget_queue(queue)
    scale = ACTIVE_INTERVAL_S / args.interval
    for count in args.workers:
        kept = [m.agents for m in results if m.workers == count and m.within(args.within)]
        if kept:
            print(
                f"{count} worker process(es): {max(kept):,} agents kept within schedule "
                f"(at the protocol's {ACTIVE_INTERVAL_S / 60:g}-minute cadence: "
                f"{max(kept) * scale:,.0f} agents)"
            )
        else:
            print(f"{count} worker process(es): not even {counts[0]:,} agents within schedule")
    problems = [
        f"{m.workers} workers, {m.agents:,} agents: {p}"
        for m in results
        for p in m.problems(args.within)
    ]
    for problem in problems:
        print(f"FAIL  {problem}")
    print(
        f"{'FAIL' if problems else 'PASS'}  every ping succeeded and every agent stayed ACTIVE "
        "while the workers kept up"
    )
    return 1 if problems else 0


def counts(value: str) -> list[int]:
    try:
        chosen = [int(n) for n in value.split(",") if n.strip()]
    except ValueError:
        chosen = []
    if not chosen or min(chosen) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of positive whole numbers")
    return chosen


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--agents", type=counts, default=[25_000, 50_000, 100_000, 200_000], help="counts"
    )
    parser.add_argument("--workers", type=counts, default=[1, 2], help="worker process counts")
    parser.add_argument("--interval", type=float, default=60.0, help="compressed cadence, s")
    parser.add_argument("--seconds", type=float, default=45.0, help="measured per count")
    parser.add_argument("--within", type=float, default=2.0, help="p99 lag bound, s")
    sys.exit(asyncio.run(main(parse_args(parser, QUICK))))
