"""The recorder ends each task once, whatever else its batch holds, on both stores.

A batch is written in one transaction. When every task in it is still
RUNNING it is ended as a whole; a batch that also holds an ended task, a
task that does not exist, or two ends of one task must end exactly the
running ones, each once, and tell the others why not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from sqlalchemy import select

from palaestra.engine.agents.lifecycle import COOLDOWN_S
from palaestra.engine.runs.dispatch import Opened, open_slots
from palaestra.engine.runs.recorder import Finish, Recorder, Recording
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol import Phase
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.store.models import AgentEvent
from tests.integration.run_support import (
    add_agent,
    add_owner,
    agent_row,
    dispatch_events,
    tasks_of,
)
from tests.integration.test_dispatch import new_run, scout_slot

HOUSE = "house-baseline"


def ended(item: Opened, status: TaskStatus = TaskStatus.SUCCEEDED, note: str = "") -> Finish:
    ok = status is TaskStatus.SUCCEEDED
    return Finish(
        task_id=item.task_id,
        run_id=item.request.run_id,
        phase=Phase.SCOUT,
        status=status,
        via="sync",
        executor=item.executor,
        agent_id=item.agent_id,
        output={"note": note} if ok else None,
        reason=None if ok else f"failed {note}",
        latency_ms=1.0,
    )


async def opened_slots(platform: Platform, count: int) -> tuple[list[Opened], list[str]]:
    owner = await add_owner(platform)
    agents = [
        await add_agent(platform, owner, f"scout-{n}", "SCOUT", f"http://127.0.0.1:9/{n}", "k")
        for n in range(count)
    ]
    run_id = await new_run(platform, owner)
    slots = [scout_slot(run_id, slot) for slot in range(count)]
    opened = await open_slots(platform, slots, house_executor=HOUSE)
    assert sorted(o.agent_id or "" for o in opened) == sorted(agents)
    return opened, agents


async def outputs(platform: Platform, run_id: str) -> dict[str, tuple[str, object]]:
    return {t.id: (t.status, t.output) for t in await tasks_of(platform, run_id)}


async def all_events(platform: Platform, agent_id: str) -> Sequence[AgentEvent]:
    async with platform.db.session() as session:
        query = select(AgentEvent).where(AgentEvent.agent_id == agent_id).order_by(AgentEvent.id)
        return (await session.scalars(query)).all()


async def events_of(platform: Platform, agent_ids: Sequence[str]) -> list[int]:
    return [len(await dispatch_events(platform, agent_id)) for agent_id in agent_ids]


async def test_a_batch_of_running_tasks_ends_each_once(platform: Platform) -> None:
    opened, agents = await opened_slots(platform, 5)
    recorder = Recorder(platform)
    verdicts = await recorder.finish_many([ended(o, note=o.task_id) for o in opened])
    assert verdicts == [Recording.RECORDED] * 5
    stored = await outputs(platform, opened[0].request.run_id)
    assert stored == {o.task_id: ("SUCCEEDED", {"note": o.task_id}) for o in opened}
    assert await events_of(platform, agents) == [1] * 5


async def test_a_batch_with_ended_and_unknown_tasks_ends_only_the_running_ones(
    platform: Platform,
) -> None:
    opened, agents = await opened_slots(platform, 4)
    recorder = Recorder(platform)
    first, second, third, fourth = opened
    assert await recorder.finish(ended(second, note="first end")) is Recording.RECORDED

    ghost = Finish(
        task_id=new_id(),
        run_id=first.request.run_id,
        phase=Phase.SCOUT,
        status=TaskStatus.SUCCEEDED,
        via="sync",
        executor="nobody",
    )
    verdicts = await recorder.finish_many(
        [
            ended(first, note="a"),
            ended(second, TaskStatus.FAILED, note="late"),  # ended already
            ended(third, note="c"),
            ghost,
        ]
    )
    assert verdicts == [
        Recording.RECORDED,
        Recording.NOT_RUNNING,
        Recording.RECORDED,
        Recording.NOT_RUNNING,
    ]
    stored = await outputs(platform, first.request.run_id)
    assert stored[first.task_id] == ("SUCCEEDED", {"note": "a"})
    assert stored[second.task_id] == ("SUCCEEDED", {"note": "first end"})  # untouched
    assert stored[third.task_id] == ("SUCCEEDED", {"note": "c"})
    assert stored[fourth.task_id] == ("RUNNING", None)
    by_agent = dict(zip([o.agent_id for o in opened], [1, 1, 1, 0], strict=True))
    assert await events_of(platform, agents) == [by_agent[a] for a in agents]


async def test_two_ends_of_one_task_in_a_batch_record_the_first(platform: Platform) -> None:
    [only], [agent] = await opened_slots(platform, 1)
    verdicts = await Recorder(platform).finish_many(
        [ended(only, note="first"), ended(only, TaskStatus.TIMEOUT, note="second")]
    )
    assert verdicts == [Recording.RECORDED, Recording.NOT_RUNNING]
    stored = await outputs(platform, only.request.run_id)
    assert stored == {only.task_id: ("SUCCEEDED", {"note": "first"})}
    assert await events_of(platform, [agent]) == [1]


async def test_one_agents_ends_in_a_batch_move_its_status_in_their_order(
    platform: Platform,
) -> None:
    """Five slots of one run on one agent, ended in one batch: two successes lift it from
    PROBATION to ACTIVE step by step, a failure counts and cools it down, later successes
    reset the count; the history has every dispatch and every status change, in order."""
    owner = await add_owner(platform)
    agent_id = await add_agent(
        platform,
        owner,
        "scout",
        "SCOUT",
        "http://127.0.0.1:9/",
        "k",
        status="PROBATION",
        consecutive_failures=6,
    )
    runs = [await new_run(platform, owner) for _ in range(5)]  # one slot each: one agent
    opened = await open_slots(
        platform, [scout_slot(run_id) for run_id in runs], house_executor=HOUSE
    )
    assert [o.agent_id for o in opened] == [agent_id] * 5
    statuses = [TaskStatus.SUCCEEDED] * 2 + [TaskStatus.FAILED] + [TaskStatus.SUCCEEDED] * 2
    verdicts = await Recorder(platform).finish_many(
        [
            ended(o, status, note=str(n))
            for n, (o, status) in enumerate(zip(opened, statuses, strict=True))
        ]
    )
    assert verdicts == [Recording.RECORDED] * 5

    row = await agent_row(platform, agent_id)
    assert (row.status, row.consecutive_failures) == ("ACTIVE", 0)
    assert row.cooldown_until == platform.clock.now() + COOLDOWN_S  # from the failure
    assert row.reputation < 0  # the failure's step, and only that one
    assert row.last_heartbeat == platform.clock.now()
    history = await all_events(platform, agent_id)
    assert [(e.kind, e.outcome) for e in history] == [
        ("dispatch", "success"),
        ("status", "DEGRADED"),
        ("dispatch", "success"),
        ("status", "ACTIVE"),
        ("dispatch", "failure"),
        ("dispatch", "success"),
        ("dispatch", "success"),
    ]


async def test_a_batch_of_many_statements_with_an_ended_task_is_redone_exactly(
    platform: Platform,
) -> None:
    """300 ends in one batch (more than one statement per table on SQLite), one of them
    for a task already ended: the first try is rolled back whole, and the running 299 end
    once each, the ended one untouched."""
    owner = await add_owner(platform)
    await add_agent(platform, owner, "scout", "SCOUT", "http://127.0.0.1:9/", "k")
    runs = [await new_run(platform, owner) for _ in range(300)]
    opened = await open_slots(platform, [scout_slot(r) for r in runs], house_executor=HOUSE)
    assert len(opened) == 300
    recorder = Recorder(platform)
    late = opened[150]
    assert await recorder.finish(ended(late, note="first")) is Recording.RECORDED
    verdicts = await recorder.finish_many([ended(o, note=o.task_id) for o in opened])
    assert verdicts == [Recording.NOT_RUNNING if o is late else Recording.RECORDED for o in opened]
    for item in opened:
        [task] = await tasks_of(platform, item.request.run_id)
        expected = {"note": "first"} if item is late else {"note": item.task_id}
        assert (task.status, task.output) == ("SUCCEEDED", expected)
    assert len(await dispatch_events(platform, opened[0].agent_id or "")) == 300


# On PostgreSQL the run's tasks are read unlocked: one caller opens one run at a time
# (the stepper's per-run lock, the jobs' run-step lock), so the race is SQLite's alone.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_two_openings_of_the_same_slots_open_each_once(platform: Platform) -> None:
    """On SQLite the check and the insert are one locked transaction."""
    owner = await add_owner(platform)
    for n in range(3):
        await add_agent(platform, owner, f"scout-{n}", "SCOUT", f"http://127.0.0.1:9/{n}", "k")
    run_id = await new_run(platform, owner)
    slots = [scout_slot(run_id, slot) for slot in range(3)]
    first, second = await asyncio.gather(
        open_slots(platform, slots, house_executor=HOUSE),
        open_slots(platform, slots, house_executor=HOUSE),
    )
    assert len(first) + len(second) == 3  # whichever came second found them taken
    tasks = await tasks_of(platform, run_id)
    assert sorted(t.slot for t in tasks) == [0, 1, 2]
    assert len({t.agent_id for t in tasks}) == 3  # distinct scouts, as selection wants
