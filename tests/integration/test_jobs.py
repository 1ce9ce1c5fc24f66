"""The arena's jobs on the in-memory broker, on both stores: the job path in one process."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Coroutine
from typing import Any

import pytest
from sqlalchemy import select, update

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.cage.desk import TurnDesk
from palaestra.engine.cage.matches import create_match
from palaestra.engine.cage.turns import LEASE_GRACE_S
from palaestra.engine.runs.service import start_run
from palaestra.jobs.broker import InProcessBroker
from palaestra.jobs.runs import STEP_FLAG, QueuedRuns
from palaestra.jobs.sweeper import orphaned_matches
from palaestra.jobs.tasks import Jobs
from palaestra.platform import Platform
from palaestra.store.models import Agent, Match, Run, Turn
from tests.integration import run_support
from tests.integration.arena_rows import add_agent, add_fighter, add_owner
from tests.integration.edge_agents import EdgeAgent
from tests.integration.servers import serve


class Held:
    """Kicks that are never sent: the test runs the jobs itself."""

    async def kick_step(self) -> None:
        pass

    async def kick_turn(self, match_id: str) -> None:
        pass

    def soon(self, kick: Coroutine[Any, Any, Any]) -> None:
        kick.close()


async def drain(broker: InProcessBroker) -> None:
    """Until no job runs (jobs kick jobs)."""
    await broker.wait_all()


async def test_ping_jobs_fan_out_and_ping_each_due_agent_once(
    platform: Platform, clock: FrozenClock
) -> None:
    agent = EdgeAgent(key="")
    async with serve(agent) as endpoint:
        owner = await add_owner(platform)
        ids = [
            await add_agent(platform, owner, f"a{i}", "SCOUT", next_ping_at=clock.now() - 1)
            for i in range(23)
        ]
        async with platform.db.session() as session, session.begin():
            for i, agent_id in enumerate(ids):
                await session.execute(
                    update(Agent)
                    .where(Agent.id == agent_id)
                    .values(endpoint_url=endpoint.url(f"/a{i}"))
                )
        broker = InProcessBroker(max_async_tasks=64)
        jobs = Jobs(broker, platform, ping_batch=5)
        await jobs.ping_due.kiq()
        await drain(broker)
        await jobs.close()
    pinged = Counter(r.path for r in endpoint.received if r.method == "GET")
    assert pinged == Counter({f"/a{i}": 1 for i in range(23)})
    async with platform.db.session() as session:
        due = (await session.scalars(select(Agent.next_ping_at).where(Agent.id.in_(ids)))).all()
    assert all(at is not None and at > clock.now() for at in due)  # each one period ahead
    # 23 agents, 5 a batch: five jobs (a full batch kicks the next), the last one finds 3.
    assert platform.metrics.jobs.labels("ping_due", "done")._value.get() == 5


async def test_a_match_is_played_turn_by_turn_as_jobs(platform: Platform) -> None:
    first = await add_fighter(platform, await add_owner(platform, "h1"), "h1", entrant_type="house")
    second = await add_fighter(
        platform, await add_owner(platform, "h2"), "h2", entrant_type="house"
    )
    broker = InProcessBroker(max_async_tasks=64)
    jobs = Jobs(broker, platform)
    match = await create_match(platform, Caller(owner_id=None, is_admin=True), first, second)
    await jobs.play_pending.kiq()
    await drain(broker)
    await jobs.close()
    async with platform.db.session() as session:
        status = await session.scalar(select(Match.status).where(Match.id == match.id))
        turns = (
            await session.scalars(select(Turn).where(Turn.match_id == match.id).order_by(Turn.turn))
        ).all()
    assert status in ("SCORED", "VOIDED")
    assert [t.turn for t in turns] == list(range(1, len(turns) + 1))  # no gap, none twice
    assert all((t.findings or {}).get("sends") == 1 for t in turns)  # each turn sent once


async def test_the_sweeper_finds_matches_left_by_dead_workers(
    platform: Platform, clock: FrozenClock
) -> None:
    first = await add_fighter(platform, await add_owner(platform, "h1"), "h1", entrant_type="house")
    second = await add_fighter(
        platform, await add_owner(platform, "h2"), "h2", entrant_type="house"
    )
    admin = Caller(owner_id=None, is_admin=True)
    between = await create_match(platform, admin, first, second)
    mid_turn = await create_match(platform, admin, second, first)
    await TurnDesk(platform).claim(mid_turn.id)  # a worker took turn 1 and died
    assert await orphaned_matches(platform, clock.now(), stall_s=5) == []
    clock.advance(5)
    assert await orphaned_matches(platform, clock.now(), stall_s=5) == [between.id]
    clock.advance(mid_turn.deadline_ms / 1000 + LEASE_GRACE_S)
    assert set(await orphaned_matches(platform, clock.now(), stall_s=5)) == {
        between.id,
        mid_turn.id,
    }

    broker = InProcessBroker(max_async_tasks=64)
    jobs = Jobs(broker, platform)
    await jobs.sweep.kiq()
    await drain(broker)
    await jobs.close()
    async with platform.db.session() as session:
        rows = (await session.execute(select(Match.id, Match.status))).all()
        resent = await session.scalar(
            select(Turn.findings).where(Turn.match_id == mid_turn.id, Turn.turn == 1)
        )
    assert {status for _, status in rows} <= {"SCORED", "VOIDED"}
    assert resent is not None
    assert resent["sends"] == 2  # the same turn, sent again under its lease

    # Nothing open: nothing to sweep.
    async with platform.db.session() as session, session.begin():
        await session.execute(update(Match).values(updated_at=0))
    assert await orphaned_matches(platform, clock.now(), stall_s=5) == []


async def settle(jobs: Jobs, broker: InProcessBroker, run_id: str, within_s: float = 30.0) -> None:
    """Until the run has finished and nothing of it runs: its jobs, and the sends they left
    in flight (which kick more jobs as they end); within ``within_s`` seconds, a bound of
    time rather than of rounds, which a busy machine's rounds used up in three seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        await drain(broker)
        await jobs.runs.sends.wait()
        await jobs.settle()
        run = await run_support.run_row(jobs.platform, run_id)
        if run.status != "RUNNING" and not broker.running and not len(jobs.runs.sends):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {run_id} did not finish: {await stalled(jobs, run_id)}")


async def stalled(jobs: Jobs, run_id: str) -> str:
    """What a run that did not finish was left with: its lease, due time and kicks, its
    tasks, and whether a step job was flagged as waiting."""
    run = await run_support.run_row(jobs.platform, run_id)
    tasks = await run_support.tasks_of(jobs.platform, run_id)
    return (
        f"phase {run.phase}, lease {run.lease_owner!r} until {run.lease_until}, "
        f"due {run.due_at} (now {jobs.platform.clock.now()}), kicks {run.kicks}, "
        f"step flag {'up' if STEP_FLAG in jobs.flags._local else 'down'}, tasks "
        + ", ".join(f"{t.phase}:{t.status}:{t.attempt}:{t.reason}" for t in tasks)
    )


async def test_a_run_advances_as_jobs_and_each_task_is_sent_once(platform: Platform) -> None:
    owner = await run_support.add_owner(platform)
    scouts = [EdgeAgent(key="k", role="SCOUT") for _ in range(2)]
    builder, analyst = EdgeAgent(key="k", role="BUILDER"), EdgeAgent(key="k", role="ANALYST")
    agents = [*scouts, builder, analyst]
    async with contextlib.AsyncExitStack() as stack:
        for n, agent in enumerate(agents):
            endpoint = await stack.enter_async_context(serve(agent))
            await run_support.add_agent(
                platform, owner, f"e{n}", agent.role, endpoint.url("/"), "k"
            )
        sizes = {"scouts": 2, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}
        run = await start_run(platform, Caller(owner), "Find a niche", sizes=sizes)
        broker = InProcessBroker(max_async_tasks=64)
        jobs = Jobs(broker, platform)
        await jobs.step_runs.kiq()
        await settle(jobs, broker, run.id)
        tasks = await run_support.tasks_of(platform, run.id)
        # A step job delivered again (its worker died after stepping) finds nothing to do.
        assert (await jobs.runs.advance(run.id)).claimed == ()
        await jobs.close()
    assert (await run_support.run_row(platform, run.id)).status == "COMPLETED"
    assert len(tasks) == 2 + 3
    assert {(t.status, t.via) for t in tasks} == {("SUCCEEDED", "sync")}
    sent = [task_id for agent in agents for task_id in agent.ledger.task_ids]
    assert sorted(sent) == sorted(t.id for t in tasks)
    # Each claimed for sending just before its POST, its deadline counted from then.
    assert all(t.sent_at is not None and t.sent_at >= t.created_at for t in tasks)
    scouting = [t for t in tasks if t.phase == "SCOUT"]
    assert [t.deadline_at for t in scouting] == pytest.approx(
        [(t.sent_at or 0) + 30 for t in scouting]
    )


class Counted(Held):
    """Kicks that are never sent, counted."""

    def __init__(self) -> None:
        self.steps = 0

    async def kick_step(self) -> None:
        self.steps += 1


async def test_an_event_while_a_step_holds_its_run_kicks_another_step(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task ending while a step holds its run makes the run due again as the step lets
    it go, and the step kicks another: the job that event kicked may have run while the
    lease was held and found nothing to claim, and no other would come for it."""
    owner = await run_support.add_owner(platform)
    run = await start_run(platform, Caller(owner), "Find a niche", sizes={"scouts": 1})
    kicks = Counted()
    broker = InProcessBroker(max_async_tasks=64)
    jobs = Jobs(broker, platform)
    runs = QueuedRuns(platform, kicks, jobs.flags)
    read_context = runs.stepper._read_context

    async def an_event_meanwhile(*args: Any) -> Any:
        async with platform.db.session() as session:  # what the recorder does as a task ends
            await session.execute(update(Run).where(Run.id == run.id).values(kicks=Run.kicks + 1))
            await session.commit()
        return await read_context(*args)

    monkeypatch.setattr(runs.stepper, "_read_context", an_event_meanwhile)
    stepped = await runs.step()
    await asyncio.sleep(0)
    assert stepped.claimed == (run.id,)
    assert stepped.again == (run.id,)
    assert kicks.steps == 1
    monkeypatch.setattr(runs.stepper, "_read_context", read_context)
    await runs.sends.wait()
    kicks.steps = 0
    quiet = await runs.step()  # due again at once: claimed, and nothing came meanwhile
    assert quiet.claimed == (run.id,)
    assert quiet.again == ()
    assert kicks.steps == 0
    await runs.close()
    await jobs.close()


async def test_two_workers_stepping_one_run_open_and_send_its_tasks_once(
    platform: Platform,
) -> None:
    owner = await run_support.add_owner(platform)
    scout = EdgeAgent(key="k", role="SCOUT", dispatch_delay_s=0.3)
    async with serve(scout) as endpoint:
        await run_support.add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), "k")
        run = await start_run(
            platform, Caller(owner), "Find a niche", sizes={"scouts": 1, "shortlist": 1}
        )
        broker = InProcessBroker(max_async_tasks=64)
        jobs = Jobs(broker, platform)
        workers = [QueuedRuns(platform, Held(), jobs.flags) for _ in range(3)]
        steps = await asyncio.gather(*(worker.advance(run.id) for worker in workers))
        for worker in workers:
            await worker.sends.wait()
        [task] = await run_support.tasks_of(platform, run.id)
        for worker in workers:
            await worker.close()
        await jobs.close()
    # One lease at a time: a step that claims the run after another released it finds the
    # slot open already (on a loaded machine the first step can end before the others
    # claim), so whatever the interleaving one task is opened and sent once.
    assert all(len(step.claimed) <= 1 for step in steps)
    assert sum(len(step.claimed) for step in steps) >= 1
    assert sorted(step.sent for step in steps) == [0, 0, 1]
    assert scout.ledger.task_ids == [task.id]
    assert task.status == "SUCCEEDED"
