"""The stepper's bound on sends in flight: at ``dispatch_in_flight`` due runs wait.

What a process holds per send in flight (its body, request, connection and
coroutine) is bounded per process, not per run started: a step claims only as
many due runs as the room left allows, none from the moment it is full until
half of it is free again (so steps stay batches), and the runs wait, due,
with nothing opened (so no deadline runs against anyone).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import update

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.service import start_run
from palaestra.jobs.broker import Flags
from palaestra.jobs.runs import QueuedRuns
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import Run
from tests.integration.run_support import add_owner, run_row, tasks_of
from tests.integration.test_jobs import Counted

pytestmark = pytest.mark.asyncio

ONE_SCOUT = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"dispatch_in_flight": 4})


async def until(event: asyncio.Event) -> None:
    """A send that stays in flight until ``event``."""
    await event.wait()


async def release(driver: RunDriver, event: asyncio.Event) -> None:
    """End the held send waiting on ``event``, and wait until it has left the sends."""
    jobs = driver.sends.jobs()
    event.set()
    await asyncio.wait(jobs, return_when=asyncio.FIRST_COMPLETED)


@pytest.fixture
async def driver(platform: Platform) -> AsyncIterator[RunDriver]:
    runs = RunDriver(platform)
    yield runs
    await runs.close()


async def reached(event: asyncio.Event, step: asyncio.Task[Any]) -> None:
    """Wait until ``event`` is set; fail, rather than wait for ever, if ``step`` ends first."""
    waiting = asyncio.ensure_future(event.wait())
    await asyncio.wait({waiting, step}, return_when=asyncio.FIRST_COMPLETED)
    if not event.is_set():
        waiting.cancel()
        raise AssertionError(f"the step ended without the held transaction: {step.result()}")


def held_transaction(
    platform: Platform, monkeypatch: pytest.MonkeyPatch, number: int, *, done: bool = False
) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold the store's ``number``-th transaction from now (1 for the next) until the second
    event is set, before it runs (or, ``done``, once it has); the first is set when it is
    reached."""
    reached, go_on = asyncio.Event(), asyncio.Event()
    transact = platform.db.transact
    calls = 0

    async def held(work: object, **options: object) -> object:
        nonlocal calls
        calls += 1
        this = calls
        if this == number and not done:
            reached.set()
            await go_on.wait()
        result: object = await transact(work, **options)  # type: ignore[arg-type]
        if this == number and done:
            reached.set()
            await go_on.wait()
        return result

    monkeypatch.setattr(platform.db, "transact", held)
    return reached, go_on


async def due_at(platform: Platform, run_id: str, when: float) -> None:
    async with platform.db.session() as session:
        await session.execute(update(Run).where(Run.id == run_id).values(due_at=when))
        await session.commit()


async def test_a_full_process_claims_no_due_run_until_half_its_sends_are_free(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    runs = [
        (await start_run(platform, Caller(owner), f"Goal {n}", sizes=ONE_SCOUT)).id
        for n in range(3)
    ]
    held = [asyncio.Event() for _ in range(4)]
    for n, event in enumerate(held):
        driver.sends.start(f"held-{n}", "elsewhere", until(event))
    assert driver.stepper.room() == 0

    stepped = await driver.step()

    assert stepped.claimed == ()
    for run_id in runs:
        assert await tasks_of(platform, run_id) == []
        assert (await run_row(platform, run_id)).status == "RUNNING"

    await release(driver, held[0])
    assert len(driver.sends) == 3
    assert driver.stepper.room() == 0  # one send free of four: not yet half
    assert (await driver.step()).claimed == ()

    await release(driver, held[1])
    assert len(driver.sends) == 2
    assert driver.stepper.room() == 1  # half free: a step of a run opens a few sends

    stepped = await driver.step()

    assert len(stepped.claimed) == 1
    assert not stepped.owed  # the sends filled the room, not a step: their ends kick
    opened = [run_id for run_id in runs if await tasks_of(platform, run_id)]
    assert opened == list(stepped.claimed)
    for event in held:
        event.set()


async def test_a_named_run_is_stepped_even_when_the_process_is_full(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    run_id = (await start_run(platform, Caller(owner), "Goal", sizes=ONE_SCOUT)).id
    held = asyncio.Event()
    for n in range(4):
        driver.sends.start(f"held-{n}", "elsewhere", until(held))

    stepped = await driver.stepper.step([run_id])

    assert stepped.claimed == (run_id,)
    assert len(await tasks_of(platform, run_id)) == 1
    held.set()


async def test_steps_under_way_at_once_share_the_room(
    platform: Platform, driver: RunDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker runs jobs at once: a step that has claimed its room holds it until its sends
    have started, so a second step meanwhile finds none left rather than the same room."""
    owner = await add_owner(platform)
    for n in range(3):
        await start_run(platform, Caller(owner), f"Goal {n}", sizes=ONE_SCOUT)
    assert driver.stepper.room() == 1  # four sends free: one run's step (its scouts)
    claiming, go_on = held_transaction(platform, monkeypatch, 1)  # the first step's claim
    first = asyncio.create_task(driver.step())
    await reached(claiming, first)

    assert driver.stepper.room() == 0
    assert (await driver.step()).claimed == ()

    go_on.set()
    assert len((await first).claimed) == 1
    for job in driver.sends.jobs():
        job.cancel()


async def test_a_step_holds_only_the_room_its_plan_opens(
    platform: Platform, driver: RunDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once planned, a step holds the sends it opens, not the most a run could open: while it
    writes, another step may claim with the rest (PostgreSQL steps two at once)."""
    owner = await add_owner(platform)
    for n in range(3):
        await start_run(platform, Caller(owner), f"Goal {n}", sizes=ONE_SCOUT)
    # The first step's write: its claim comes first.
    writing, go_on = held_transaction(platform, monkeypatch, 2)
    first = asyncio.create_task(driver.step())
    await reached(writing, first)

    assert driver.stepper.room() == 1  # one send held of four: room for another run's step
    second = await driver.step()
    assert len(second.claimed) == 1

    go_on.set()
    claimed = (await first).claimed + second.claimed
    assert len(set(claimed)) == 2
    for run_id in claimed:
        assert len(await tasks_of(platform, run_id)) == 1
    for job in driver.sends.jobs():
        job.cancel()


async def test_a_job_that_found_no_room_is_owed_a_step_by_the_job_that_held_it(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's second step job finds the room held by its first and claims nothing. A run
    made due after the first had claimed would then have no job coming: the first, as it
    ends, says another step is ``owed`` and kicks it (the embedded driver steps again)."""
    owner = await add_owner(platform)
    run_id = (await start_run(platform, Caller(owner), "Goal", sizes=ONE_SCOUT)).id
    await due_at(platform, run_id, platform.clock.now() + 3600)  # not due at the first claim
    kicks = Counted()
    runs = QueuedRuns(platform, kicks, Flags(None, "test", 5.0))
    claimed, go_on = held_transaction(platform, monkeypatch, 1, done=True)
    first = asyncio.create_task(runs.step())
    await reached(claimed, first)
    await due_at(platform, run_id, platform.clock.now())  # as a task of the run ends

    second = await runs.step()
    assert (second.claimed, second.owed) == ((), False)  # due, but no room: the first's
    assert kicks.steps == 0

    go_on.set()
    stepped = await first
    assert (stepped.claimed, stepped.owed) == ((), True)
    assert kicks.steps == 1  # the step the second job could not take

    third = await runs.step()
    assert (third.claimed, third.owed) == ((run_id,), False)
    assert kicks.steps == 1
    for job in runs.sends.jobs():
        job.cancel()
    await runs.close()


async def test_the_driver_steps_again_at_once_when_a_step_is_owed(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one process the driver's loop that held the room steps again as soon as it ends,
    rather than at its next tick (here a minute away) or the next event."""
    owner = await add_owner(platform)
    run_id = (await start_run(platform, Caller(owner), "Goal", sizes=ONE_SCOUT)).id
    await due_at(platform, run_id, platform.clock.now() + 3600)  # not due at the first claim
    driver = RunDriver(platform, tick_s=60.0)
    stop = asyncio.Event()
    claimed, go_on = held_transaction(platform, monkeypatch, 1, done=True)
    loops = asyncio.create_task(driver.run(stop))
    try:
        await reached(claimed, loops)
        await due_at(platform, run_id, platform.clock.now())  # as a task of the run ends
        assert (await driver.step()).claimed == ()  # due, but no room: the loop's

        go_on.set()
        for _ in range(200):  # ten seconds, far from the tick
            if await tasks_of(platform, run_id):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the loop did not step again until its tick")
    finally:
        stop.set()
        await loops
        await driver.close()
