"""The stepper's bound on sends in flight: past ``dispatch_in_flight`` due runs wait.

What a process holds per send in flight (its body, request, connection and
coroutine) is bounded per process, not per run started: a step claims only as
many due runs as the room left allows, none when it is full, and the runs
wait, due, with nothing opened (so no deadline runs against anyone).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.run_support import add_owner, run_row, tasks_of

pytestmark = pytest.mark.asyncio

ONE_SCOUT = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"dispatch_in_flight": 2})


async def until(event: asyncio.Event) -> None:
    """A send that stays in flight until ``event``."""
    await event.wait()


@pytest.fixture
async def driver(platform: Platform) -> AsyncIterator[RunDriver]:
    runs = RunDriver(platform)
    yield runs
    await runs.close()


async def test_a_full_process_claims_no_due_run_and_a_freed_send_lets_one_in(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    runs = [
        (await start_run(platform, Caller(owner), f"Goal {n}", sizes=ONE_SCOUT)).id
        for n in range(3)
    ]
    held = [asyncio.Event(), asyncio.Event()]
    for n, event in enumerate(held):
        driver.sends.start(f"held-{n}", "elsewhere", until(event))
    assert driver.stepper.room() == 0

    stepped = await driver.step()

    assert stepped.claimed == ()
    for run_id in runs:
        assert await tasks_of(platform, run_id) == []
        assert (await run_row(platform, run_id)).status == "RUNNING"

    held[0].set()
    await asyncio.sleep(0)  # the held send ends
    await asyncio.sleep(0)
    assert len(driver.sends) == 1
    assert driver.stepper.room() == 1  # a step of a run opens a few sends: one run's room

    stepped = await driver.step()

    assert len(stepped.claimed) == 1
    opened = [run_id for run_id in runs if await tasks_of(platform, run_id)]
    assert opened == list(stepped.claimed)
    held[1].set()


async def test_a_named_run_is_stepped_even_when_the_process_is_full(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    run_id = (await start_run(platform, Caller(owner), "Goal", sizes=ONE_SCOUT)).id
    held = asyncio.Event()
    for n in range(2):
        driver.sends.start(f"held-{n}", "elsewhere", until(held))

    stepped = await driver.stepper.step([run_id])

    assert stepped.claimed == (run_id,)
    assert len(await tasks_of(platform, run_id)) == 1
    held.set()
