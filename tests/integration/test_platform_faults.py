"""The platform's own faults are charged to no agent: voided, counted, the slot opened again.

Two ways a task is lost on the platform's side: opened but never sent (its
stepper died, or was paused, between the two), and sent but its answer never
recorded (its sender died mid-call). Each is voided with its reason, counted
in ``palaestra_platform_faults_total``, its slot opened again under a new
taskId, and its agent left exactly as it was.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import update

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.runs.dispatch import SlotRequest, open_slots
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.runs.runplan import RECORD_GRACE_S
from palaestra.store.models import Run, Task
from tests.integration.edge_agents import EdgeAgent
from tests.integration.run_support import (
    add_agent,
    add_owner,
    agent_row,
    counted,
    run_row,
    tasks_of,
)
from tests.integration.servers import serve

KEY = "fault-key"


def scout_request(run_id: str, slot: int = 0) -> SlotRequest:
    return SlotRequest(
        run_id=run_id,
        phase=Phase.SCOUT,
        candidate_id=None,
        slot=slot,
        attempt=0,
        goal="Find a niche",
        launchpad_name="Make Money",
        messages=[{"role": "user", "content": "Find a niche"}],
        deadline_s=Phase.SCOUT.deadline_ms / 1000,
        seed=run_id,
    )


async def test_a_task_opened_but_never_sent_is_voided_and_sent_again_under_a_new_id(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    scout = EdgeAgent(key=KEY)
    async with serve(scout) as endpoint:
        agent_id = await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run = await start_run(
            platform, Caller(owner), "Find a niche", sizes={"scouts": 1, "shortlist": 1}
        )
        # A stepper opened the slot and died before sending it (or was paused past its
        # deadline): the task is RUNNING, never sent.
        [stale] = await open_slots(platform, [scout_request(run.id)], house_executor="h")
        driver = RunDriver(platform)
        try:
            await driver.advance(run.id)
            assert scout.ledger.task_ids == []  # within its deadline: waited for, not sent
            clock.advance(Phase.SCOUT.deadline_ms / 1000)
            await driver.drain(run.id)
        finally:
            await driver.close()
    tasks = {t.id: t for t in await tasks_of(platform, run.id)}
    assert (tasks[stale.task_id].status, tasks[stale.task_id].reason) == (
        "VOIDED",
        "platform fault: the task was not sent within its 30000ms deadline",
    )
    assert stale.task_id not in scout.ledger.task_ids  # too late: never sent at all
    [again] = [t for t in tasks.values() if t.phase == "SCOUT" and t.attempt == 1]
    assert (again.status, again.agent_id) == ("SUCCEEDED", agent_id)
    assert scout.ledger.task_ids.count(again.id) == 1
    agent = await agent_row(platform, agent_id)
    assert (agent.status, agent.consecutive_failures, agent.cooldown_until) == ("ACTIVE", 0, None)
    assert _faults(platform, "not-sent") == 1
    assert _failures(platform, "platform-fault") == 1


async def test_a_task_whose_sender_died_is_voided_once_its_grace_is_over(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    slow = EdgeAgent(key=KEY, dispatch_delay_s=30)
    async with serve(slow) as endpoint:
        agent_id = await add_agent(platform, owner, "slow", "SCOUT", endpoint.url("/"), KEY)
        run = await start_run(
            platform, Caller(owner), "Find a niche", sizes={"scouts": 1, "shortlist": 1}
        )
        first = RunDriver(platform)
        await first.advance(run.id)
        while not slow.ledger.task_ids:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await first.close()  # the sender dies mid-call
        [lost] = slow.ledger.task_ids
        slow.dispatch_delay_s = 0
        second = RunDriver(platform)
        try:
            clock.advance(Phase.SCOUT.deadline_ms / 1000)
            await second.advance(run.id)
            assert (await _task(platform, lost)).status == "RUNNING"  # within the grace
            clock.advance(RECORD_GRACE_S)
            await second.drain(run.id)
        finally:
            await second.close()
    ended = await _task(platform, lost)
    assert (ended.status, ended.reason) == (
        "VOIDED",
        "platform fault: the task's answer was not recorded (its sender stopped)",
    )
    assert slow.ledger.task_ids.count(lost) == 1
    agent = await agent_row(platform, agent_id)
    assert (agent.status, agent.consecutive_failures, agent.cooldown_until) == ("ACTIVE", 0, None)
    assert _faults(platform, "not-recorded") == 1
    assert _failures(platform, "platform-fault") == 1


async def _task(platform: Platform, task_id: str) -> Task:
    async with platform.db.session() as session:
        task = await session.get(Task, task_id)
    assert task is not None
    return task


def _faults(platform: Platform, kind: str) -> float:
    return counted(platform, "palaestra_platform_faults", kind)


def _failures(platform: Platform, kind: str) -> float:
    return counted(platform, "palaestra_dispatch_failures", kind)


async def test_a_run_the_stepper_cannot_plan_fails_alone_and_the_batch_goes_on(
    platform: Platform,
) -> None:
    owner = await add_owner(platform)
    sizes = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}
    good = await start_run(platform, Caller(owner), "Find a niche", sizes=sizes)
    bad = await start_run(platform, Caller(owner), "Find another", sizes=sizes)
    async with platform.db.session() as session, session.begin():
        # A launchpad the platform no longer knows: its prompts cannot be written.
        await session.execute(update(Run).where(Run.id == bad.id).values(launchpad="gone"))
    driver = RunDriver(platform)
    try:
        stepped = await driver.step()  # one batch: both runs
        assert set(stepped.claimed) == {good.id, bad.id}
        await driver.drain(good.id)
    finally:
        await driver.close()
    assert (await run_row(platform, good.id)).status == "COMPLETED"
    failed = await run_row(platform, bad.id)
    assert (failed.status, failed.error) == ("FAILED", "platform fault: KeyError")
    assert failed.due_at is None
    assert await tasks_of(platform, bad.id) == []
