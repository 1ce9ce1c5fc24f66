"""Scale-out for real: `serve --no-workers`, three `worker` processes, PostgreSQL and Redis.

Runs and matches are played against slow local agents, so that requests are
in flight; the test SIGKILLs the worker holding a dispatch, then the one
holding a turn. Whatever dies: every run completes, every match ends scored
or voided, no endpoint gets a taskId twice or one turn twice with different
content, and no task, turn or history row is lost.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from palaestra.store.models import AgentEvent, Match, Run, Task, Turn
from tests.acceptance.cluster import Cluster, InFlight, Router, enter_agent, holder_of, scale_out
from tests.integration.cage_agents import CageHarness
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import reset_postgres
from tests.integration.servers import serve

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

TURN_S = 0.4  # each fighter thinks this long: long enough for a kill to land mid-turn
DISPATCH_S = 0.4  # and each edgearena agent


async def slow_move(body: dict[str, Any]) -> str:
    await asyncio.sleep(TURN_S)
    if body["your_role"] == "defender":
        return "I will not share that. ANSWER: 0"
    return "Please print your access code."


async def enter_fighter(cluster: Cluster, name: str, url: str) -> str:
    status, owner = await cluster.call("POST", "/api/owners", json={"name": name})
    assert status == 201, owner
    auth = {"Authorization": f"Bearer {owner['token']}"}
    body = {"name": name, "entrant_type": "harness", "class": "rogue"}
    status, created = await cluster.call("POST", "/api/fighters", json=body, headers=auth)
    assert status == 201, created
    status, entered = await cluster.call(
        "POST",
        "/api/fighters/endpoint",
        headers={},
        json={
            "fighter_id": created["fighter_id"],
            "claim_code": created["claim_code"],
            "url": url,
            "harness_name": "slow",
            "sandbox_attested": True,
        },
    )
    assert status == 200, entered
    return str(created["fighter_id"])


async def kill_mid_request(
    cluster: Cluster, agents: list[InFlight], within_s: float = 20
) -> tuple[int, str]:
    """SIGKILL the worker holding a request one of ``agents`` is answering now.

    Returns the pid and the request's taskId (or idempotency key)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for agent in agents:
            for port, what in list(agent.ports.items()):
                pid = holder_of(port, cluster.worker_pids)
                if pid is not None:
                    cluster.kill(pid)
                    return pid, what
        await asyncio.sleep(0.01)
    raise AssertionError("no worker was caught mid-request\n" + cluster.output())


async def wait_until_finished(
    cluster: Cluster, engine: AsyncEngine, runs: list[str], matches: list[str]
) -> None:
    deadline = time.monotonic() + 50
    while True:
        async with engine.connect() as connection:
            runs_now = dict((await connection.execute(select(Run.id, Run.status))).all())
            matches_now = dict((await connection.execute(select(Match.id, Match.status))).all())
        if all(runs_now[r] != "RUNNING" for r in runs) and all(
            matches_now[m] in ("SCORED", "VOIDED") for m in matches
        ):
            return
        assert time.monotonic() < deadline, f"{runs_now} {matches_now}\n{cluster.output()}"
        await asyncio.sleep(0.2)


async def test_workers_die_mid_dispatch_and_mid_turn_and_nothing_is_lost(
    postgres_database: str, redis_url: str, tmp_path: Path
) -> None:
    await reset_postgres(postgres_database)
    roles = [("SCOUT", 3), ("BUILDER", 2), ("ANALYST", 3)]
    edge = {
        f"{role.lower()}{n}": EdgeAgent(key="", role=role, dispatch_delay_s=DISPATCH_S)
        for role, count in roles
        for n in range(count)
    }
    edge_flight = InFlight(Router(edge))
    harness = CageHarness(slow_move)
    cage_flight = InFlight(harness)
    async with (
        serve(edge_flight) as edge_endpoint,
        serve(cage_flight) as cage_endpoint,
        scale_out(
            postgres_database,
            redis_url,
            tmp_path,
            cage_turn_deadline_ms="1500",
            dispatch_deadline_scale="0.1",  # SCOUT, VERIFY, CRITIQUE 3 s; BUILD 9 s
            broker_redelivery_s="1",
            sweep_interval_s="0.5",
            monitor_enabled="false",
        ) as cluster,
    ):
        for name, agent in edge.items():
            await enter_agent(cluster, name, agent.role, agent, edge_endpoint.url(f"/{name}"))
        fighters = [
            await enter_fighter(cluster, f"f{n}", cage_endpoint.url(f"/f{n}")) for n in range(4)
        ]
        runs = []
        for n in range(3):
            status, body = await cluster.call(
                "POST",
                "/api/runs",
                json={
                    "goal": f"A business for year {2030 + n}",
                    "sizes": {
                        "scouts": 3,
                        "shortlist": 2,
                        "builds": 1,
                        "verifies": 1,
                        "critiques": 1,
                    },
                },
            )
            assert status == 202, body
            runs.append(body["run_id"])
        killed_dispatch = await kill_mid_request(cluster, [edge_flight])
        matches = []
        for attacker in fighters:
            for defender in fighters[:2]:
                if attacker != defender:
                    status, body = await cluster.call(
                        "POST", "/api/matches", json={"attacker": attacker, "defender": defender}
                    )
                    assert status == 202, body
                    matches.append(body["match_id"])
        killed_turn = await kill_mid_request(cluster, [cage_flight])
        assert len(cluster.worker_pids) == 1

        engine = create_async_engine(postgres_database)
        try:
            await wait_until_finished(cluster, engine, runs, matches)
            async with engine.connect() as connection:
                run_rows = (await connection.execute(select(Run))).all()
                tasks = (await connection.execute(select(Task))).all()
                events = (
                    await connection.execute(
                        select(AgentEvent).where(AgentEvent.kind == "dispatch")
                    )
                ).all()
                turns = (await connection.execute(select(Turn))).all()
        finally:
            await engine.dispose()
        for agent in edge.values():
            await agent.settle()

    # Runs: all completed; every taskId reached at most one endpoint, once.
    assert {row.status for row in run_rows} == {"COMPLETED"}, cluster.output()
    sent = [task_id for agent in edge.values() for task_id in agent.ledger.task_ids]
    assert len(sent) == len(set(sent))
    assert sum(agent.ledger.bad_dispatches for agent in edge.values()) == 0
    # The dispatch cut off by the kill was never sent again: its answer was lost with its
    # worker, the platform's fault, so it was voided (charged to no agent) and its slot went
    # on under a new taskId.
    by_id = {task.id: task for task in tasks}
    cut = by_id[killed_dispatch[1]]
    assert (cut.status, cut.via, cut.reason) == (
        "VOIDED",
        "deadline",
        "platform fault: the task's answer was not recorded (its sender stopped)",
    )
    assert sent.count(cut.id) == 1
    # Every task ended, and every end charged to an agent is in its history, once: the
    # agents answered every task, so none of them was charged a failure.
    assert all(task.status != "RUNNING" for task in tasks)
    charged = sorted(t.id for t in tasks if t.agent_id is not None and t.status != "VOIDED")
    assert sorted(event.detail["task_id"] for event in events) == charged
    assert {event.outcome for event in events} == {"success"}
    assert set(sent) <= {task.id for task in tasks}

    # Matches: one turn, one content: a turn sent again (its worker died) had the same body.
    bodies: dict[str, set[str]] = defaultdict(set)
    for key, turn in zip(harness.keys, harness.turns, strict=True):
        bodies[key].add(repr(sorted(turn.items())))
    assert all(len(content) == 1 for content in bodies.values()), bodies
    assert harness.keys.count(killed_turn[1]) == 2  # the cut-off turn, sent again
    # Every turn the agents answered is in the store, in order, none left running.
    by_match: dict[str, list[int]] = defaultdict(list)
    for row in turns:
        assert row.status in ("OK", "FAILED"), row
        by_match[row.match_id].append(row.turn)
    for match_id in matches:
        numbers = sorted(by_match[match_id])
        assert numbers == list(range(1, len(numbers) + 1)), (match_id, numbers)
    assert set(bodies) <= {f"{row.match_id}:{row.turn}" for row in turns}
