"""Whole runs at load in one process: hundreds at once, every one complete, no agent charged.

Fast agents on 127.0.0.1, the embedded driver stepping the runs in batches on
each store, on the real clock (the platform's own delays are real here):
every run completes, every task succeeds, every taskId reaches its agent
exactly once, and no agent is charged for anything.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select

from palaestra.clock import Clock, SystemClock
from palaestra.engine.accounts import Caller
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.store.models import Agent, Run, Task
from tests.integration.edge_agents import EdgeAgent
from tests.integration.run_support import add_agent, add_owner
from tests.integration.servers import serve

KEY = "load-key"
RUNS = 200
ROLES = {"SCOUT": 8, "BUILDER": 4, "ANALYST": 6}


@contextlib.asynccontextmanager
async def fleet(platform: Platform) -> AsyncIterator[list[EdgeAgent]]:
    """Fast agents of every role, registered and ACTIVE."""
    owner = await add_owner(platform)
    agents = [EdgeAgent(key=KEY, role=role) for role, n in ROLES.items() for _ in range(n)]
    async with contextlib.AsyncExitStack() as stack:
        for number, agent in enumerate(agents):
            endpoint = await stack.enter_async_context(serve(agent))
            await add_agent(platform, owner, f"a{number}", agent.role, endpoint.url("/"), KEY)
        yield agents


async def running_runs(platform: Platform) -> int:
    async with platform.db.engine.connect() as connection:
        query = select(func.count()).select_from(Run).where(Run.status == "RUNNING")
        return int((await connection.execute(query)).scalar_one())


class RealClock(SystemClock):
    """The real time, under the fixture's name."""


@pytest.fixture
def clock() -> Clock:
    # At load the platform's own delays are real: measured by the real clock.
    return RealClock()


async def test_hundreds_of_runs_at_once_all_complete_and_no_agent_is_charged(
    platform: Platform,
) -> None:
    async with fleet(platform) as agents:
        owner = await add_owner(platform, "starter")
        driver = RunDriver(platform)
        stop = asyncio.Event()
        loop = asyncio.create_task(driver.run(stop))
        try:
            runs = [await start_run(platform, Caller(owner), f"Goal {n}") for n in range(RUNS)]
            driver.wake()
            for _ in range(1200):
                if not await running_runs(platform):
                    break
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            driver.wake()
            await loop
            await driver.close()
    run_ids = {run.id for run in runs}
    async with platform.db.engine.connect() as connection:
        statuses = (await connection.execute(select(Run.status))).scalars().all()
        tasks = (await connection.execute(select(Task.id, Task.status, Task.run_id))).all()
        agent_rows = (
            await connection.execute(
                select(Agent.name, Agent.status, Agent.consecutive_failures, Agent.cooldown_until)
            )
        ).all()
    assert Counter(statuses) == Counter({"COMPLETED": RUNS})
    assert {run_id for _, _, run_id in tasks} == run_ids
    # The agents' scouts all propose one title: merged, one candidate is shortlisted, so a
    # run has 5 SCOUT tasks and 1 BUILD, 1 VERIFY and 2 CRITIQUE.
    assert Counter(status for _, status, _ in tasks) == Counter({"SUCCEEDED": RUNS * 9})
    received = [task_id for agent in agents for task_id in agent.ledger.task_ids]
    assert len(received) == len(set(received)) == RUNS * 9
    assert set(received) == {task_id for task_id, _, _ in tasks}
    assert sum(agent.ledger.bad_dispatches for agent in agents) == 0
    for name, status, failures, cooldown in agent_rows:
        assert (status, failures, cooldown) == ("ACTIVE", 0, None), name
