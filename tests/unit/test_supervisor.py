"""Named, supervised loops: a loop that fails is logged by its name and started again."""

from __future__ import annotations

import asyncio

import structlog

from palaestra.jobs.supervisor import Loop, Supervisor


async def test_a_loop_that_fails_is_logged_by_name_and_started_again() -> None:
    stop = asyncio.Event()
    starts: list[int] = []
    steady = asyncio.Event()

    async def flaky() -> None:
        starts.append(len(starts))
        if len(starts) <= 2:
            raise RuntimeError("the store hiccuped")
        steady.set()
        await stop.wait()

    supervisor = Supervisor([Loop("flaky", flaky)], stop, backoff_s=0.01)
    with structlog.testing.capture_logs() as logs:
        async with supervisor.running():
            await asyncio.wait_for(steady.wait(), 5)
    assert starts == [0, 1, 2]
    assert supervisor.restarts == {"flaky": 2}
    failed = [entry for entry in logs if entry["event"].startswith("loop failed")]
    assert [entry["loop"] for entry in failed] == ["flaky", "flaky"]
    assert [entry["in_s"] for entry in failed] == [0.01, 0.02]  # the wait doubles
    assert all(entry["log_level"] == "error" for entry in failed)


async def test_a_loop_that_ends_before_its_stop_is_started_again() -> None:
    stop = asyncio.Event()
    starts = 0

    async def quits() -> None:
        nonlocal starts
        starts += 1
        if starts < 3:
            return
        await stop.wait()

    with structlog.testing.capture_logs() as logs:
        async with Supervisor([Loop("quits", quits)], stop, backoff_s=0.01).running():
            for _ in range(500):
                if starts == 3:
                    break
                await asyncio.sleep(0.01)
    assert starts == 3
    assert [e["loop"] for e in logs if e["event"].startswith("loop ended on its own")] == [
        "quits",
        "quits",
    ]


async def test_stopping_waits_for_each_loop_and_abandons_one_past_its_bound() -> None:
    stop = asyncio.Event()
    ended: list[str] = []

    async def polite() -> None:
        await stop.wait()
        ended.append("polite")

    async def stubborn() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            ended.append("stubborn")

    loops = [Loop("polite", polite), Loop("stubborn", stubborn, stop_within_s=0.05)]
    supervisor = Supervisor(loops, stop)
    assert supervisor.names == ["polite", "stubborn"]
    async with supervisor.running():
        await asyncio.sleep(0)
    assert stop.is_set()
    assert sorted(ended) == ["polite", "stubborn"]
    assert supervisor.restarts == {"polite": 0, "stubborn": 0}
