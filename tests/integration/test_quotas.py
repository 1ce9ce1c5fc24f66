"""Owners' quotas on runs: in flight at once and per hour, the admin exempt, 0 = unlimited."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.clock import FrozenClock
from palaestra.platform import Platform
from tests.integration.platform_fixtures import ADMIN_TOKEN, running

pytestmark = pytest.mark.asyncio


@pytest.fixture
def arena(platform: Platform) -> Platform:
    """Runs stay RUNNING (nothing steps them), so they stay in flight."""
    platform.settings.runs_enabled = False
    platform.settings.referee_enabled = False
    platform.settings.ratings_enabled = False
    return platform


async def test_an_owners_runs_in_flight_and_per_hour_are_limited(
    arena: Platform, clock: FrozenClock
) -> None:
    arena.settings.owner_runs_in_flight = 2
    arena.settings.owner_runs_per_hour = 3
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")

        async def run(token: str) -> tuple[int, Any]:
            return await api.call("POST", "/api/runs", token=token, json={"goal": "g"})

        assert [(await run(alice))[0] for _ in range(3)] == [202, 202, 429]
        _, body = await run(alice)
        assert body == {
            "error": "Quota reached: at most 2 runs in flight at once",
            "code": "too-many-requests",
        }
        assert (await run(bob))[0] == 202
        assert [(await run(ADMIN_TOKEN))[0] for _ in range(5)] == [202] * 5
        arena.settings.owner_runs_in_flight = 0  # per hour only: 3, two taken
        assert [(await run(alice))[0] for _ in range(2)] == [202, 429]
        clock.advance(3601)
        assert (await run(alice))[0] == 202


async def test_zero_means_unlimited(arena: Platform) -> None:
    arena.settings.owner_runs_in_flight = 0
    arena.settings.owner_runs_per_hour = 0
    async with running(arena) as api:
        alice = await api.owner("alice")
        for _ in range(40):
            status, _ = await api.call("POST", "/api/runs", token=alice, json={"goal": "g"})
            assert status == 202
