"""The referee stops only once the turns' desk has ended what it was doing.

Cancelling a match's play leaves its claim or record with the desk's batch (the desk
handles an item whoever waits for it). A referee that returned before that batch ended
left its transaction, locks held, to be cut off with the event loop: the next user of the
store waited on those locks for ever.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from palaestra.engine.cage.referee import Referee
from palaestra.platform import Platform
from tests.integration.arena_rows import add_fighter, add_match, add_owner

pytestmark = pytest.mark.asyncio


async def test_the_referee_stops_after_the_claim_in_flight(platform: Platform) -> None:
    owner = await add_owner(platform)
    attacker = await add_fighter(platform, owner, "a")
    defender = await add_fighter(platform, owner, "d")
    await add_match(platform, attacker, defender, None, status="PENDING")
    referee = Referee(platform, tick_s=0.05)
    claims = referee._desk._claims
    handle = claims.handle
    started, ended = asyncio.Event(), asyncio.Event()

    async def slow(items: list[Any]) -> Any:
        started.set()
        try:
            await asyncio.sleep(0.5)  # the claim's transaction, under way as the referee stops
            return await handle(items)
        finally:
            ended.set()

    claims.handle = slow
    stop = asyncio.Event()
    running = asyncio.create_task(referee.run(stop))
    await asyncio.wait_for(started.wait(), 10)
    stop.set()
    await asyncio.wait_for(running, 10)
    assert ended.is_set()
