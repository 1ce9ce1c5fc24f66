"""Shared-timer deadlines behave as ``asyncio.timeout`` does, at most one slot late."""

from __future__ import annotations

import asyncio
import math

import pytest

from palaestra.egress.deadlines import SLOT_S, DeadlineTimers


async def test_a_block_that_ends_in_time_is_left_alone_and_disarmed() -> None:
    deadlines = DeadlineTimers(asyncio.get_running_loop())
    with deadlines.after(1.0):
        await asyncio.sleep(0)
        assert deadlines.pending() == 1
    assert deadlines.pending() == 0
    await asyncio.sleep(0)  # and the task was not cancelled afterwards


async def test_a_block_that_overruns_raises_timeout_error_within_one_slot() -> None:
    loop = asyncio.get_running_loop()
    deadlines = DeadlineTimers(loop)
    started = loop.time()
    with pytest.raises(TimeoutError), deadlines.after(0.1) as deadline:
        await asyncio.sleep(10)
    assert deadline.when <= deadline.slot * SLOT_S < deadline.when + SLOT_S  # its slot's timer
    waited = loop.time() - started
    assert 0.1 - 0.002 <= waited < 0.1 + SLOT_S + 0.5, waited  # not early; late only by load
    assert deadlines.pending() == 0
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_deadline_already_past_times_out_at_the_first_await() -> None:
    deadlines = DeadlineTimers(asyncio.get_running_loop())
    reached = []

    async def call() -> None:
        with deadlines.after(-1):
            reached.append("entered")
            await asyncio.sleep(0)
            reached.append("after the await")

    with pytest.raises(TimeoutError):
        await call()
    assert reached == ["entered"]


async def test_a_past_deadline_on_a_block_that_never_awaits_leaves_nothing_behind() -> None:
    deadlines = DeadlineTimers(asyncio.get_running_loop())
    with deadlines.after(-1):
        pass  # nothing awaited: no timeout, and no cancellation pending afterwards
    await asyncio.sleep(0.01)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_deadline_is_entered_once_only() -> None:
    deadlines = DeadlineTimers(asyncio.get_running_loop())
    deadline = deadlines.after(10)
    with deadline:
        pass
    with pytest.raises(RuntimeError, match="once only"), deadline:
        pass


async def test_calls_ending_in_the_same_slot_share_one_timer() -> None:
    loop = asyncio.get_running_loop()
    deadlines = DeadlineTimers(loop)
    # 20 deadlines 1 ms apart, just after a slot boundary well ahead: one slot holds them.
    target = (math.floor(loop.time() / SLOT_S) + 20) * SLOT_S + 0.001

    async def overrun(offset: float) -> str:
        try:
            with deadlines.after(target + offset - loop.time()):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timeout"
        return "finished"

    calls = [asyncio.create_task(overrun(n / 1000)) for n in range(20)]
    await asyncio.sleep(0)
    assert len(deadlines._slots) == 1
    assert await asyncio.gather(*calls) == ["timeout"] * 20


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    deadlines = DeadlineTimers(asyncio.get_running_loop())

    async def call() -> None:
        with deadlines.after(10):
            await asyncio.sleep(10)

    task = asyncio.create_task(call())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert deadlines.pending() == 0


async def test_a_cancellation_from_outside_racing_the_deadline_is_not_swallowed() -> None:
    loop = asyncio.get_running_loop()
    deadlines = DeadlineTimers(loop)
    entered = asyncio.Event()

    async def call() -> None:
        with deadlines.after(0.05):
            entered.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(call())
    await entered.wait()
    await asyncio.sleep(0.2)  # the deadline has fired and been turned into TimeoutError...
    assert task.done()
    with pytest.raises(TimeoutError):
        task.result()

    # ...whereas cancelling the task from outside right as its deadline fires wins.
    async def raced() -> None:
        with deadlines.after(10) as deadline:

            def both() -> None:
                deadline.expire()  # what the slot's timer does...
                task.cancel()  # ...and an outside cancel, in the same loop iteration

            loop.call_soon(both)
            await asyncio.sleep(1)

    task = asyncio.create_task(raced())
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_inner_timeout_error_of_the_block_itself_is_not_mistaken_for_ours() -> None:
    deadlines = DeadlineTimers(asyncio.get_running_loop())
    with pytest.raises(TimeoutError), deadlines.after(10) as deadline:
        async with asyncio.timeout(0.01):
            await asyncio.sleep(1)
    assert not deadline.expired
    assert deadlines.pending() == 0
