"""The dispatcher's many-row writes: ``store.bulk`` against SQLAlchemy's own executemany.

    .venv/bin/python bench/bulk.py [--batches 25] [--rows 200] [--rounds 5] [--no-postgres]
                                   [--no-busy] [--quick]

The rows are the dispatcher's: a task opened (INSERT into ``tasks``, 13
columns, its payload JSON), then ended (UPDATE of 11 columns where the id
matches and the task is still RUNNING, and an INSERT of the agent's history
row), ``--rows`` at a time, one ``Database.transact`` per batch as the engine
writes them, into tables that already hold ``--background`` older tasks and
history rows (analysed, so that PostgreSQL plans the statements as in
service, not as on an empty table). Three writers:

- ``bulk``: :mod:`palaestra.store.bulk` (positional parameters handed to the
  driver; on SQLite many rows per statement, ``UPDATE ... FROM (VALUES ...)``);
- ``executemany``: SQLAlchemy Core, ``connection.execute(insert(table), rows)``
  and an ``update()`` with bound parameters, rows as dictionaries;
- ``insertmanyvalues``: the same, the INSERTs with ``RETURNING`` so that
  SQLAlchemy batches them into multi-row statements ("insertmanyvalues"; it
  has no such batching for an UPDATE, which stays an executemany).

Each is measured on a fresh SQLite file (the writer thread) and on
PostgreSQL (asyncpg; a database of its own, dropped at the end), with the
event loop idle (CPU per row of the whole process, wall time per batch) and
with the event loop busy running Python as under dispatch load (wall time
per batch: on SQLite the writer thread waits for the GIL after each call into
the driver). Rounds alternate the writers' order; medians of the rounds, and
each writer's ratio to ``bulk``. The interpreter is settled first
(``palaestra.runtime``), as ``palaestra serve`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import orjson
from sqlalchemy import Connection, Table, bindparam, insert, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from palaestra import runtime
from palaestra.engine.agents.outcomes import EVENT_COLUMNS
from palaestra.engine.runs.dispatch import OPEN_COLUMNS
from palaestra.engine.runs.recorder import END_COLUMNS, END_CONDITIONS
from palaestra.ids import new_id
from palaestra.store.bulk import insert_values, json_text, update_values
from palaestra.store.db import Database
from palaestra.store.models import Agent, AgentEvent, Owner, Run, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import parse_args

POSTGRES = os.environ.get(
    "PALAESTRA_BENCH_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
TASKS = cast(Table, Task.__table__)
EVENTS = cast(Table, AgentEvent.__table__)
PAYLOAD = orjson.dumps(
    {
        "protocol": "edgearena-v1",
        "phase": "SCOUT",
        "input": {"goal": "Find a business a solo developer can start", "slot": 3},
        "messages": [{"role": "user", "content": "x" * 600}],
    }
).decode()
OUTPUT = {
    "candidate_title": "Timesheet-to-invoice autopilot for small agencies",
    "target_customer": "Design agencies with 5 to 20 people",
    "evidence": ["a", "b", "c"],
}
WRITERS = ("bulk", "executemany", "insertmanyvalues")
#: Each task opens a slot of its own on the bench's one run: the store holds one task per
#: (run, phase, slot, attempt), as a run step repeated by another stepper must open nothing
#: twice.
SLOTS = itertools.count()
#: A quick run leaves out the busy loop: with it every call into SQLite waits for the GIL,
#: which on a loaded machine takes minutes even at this size.
QUICK = {"batches": 2, "rows": 20, "rounds": 1, "background": 200, "busy": False}

Work = Callable[[Connection], Any]


@dataclass(frozen=True, slots=True)
class Seeded:
    """The agent and run the tasks' foreign keys point to."""

    agent_id: str
    run_id: str


async def seed(db: Database) -> Seeded:
    now = time.time()
    owner_id, agent_id, run_id = new_id(), new_id(), new_id()
    async with db.session() as session, session.begin():
        session.add(Owner(id=owner_id, name="bench", token_hash=new_id(), created_at=now))
        await session.flush()
        session.add(
            Agent(
                id=agent_id,
                owner_id=owner_id,
                name="scout",
                arena="edgearena",
                role="SCOUT",
                status="ACTIVE",
                consecutive_failures=0,
                created_at=now,
                updated_at=now,
            )
        )
        session.add(
            Run(
                id=run_id,
                owner_id=owner_id,
                goal="bench",
                launchpad="make-money",
                status="RUNNING",
                phase="SCOUT",
                config={},
                created_at=now,
                updated_at=now,
            )
        )
    return Seeded(agent_id, run_id)


# -- the three writers: each builds its rows from the same facts, then writes them ---------


def open_work(writer: str, seeded: Seeded, ids: Sequence[str], now: float) -> Work:
    """What the dispatcher writes to open a batch of tasks (rows built before the hop)."""
    slots = [next(SLOTS) for _ in ids]
    if writer == "bulk":
        rows = [
            (
                task_id,
                seeded.run_id,
                None,
                "SCOUT",
                slot,
                0,
                seeded.agent_id,
                "scout",
                "RUNNING",
                PAYLOAD,
                60.0,
                now,
            )
            for slot, task_id in zip(slots, ids, strict=True)
        ]
        return lambda connection: insert_values(connection, TASKS, OPEN_COLUMNS, rows)
    payload = orjson.Fragment(PAYLOAD)  # JSON already serialized, as the dispatcher holds it
    dicts = [
        {
            "id": task_id,
            "run_id": seeded.run_id,
            "candidate_id": None,
            "phase": "SCOUT",
            "slot": slot,
            "attempt": 0,
            "agent_id": seeded.agent_id,
            "executor": "scout",
            "status": "RUNNING",
            "payload": payload,
            "deadline_s": 60.0,
            "created_at": now,
        }
        for slot, task_id in zip(slots, ids, strict=True)
    ]
    statement = insert(TASKS)
    if writer == "insertmanyvalues":
        statement = statement.returning(TASKS.c.id)
    return lambda connection: connection.execute(statement, dicts)


_END = (
    update(TASKS)
    .where(TASKS.c.id == bindparam("w_id"), TASKS.c.status == bindparam("w_status"))
    .values({column: bindparam(f"b_{column}") for column in END_COLUMNS})
)


def end_work(writer: str, seeded: Seeded, ids: Sequence[str], now: float) -> Work:
    """What the recorder writes to end a batch of tasks: each task's end and history row."""
    detail = {"task_id": "", "run_id": seeded.run_id, "phase": "SCOUT", "via": "sync"}
    if writer == "bulk":
        ends = [
            (
                "SUCCEEDED",
                now,
                "sync",
                json_text(OUTPUT),
                120,
                480,
                "model",
                812.5,
                None,
                0.0,
                "scout",
                "agent",
                task_id,
                "RUNNING",
            )
            for task_id in ids
        ]
        histories = [
            (
                seeded.agent_id,
                now,
                "dispatch",
                "success",
                812.5,
                None,
                json_text({**detail, "task_id": task_id}),
            )
            for task_id in ids
        ]

        def written(connection: Connection) -> int:
            count = update_values(connection, TASKS, END_COLUMNS, END_CONDITIONS, ends)
            insert_values(connection, EVENTS, EVENT_COLUMNS, histories)
            return count

        return written
    end_dicts = [
        {
            "b_status": "SUCCEEDED",
            "b_completed_at": now,
            "b_via": "sync",
            "b_output": OUTPUT,
            "b_prompt_tokens": 120,
            "b_completion_tokens": 480,
            "b_model_id": "model",
            "b_latency_ms": 812.5,
            "b_reason": None,
            "b_contribution": 0.0,
            "b_executor": "scout",
            "b_producer": "agent",
            "w_id": task_id,
            "w_status": "RUNNING",
        }
        for task_id in ids
    ]
    history_dicts = [
        {
            "agent_id": seeded.agent_id,
            "at": now,
            "kind": "dispatch",
            "outcome": "success",
            "latency_ms": 812.5,
            "reason": None,
            "detail": {**detail, "task_id": task_id},
        }
        for task_id in ids
    ]
    history = insert(EVENTS)
    if writer == "insertmanyvalues":
        history = history.returning(EVENTS.c.id)

    def written_core(connection: Connection) -> int:
        count = connection.execute(_END, end_dicts).rowcount
        connection.execute(history, history_dicts)
        return count

    return written_core


# -- measuring ----------------------------------------------------------------------------


class Busy:
    """Python running on the event loop in slices, as the dispatcher's sends and parses do."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def _spin(self) -> None:
        n = 0
        while not self.stop.is_set():
            deadline = time.perf_counter() + 0.0002
            while time.perf_counter() < deadline:
                n += 1
                orjson.loads(orjson.dumps({"output": OUTPUT, "n": n}))
            await asyncio.sleep(0)

    async def __aenter__(self) -> Busy:
        self.task = asyncio.create_task(self._spin())
        return self

    async def __aexit__(self, *_: object) -> None:
        self.stop.set()
        assert self.task is not None
        await self.task


async def phase_pair(
    db: Database, seeded: Seeded, writer: str, batches: int, rows: int
) -> tuple[float, float, float, float]:
    """Open then end ``batches`` batches: (open, end) CPU s per row and wall s per batch."""
    id_batches = [[new_id() for _ in range(rows)] for _ in range(batches)]
    open_wall, end_wall = [], []
    cpu = time.process_time()
    for ids in id_batches:
        started = time.perf_counter()
        await db.transact(open_work(writer, seeded, ids, time.time()))
        open_wall.append(time.perf_counter() - started)
    open_cpu = time.process_time() - cpu
    cpu = time.process_time()
    for ids in id_batches:
        started = time.perf_counter()
        count = await db.transact(end_work(writer, seeded, ids, time.time()))
        end_wall.append(time.perf_counter() - started)
        assert count in (rows, -1), count
    end_cpu = time.process_time() - cpu
    await db.transact(clear)
    total = batches * rows
    return (
        open_cpu / total,
        statistics.median(open_wall),
        end_cpu / total,
        statistics.median(end_wall),
    )


def clear(connection: Connection) -> None:
    """Delete the rows a phase pair wrote (all of them ended), keeping the background."""
    left = connection.execute(text("SELECT count(*) FROM tasks WHERE status = 'RUNNING'"))
    assert left.scalar() == 0
    connection.execute(text("DELETE FROM agent_events WHERE kind = 'dispatch'"))
    connection.execute(text("DELETE FROM tasks WHERE status = 'SUCCEEDED'"))


async def background(db: Database, seeded: Seeded, rows: int) -> None:
    """A store that has served for a while: ``rows`` older tasks and history rows, and
    fresh statistics, so that the statements are planned as they are in service."""
    now = time.time()
    for start in range(0, rows, 1000):
        ids = [new_id() for _ in range(min(1000, rows - start))]

        def older(connection: Connection, ids: list[str] = ids) -> None:
            open_work("bulk", seeded, ids, now)(connection)
            connection.execute(
                update(TASKS).where(TASKS.c.id.in_(ids)).values(status="FAILED", completed_at=now)
            )
            insert_values(
                connection,
                EVENTS,
                EVENT_COLUMNS,
                [(seeded.agent_id, now, "ping", "success", 5.0, None, None) for _ in ids],
            )

        await db.transact(older)
    await db.transact(lambda connection: connection.execute(text("ANALYZE")))


async def measure(db: Database, args: argparse.Namespace, label: str) -> None:
    seeded = await seed(db)
    await background(db, seeded, args.background)
    for writer in WRITERS:  # warm: statement caches, pages
        await phase_pair(db, seeded, writer, 2, args.rows)
    figures: dict[str, list[tuple[float, ...]]] = {w: [] for w in WRITERS}
    for round_ in range(args.rounds):
        order = WRITERS if round_ % 2 == 0 else WRITERS[::-1]
        for writer in order:
            idle = await phase_pair(db, seeded, writer, args.batches, args.rows)
            busy = (math.nan,) * 4
            if args.busy:
                async with Busy():
                    busy = await phase_pair(db, seeded, writer, args.batches, args.rows)
            figures[writer].append((*idle, busy[1], busy[3]))
    medians = {w: [statistics.median(f[i] for f in figures[w]) for i in range(6)] for w in WRITERS}
    base = medians["bulk"]
    print(
        f"{label}: batches of {args.rows} rows, {args.batches} batches per phase, "
        f"median of {args.rounds} alternating rounds"
        + ("" if args.busy else "; busy loop not measured (nan)")
    )
    print(
        "  writer            open: CPU/row   wall/batch  busy loop  |  end: CPU/row   "
        "wall/batch  busy loop"
    )
    for writer in WRITERS:
        o_cpu, o_wall, e_cpu, e_wall, o_busy, e_busy = medians[writer]
        ratios = [m / b for m, b in zip(medians[writer], base, strict=True)]
        print(
            f"  {writer:<16} {o_cpu * 1e6:7.1f} us {o_wall * 1e3:8.2f} ms {o_busy * 1e3:7.2f} ms"
            f"  | {e_cpu * 1e6:9.1f} us {e_wall * 1e3:8.2f} ms {e_busy * 1e3:7.2f} ms"
        )
        if writer != "bulk":
            print(
                f"  {'  x bulk':<16} {ratios[0]:7.2f}x   {ratios[1]:7.2f}x    {ratios[4]:6.2f}x"
                f"   | {ratios[2]:8.2f}x   {ratios[3]:7.2f}x    {ratios[5]:6.2f}x"
            )


async def on_sqlite(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Database(f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}")
        await db.migrate()
        try:
            await measure(db, args, "SQLite (writer thread)")
        finally:
            await db.dispose()


async def on_postgres(args: argparse.Namespace) -> None:
    base = make_url(POSTGRES)
    name = f"palaestra_bench_bulk_{os.getpid()}"
    admin = create_async_engine(base, isolation_level="AUTOCOMMIT")
    async with admin.connect() as connection:
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        db = Database(base.set(database=name).render_as_string(hide_password=False))
        await db.migrate()
        try:
            await measure(db, args, "PostgreSQL (asyncpg)")
        finally:
            await db.dispose()
    finally:
        async with admin.connect() as connection:
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


async def main(args: argparse.Namespace) -> None:
    runtime.settle()
    await on_sqlite(args)
    if args.postgres:
        await on_postgres(args)
    # Each batch asserted its rows ended, and each phase pair that none was left RUNNING.
    print("PASS  every writer opened and ended every task of its batches")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--background", type=int, default=20_000)
    parser.add_argument("--no-postgres", dest="postgres", action="store_false")
    parser.add_argument("--no-busy", dest="busy", action="store_false")
    asyncio.run(main(parse_args(parser, QUICK)))
