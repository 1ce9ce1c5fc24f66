"""Whole runs on `serve --no-workers` and two `worker` processes, PostgreSQL and Redis.

Hundreds of runs at once against fast agents: every run completes, every task
succeeds, every taskId reaches its agent exactly once, no agent is charged.
The same with one worker SIGKILLed mid-load: nothing is lost, nothing sent
twice, no agent charged (what the killed worker had in flight is voided as
the platform's fault). And a worker paused (SIGSTOP) while its sends are in
flight: the other worker voids them once their time is over, the runs go on,
and when the paused worker wakes its late replies change nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from palaestra.store.models import Agent, AgentEvent, Run, Task
from tests.acceptance.cluster import Cluster, InFlight, Router, enter_agent, holder_of, scale_out
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import reset_postgres
from tests.integration.servers import serve

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ROLES = (("SCOUT", 8), ("BUILDER", 4), ("ANALYST", 6))
SIZES = {"scouts": 5, "shortlist": 3, "builds": 1, "verifies": 1, "critiques": 2}
LOST = "platform fault: the task's answer was not recorded (its sender stopped)"
NOT_SENT = "platform fault: the task was not sent within"


def fleet(delay_s: float = 0.0) -> dict[str, EdgeAgent]:
    return {
        f"{role.lower()}{n}": EdgeAgent(key="", role=role, dispatch_delay_s=delay_s)
        for role, count in ROLES
        for n in range(count)
    }


async def start_runs(cluster: Cluster, count: int, sizes: dict[str, int] = SIZES) -> list[str]:
    async def one(n: int) -> str:
        body = {"goal": f"A business, take {n}", "sizes": sizes}
        status, created = await cluster.call("POST", "/api/runs", json=body)
        assert status == 202, created
        return str(created["run_id"])

    return list(await asyncio.gather(*(one(n) for n in range(count))))


async def statuses(engine: AsyncEngine) -> Counter[str]:
    async with engine.connect() as connection:
        return Counter((await connection.execute(select(Run.status))).scalars())


async def until_finished(cluster: Cluster, engine: AsyncEngine, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while (await statuses(engine))["RUNNING"]:
        assert time.monotonic() < deadline, f"{await statuses(engine)}\n{cluster.output()}"
        await asyncio.sleep(0.25)


async def read_back(engine: AsyncEngine) -> tuple[list[Any], list[Any], list[Any]]:
    """Every task and agent, and what could say an agent was charged: its dispatch history
    rows and its status changes other than admissions, as rows."""
    async with engine.connect() as connection:
        tasks = list((await connection.execute(select(Task))).all())
        agents = list((await connection.execute(select(Agent))).all())
        events = (await connection.execute(select(AgentEvent))).all()
    charges = [
        e for e in events if e.kind == "dispatch" or (e.kind == "status" and e.outcome != "ACTIVE")
    ]
    return tasks, agents, charges


def assert_nothing_lost_or_charged(
    edge: dict[str, EdgeAgent], tasks: list[Any], agents: list[Any], events: list[Any]
) -> list[Any]:
    """Every taskId reached its agent once, every slot was served, no agent was charged;
    the voided tasks are returned (each the platform's fault)."""
    sent = [task_id for agent in edge.values() for task_id in agent.ledger.task_ids]
    assert len(sent) == len(set(sent))
    assert set(sent) <= {task.id for task in tasks}
    assert sum(agent.ledger.bad_dispatches for agent in edge.values()) == 0
    assert {task.status for task in tasks} <= {"SUCCEEDED", "VOIDED"}
    voided = [task for task in tasks if task.status == "VOIDED"]
    assert all(t.reason == LOST or (t.reason or "").startswith(NOT_SENT) for t in voided)
    assert all(agent.status == "ACTIVE" for agent in agents), [a.status for a in agents]
    assert all(agent.consecutive_failures == 0 for agent in agents)
    assert {event.outcome for event in events} <= {"success"}
    return voided


async def test_hundreds_of_runs_on_two_workers_all_complete_and_no_agent_is_charged(
    postgres_database: str, redis_url: str, tmp_path: Path
) -> None:
    await reset_postgres(postgres_database)
    edge = fleet()
    engine = create_async_engine(postgres_database)
    try:
        async with (
            serve(Router(edge)) as endpoint,
            scale_out(postgres_database, redis_url, tmp_path, workers=2) as cluster,
        ):
            for name, agent in edge.items():
                await enter_agent(cluster, name, agent.role, agent, endpoint.url(f"/{name}"))
            runs = await start_runs(cluster, 200)
            await until_finished(cluster, engine, within_s=240)
            tasks, agents, events = await read_back(engine)
            finished = await statuses(engine)
    finally:
        await engine.dispose()
    assert finished == Counter({"COMPLETED": 200})
    assert {task.run_id for task in tasks} == set(runs)
    assert Counter(task.status for task in tasks) == Counter({"SUCCEEDED": len(tasks)})
    assert assert_nothing_lost_or_charged(edge, tasks, agents, events) == []
    received = sorted(task_id for agent in edge.values() for task_id in agent.ledger.task_ids)
    assert received == sorted(task.id for task in tasks)  # each exactly once


async def test_a_worker_killed_mid_load_loses_nothing_and_charges_no_agent(
    postgres_database: str, redis_url: str, tmp_path: Path
) -> None:
    await reset_postgres(postgres_database)
    edge = fleet(delay_s=0.05)
    flight = InFlight(Router(edge))
    engine = create_async_engine(postgres_database)
    try:
        async with two_workers(postgres_database, redis_url, tmp_path, edge, flight) as cluster:
            await start_runs(cluster, 100)
            killed = await caught_mid_request(cluster, flight)
            cluster.kill(killed)
            assert len(cluster.worker_pids) == 1
            await until_finished(cluster, engine, within_s=180)
            tasks, agents, events = await read_back(engine)
            finished = await statuses(engine)
    finally:
        await engine.dispose()
    assert finished == Counter({"COMPLETED": 100})
    voided = assert_nothing_lost_or_charged(edge, tasks, agents, events)
    assert voided, "the killed worker had sends in flight: they are the platform's fault"


@contextlib.asynccontextmanager
async def two_workers(
    database: str, redis: str, logs: Path, edge: dict[str, EdgeAgent], flight: InFlight
) -> AsyncIterator[Cluster]:
    """The API and two workers on short deadlines and quick recovery, ``edge`` admitted."""
    async with (
        serve(flight) as endpoint,
        scale_out(
            database,
            redis,
            logs,
            workers=2,
            dispatch_deadline_scale="0.1",  # SCOUT, VERIFY, CRITIQUE 3 s; BUILD 9 s
            broker_redelivery_s="1",
            sweep_interval_s="0.5",
        ) as cluster,
    ):
        for name, agent in edge.items():
            await enter_agent(cluster, name, agent.role, agent, endpoint.url(f"/{name}"))
        yield cluster


async def caught_mid_request(cluster: Cluster, flight: InFlight, within_s: float = 30) -> int:
    """A worker that holds a request an agent is answering now."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for port in list(flight.ports):
            pid = holder_of(port, cluster.worker_pids)
            if pid is not None:
                return pid
        await asyncio.sleep(0.005)
    raise AssertionError("no worker was caught mid-request\n" + cluster.output())


async def test_a_paused_worker_s_sends_are_voided_and_its_agents_keep_their_status(
    postgres_database: str, redis_url: str, tmp_path: Path
) -> None:
    await reset_postgres(postgres_database)
    edge = fleet(delay_s=1.0)
    flight = InFlight(Router(edge))
    engine = create_async_engine(postgres_database)
    sizes = {"scouts": 2, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}
    try:
        async with two_workers(postgres_database, redis_url, tmp_path, edge, flight) as cluster:
            await start_runs(cluster, 6, sizes)  # SCOUT 3 s: its sends are lost after 3 + 5 s
            paused = await caught_mid_request(cluster, flight)
            os.kill(paused, signal.SIGSTOP)
            try:
                held = {
                    task_id
                    for port, task_id in flight.ports.items()
                    if holder_of(port, [paused]) == paused
                }
                assert held
                await until_voided(engine, held, cluster, within_s=60)
            finally:
                os.kill(paused, signal.SIGCONT)  # it wakes to find its tasks voided
            await until_finished(cluster, engine, within_s=120)
            await asyncio.sleep(1.0)  # the woken worker's late replies land, or not
            tasks, agents, events = await read_back(engine)
            finished = await statuses(engine)
    finally:
        await engine.dispose()
    by_id = {task.id: task for task in tasks}
    assert {(by_id[task_id].status, by_id[task_id].reason) for task_id in held} == {
        ("VOIDED", LOST)
    }
    assert_nothing_lost_or_charged(edge, tasks, agents, events)
    assert finished == Counter({"COMPLETED": 6})


async def until_voided(
    engine: AsyncEngine, task_ids: set[str], cluster: Cluster, within_s: float
) -> None:
    deadline = time.monotonic() + within_s
    while True:
        async with engine.connect() as connection:
            query = select(Task.id, Task.status).where(Task.id.in_(task_ids))
            found = dict((await connection.execute(query)).all())
        if found and set(found.values()) == {"VOIDED"} and len(found) == len(task_ids):
            return
        assert time.monotonic() < deadline, f"{found}\n{cluster.output()}"
        await asyncio.sleep(0.25)
