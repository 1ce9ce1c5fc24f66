"""``InTurn``: a burst at the runs API is handled a few at a time, in order of arrival; a turn
is taken by an authenticated caller only, and requests elsewhere never wait behind a burst."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from palaestra.api.limits import InTurn
from palaestra.app import create_app
from palaestra.http.deps import AnyCaller
from palaestra.settings import Settings


class Held:
    """Requests that hold their turn until released, noting who is inside."""

    def __init__(self, turns: InTurn) -> None:
        self.turns = turns
        self.inside: list[str] = []
        self.entered: list[str] = []
        self.most = 0
        self.release = asyncio.Event()

    async def request(self, name: str) -> str:
        async with self.turns.taken():
            self.inside.append(name)
            self.entered.append(name)
            self.most = max(self.most, len(self.inside))
            await self.release.wait()
            self.inside.remove(name)
        return name


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_burst_is_handled_a_few_at_a_time_in_order_of_arrival() -> None:
    held = Held(InTurn(2))
    burst = [asyncio.create_task(held.request(f"run {n}")) for n in range(5)]
    await settle()
    assert held.inside == ["run 0", "run 1"]
    held.release.set()
    assert await asyncio.gather(*burst) == [f"run {n}" for n in range(5)]
    assert held.most == 2
    assert held.entered == [f"run {n}" for n in range(5)]


@pytest.mark.asyncio
async def test_a_request_that_gives_up_waiting_leaves_its_turn_to_the_next() -> None:
    held = Held(InTurn(1))
    first = asyncio.create_task(held.request("first"))
    gone = asyncio.create_task(held.request("gone"))
    last = asyncio.create_task(held.request("last"))
    await settle()
    gone.cancel()  # its client disconnected while it waited
    held.release.set()
    assert await first == "first"
    assert await last == "last"
    assert held.entered == ["first", "last"]


def test_a_turn_is_taken_by_an_authenticated_caller() -> None:
    # The caller is a dependency of the turn: FastAPI authenticates before a turn is taken
    # (and reads the body before any dependency).
    parameter = InTurn.__call__.__annotations__["caller"]
    assert parameter in ("AnyCaller", AnyCaller)


def test_the_app_takes_the_runs_api_in_turns_of_its_setting(tmp_path: Any) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path, runs_api_concurrency=7)
    assert create_app(settings).state.run_turns.limit == 7
