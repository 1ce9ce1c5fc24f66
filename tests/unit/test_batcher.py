"""The batcher: what arrives while a batch is handled goes into the next, in order, once."""

from __future__ import annotations

import asyncio

import pytest

from palaestra.engine import batcher
from palaestra.engine.batcher import Batcher


class Doubler:
    """Doubles each item; records every batch it was handed; can be held or made to fail."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.failing: set[int] = set()

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        await self.gate.wait()
        if self.failing & set(items):
            raise ValueError(f"cannot double {sorted(self.failing & set(items))}")
        return [item * 2 for item in items]


def test_the_api_is_pinned() -> None:
    assert batcher.__all__ == ["Batcher"]


async def test_an_item_alone_is_handled_at_once() -> None:
    handle = Doubler()
    assert await Batcher(handle).submit(21) == 42
    assert handle.batches == [[21]]


async def test_what_arrives_while_a_batch_is_handled_goes_into_the_next() -> None:
    handle = Doubler()
    batches = Batcher(handle)
    handle.gate.clear()
    first = batches.submit(1)
    await asyncio.sleep(0)  # the first batch is being handled
    later = [batches.submit(n) for n in (2, 3, 4)]
    handle.gate.set()
    assert [await f for f in (first, *later)] == [2, 4, 6, 8]
    assert handle.batches == [[1], [2, 3, 4]]


async def test_batches_are_cut_at_max_batch_in_order() -> None:
    handle = Doubler()
    batches = Batcher(handle, max_batch=2)
    futures = [batches.submit(n) for n in range(5)]
    assert [await f for f in futures] == [0, 2, 4, 6, 8]
    assert handle.batches == [[0, 1], [2, 3], [4]]


async def test_a_failed_batch_fails_its_items_only() -> None:
    handle = Doubler()
    handle.failing = {3}
    batches = Batcher(handle, max_batch=2)
    futures = [batches.submit(n) for n in range(5)]
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    assert outcomes[:2] == [0, 2]
    assert all(isinstance(o, ValueError) for o in outcomes[2:4])
    assert outcomes[4] == 8


async def test_an_item_is_handled_though_nobody_awaits_it() -> None:
    handle = Doubler()
    batches = Batcher(handle)
    future = batches.submit(5)
    future.cancel()  # the caller went away
    await batches.close()
    assert handle.batches == [[5]]


async def test_close_waits_for_what_was_submitted() -> None:
    handle = Doubler()
    batches = Batcher(handle)
    handle.gate.clear()
    future = batches.submit(7)
    closing = asyncio.create_task(batches.close())
    await asyncio.sleep(0)
    assert not closing.done()
    handle.gate.set()
    await closing
    assert future.result() == 14


async def test_close_without_work_returns() -> None:
    await Batcher(Doubler()).close()


@pytest.mark.parametrize("count", [1, 499, 500, 501, 1000])
async def test_every_item_gets_its_own_result(count: int) -> None:
    batches = Batcher(Doubler())
    futures = [batches.submit(n) for n in range(count)]
    assert [await f for f in futures] == [2 * n for n in range(count)]


async def test_alone_on_failure_an_item_that_cannot_be_handled_fails_by_itself() -> None:
    handle = Doubler()
    handle.failing = {3}
    batches = Batcher(handle, max_batch=3, alone_on_failure=True)
    futures = [batches.submit(n) for n in range(5)]
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    assert outcomes[:3] == [0, 2, 4]
    assert isinstance(outcomes[3], ValueError)
    assert outcomes[4] == 8
    assert handle.batches == [[0, 1, 2], [3, 4], [3], [4]]
