"""A missed callback is the agent's only if the completion endpoint was up all along.

An agent answered 202 and owes its answer by the callback. If the API that receives
callbacks went down between the send and the deadline, or has not beaten since the deadline
(scale-out: the runs are stepped by workers while the API may be down), the callback may
have been refused by the platform: once the agent had its time to retry, the task is voided
as the platform's fault, its agent untouched. With the endpoint seen up from the send to the
deadline (a restart only after it included), the missed callback is the agent's TIMEOUT.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.endpoint import announce_up, beat, read_endpoint
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.rules.runs.runplan import CALLBACK_RETRY_S, CALLBACK_STALE_S, CallbackEndpoint
from palaestra.settings import Settings
from palaestra.store.models import Task
from tests.integration.edge_agents import EdgeAgent
from tests.integration.run_support import add_agent, add_owner, agent_row, counted
from tests.integration.servers import serve

KEY = "ea_endpoint-key"
DOWN = "platform fault: the completion endpoint was down while the task's answer was due"
SIZES = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"dispatch_deadline_scale": 1 / 30})  # SCOUT 1 s


@dataclass
class Deferred:
    driver: RunDriver
    run_id: str
    task_id: str
    agent_id: str

    async def step(self) -> None:
        await self.driver.advance(self.run_id)


@pytest.fixture
async def deferred(platform: Platform, clock: FrozenClock) -> AsyncIterator[Deferred]:
    """An API up (and beating) since before the run; the run's SCOUT task sent to an agent
    that answered 202 and never calls back."""
    await announce_up(platform, beating=True)
    clock.advance(0.1)
    owner = await add_owner(platform)
    silent = EdgeAgent(key=KEY, defer_to="http://127.0.0.1:9", callback_delay_s=3600)
    driver = RunDriver(platform)
    try:
        async with serve(silent) as endpoint:
            agent_id = await add_agent(platform, owner, "silent", "SCOUT", endpoint.url("/"), KEY)
            run = await start_run(platform, Caller(owner), "Find a niche", sizes=SIZES)
            await driver.advance(run.id)
            while not silent.ledger.task_ids or driver.in_flight(run.id):
                await driver.advance(run.id)
                await asyncio.sleep(0.01)
            [task_id] = silent.ledger.task_ids
            assert (await the_task(platform, task_id))[0] == "RUNNING"
            yield Deferred(driver, run.id, task_id, agent_id)
            for job in list(silent._callbacks):
                job.cancel()
    finally:
        await driver.close()


async def the_task(platform: Platform, task_id: str) -> tuple[str, str | None]:
    async with platform.db.session() as session:
        task = await session.get(Task, task_id)
    assert task is not None
    return task.status, task.reason


async def charged(platform: Platform, agent_id: str) -> tuple[str, int]:
    agent = await agent_row(platform, agent_id)
    return agent.status, agent.consecutive_failures


def voided(platform: Platform) -> float:
    return counted(platform, "palaestra_platform_faults", "callback-down")


async def test_an_endpoint_restarted_after_the_send_voids_the_missed_callback(
    platform: Platform, clock: FrozenClock, deferred: Deferred
) -> None:
    clock.advance(0.5)
    await announce_up(platform, beating=True)  # the API restarted while the answer was due
    clock.advance(0.6)  # past the deadline; it beats on
    await beat(platform)
    await deferred.step()
    assert (await the_task(platform, deferred.task_id))[0] == "RUNNING"  # the agent may retry
    clock.advance(CALLBACK_RETRY_S)
    await beat(platform)
    await deferred.step()
    assert await the_task(platform, deferred.task_id) == ("VOIDED", DOWN)
    assert await charged(platform, deferred.agent_id) == ("ACTIVE", 0)
    assert voided(platform) == 1


async def test_an_endpoint_that_beat_through_the_deadline_leaves_the_timeout_to_the_agent(
    platform: Platform, clock: FrozenClock, deferred: Deferred
) -> None:
    clock.advance(1.0)  # the deadline, and the API beats
    await beat(platform)
    await deferred.step()
    assert await the_task(platform, deferred.task_id) == (
        "TIMEOUT",
        "External agent timed out after 1000ms",
    )
    assert await charged(platform, deferred.agent_id) == ("ACTIVE", 1)
    assert voided(platform) == 0


async def test_an_endpoint_silent_since_before_the_deadline_voids_it_once_stale(
    platform: Platform, clock: FrozenClock, deferred: Deferred
) -> None:
    clock.advance(1.0)  # the deadline; the API has not beaten since before the send
    await deferred.step()
    assert (await the_task(platform, deferred.task_id))[0] == "RUNNING"  # it may beat yet
    clock.advance(CALLBACK_STALE_S)
    await deferred.step()
    assert await the_task(platform, deferred.task_id) == ("VOIDED", DOWN)
    assert await charged(platform, deferred.agent_id) == ("ACTIVE", 0)


async def test_a_late_beat_within_the_stale_time_still_leaves_the_timeout_to_the_agent(
    platform: Platform, clock: FrozenClock, deferred: Deferred
) -> None:
    clock.advance(1.0)
    await deferred.step()
    clock.advance(CALLBACK_STALE_S / 2)
    await beat(platform)  # late, but alive: it was up all along
    await deferred.step()
    assert (await the_task(platform, deferred.task_id))[0] == "TIMEOUT"
    assert await charged(platform, deferred.agent_id) == ("ACTIVE", 1)


async def test_an_endpoint_down_only_after_the_deadline_leaves_the_timeout_to_the_agent(
    platform: Platform, clock: FrozenClock, deferred: Deferred
) -> None:
    clock.advance(1.0)  # the deadline, and the API beats
    await beat(platform)
    clock.advance(2.0)
    await announce_up(platform, beating=True)  # killed after its last beat, and back
    await deferred.step()
    assert (await the_task(platform, deferred.task_id))[0] == "TIMEOUT"
    assert await charged(platform, deferred.agent_id) == ("ACTIVE", 1)


async def test_a_start_keeps_the_last_beat_before_it_as_when_the_endpoint_went_down(
    platform: Platform, clock: FrozenClock
) -> None:
    await announce_up(platform, beating=True)
    first = clock.now()
    assert await read_endpoint_now(platform) == CallbackEndpoint(first, first, None)
    clock.advance(1.0)
    await beat(platform)
    clock.advance(5.0)
    await announce_up(platform, beating=True)
    assert await read_endpoint_now(platform) == CallbackEndpoint(
        clock.now(), clock.now(), first + 1.0
    )
    await announce_up(platform, beating=False)  # one embedded process: not watched
    assert await read_endpoint_now(platform) == CallbackEndpoint(clock.now(), None, clock.now())


async def read_endpoint_now(platform: Platform) -> CallbackEndpoint | None:
    async with platform.db.read() as connection:
        return await connection.run_sync(read_endpoint)
