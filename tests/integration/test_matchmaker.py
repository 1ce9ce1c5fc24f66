"""The matchmaker on both stores: who gets scheduled, how many at once, and the pause switch."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select, update

from palaestra.engine.cage.matchmaker import (
    Matchmaker,
    is_paused,
    matchmaking_state,
    set_paused,
    through_referee,
)
from palaestra.errors import Conflict
from palaestra.platform import Platform
from palaestra.store.models import Match
from tests.integration.arena_rows import add_fighter, add_match, add_owner
from tests.integration.cage_agents import ChatServer
from tests.integration.platform_fixtures import ADMIN_TOKEN, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def matchmaking_on(platform: Platform) -> None:
    platform.settings.matchmaking_enabled = True


class Referee:
    """Stands in for the referee's create function: records and stores PENDING matches."""

    def __init__(self, platform: Platform, refuse: set[tuple[str, str]] | None = None) -> None:
        self.platform = platform
        self.refuse = refuse or set()
        self.created: list[tuple[str, str]] = []

    async def __call__(self, attacker_id: str, defender_id: str) -> str:
        if (attacker_id, defender_id) in self.refuse:
            raise Conflict("refused")
        self.created.append((attacker_id, defender_id))
        return await add_match(
            platform=self.platform,
            attacker_id=attacker_id,
            defender_id=defender_id,
            outcome=None,
            status="PENDING",
        )


async def finish_all(platform: Platform) -> None:
    async with platform.db.session() as session, session.begin():
        await session.execute(
            update(Match).where(Match.status == "PENDING").values(status="SCORED", outcome="draw")
        )


async def test_only_eligible_fighters_are_scheduled(platform: Platform) -> None:
    names = {}
    variants: list[tuple[str, dict[str, Any]]] = [
        ("harness", {}),
        ("model", {"entrant_type": "model"}),
        ("house", {"entrant_type": "house"}),
        ("unproven", {"endpoint_url": None}),
        ("pending", {"status": "PENDING"}),
        ("held", {"hold": True}),
        ("suspended", {"status": "SUSPENDED"}),
    ]
    for name, extra in variants:
        names[await add_fighter(platform, await add_owner(platform, name), name, **extra)] = name
    referee = Referee(platform)
    created = await Matchmaker(platform, referee).run_once()
    assert created == referee.created
    playing = {names[a] for a, _ in created} | {names[d] for _, d in created}
    assert playing <= {"harness", "model", "house"}
    assert len(created) == 2  # three eligible: one pairing, both seat orders
    (first, second) = created
    assert first == (second[1], second[0])


async def test_never_co_owned_and_both_seat_orders(platform: Platform) -> None:
    shared = await add_owner(platform, "shared")
    a = await add_fighter(platform, shared, "a")
    b = await add_fighter(platform, shared, "b")
    for name in "cd":
        await add_fighter(platform, await add_owner(platform, name), name)
    referee = Referee(platform)
    created = await Matchmaker(platform, referee).run_once()
    assert len(created) == 4
    pairs = {frozenset(m) for m in created}
    assert frozenset({a, b}) not in pairs
    for attacker, defender in created:
        assert (defender, attacker) in created


async def test_busy_fighters_wait_and_play_again_once_free(platform: Platform) -> None:
    for name in "abcd":
        await add_fighter(platform, await add_owner(platform, name), name)
    matchmaker = Matchmaker(platform, Referee(platform))
    assert len(await matchmaker.run_once()) == 4
    assert await matchmaker.run_once() == []  # everyone is in two open matches
    state = await matchmaking_state(platform)
    assert state.open_matches == 4
    await finish_all(platform)
    again = await matchmaker.run_once()
    assert len(again) == 4


async def test_the_arena_wide_limit(platform: Platform) -> None:
    platform.settings.matchmaking_max_matches = 5
    for i in range(10):
        await add_fighter(platform, await add_owner(platform, f"o{i}"), f"f{i}")
    matchmaker = Matchmaker(platform, Referee(platform))
    assert len(await matchmaker.run_once()) == 4  # two pairings fit in five slots
    assert await matchmaker.run_once() == []  # one slot left: a pairing needs two


async def test_repeat_pairs_give_way(platform: Platform) -> None:
    for name in "abcd":
        await add_fighter(platform, await add_owner(platform, name), name)
    referee = Referee(platform)
    matchmaker = Matchmaker(platform, referee)
    first = {frozenset(m) for m in await matchmaker.run_once()}
    await finish_all(platform)
    second = {frozenset(m) for m in await matchmaker.run_once()}
    assert first.isdisjoint(second)  # draws changed no odds: only the history tells them apart


async def test_a_refused_match_is_skipped(platform: Platform) -> None:
    a = await add_fighter(platform, await add_owner(platform, "a"), "a")
    b = await add_fighter(platform, await add_owner(platform, "b"), "b")
    referee = Referee(platform, refuse={(a, b)})
    created = await Matchmaker(platform, referee).run_once()
    assert created == [(b, a)]


async def test_pause_resume_and_the_setting(platform: Platform) -> None:
    for name in "ab":
        await add_fighter(platform, await add_owner(platform, name), name)
    matchmaker = Matchmaker(platform, Referee(platform))
    assert not await is_paused(platform)
    state = await set_paused(platform, True)
    assert state.paused
    assert not state.scheduling
    assert await matchmaker.run_once() == []
    await set_paused(platform, False)
    platform.settings.matchmaking_enabled = False
    assert await matchmaker.run_once() == []
    assert not (await matchmaking_state(platform)).scheduling
    platform.settings.matchmaking_enabled = True
    assert len(await matchmaker.run_once()) == 2


async def test_the_loop_runs_rounds_until_stopped(platform: Platform) -> None:
    platform.settings.matchmaking_interval_s = 0.01
    for name in "ab":
        await add_fighter(platform, await add_owner(platform, name), name)
    referee = Referee(platform)
    stop = asyncio.Event()
    task = asyncio.create_task(Matchmaker(platform, referee).run(stop))
    for _ in range(500):
        if referee.created:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert len(referee.created) == 2


def house_model(platform: Platform, base_url: str) -> None:
    """Have the house model play the house fighters: the baseline's matches are never rated,
    and the matchmaker leaves a baseline house fighter out."""
    platform.settings.house_base_url, platform.settings.house_model = base_url, "house-llm-1"


async def test_through_the_referee(platform: Platform) -> None:
    house_model(platform, "http://127.0.0.1:9/v1")  # never called: the matches stay PENDING
    first = await add_fighter(platform, await add_owner(platform, "h1"), "h1", entrant_type="house")
    second = await add_fighter(
        platform, await add_owner(platform, "h2"), "h2", entrant_type="house"
    )
    woken: list[bool] = []
    created = await Matchmaker(
        platform, through_referee(platform, lambda: woken.append(True))
    ).run_once()
    assert sorted(created) == sorted([(first, second), (second, first)])
    assert len(woken) == 2
    async with platform.db.session() as session:
        statuses = (await session.scalars(select(Match.status))).all()
    assert statuses == ["PENDING", "PENDING"]


async def test_the_arena_plays_rates_and_publishes_on_its_own(platform: Platform) -> None:
    """Matchmaker, referee, live ratings and leaderboard together, inside the served app."""
    platform.settings.matchmaking_interval_s = 0.05
    platform.settings.ratings_interval_s = 0.05
    platform.settings.leaderboard_resamples = 20
    for name in ("house-a", "house-b", "house-c"):
        await add_fighter(platform, await add_owner(platform, name), name, entrant_type="house")
    chat = ChatServer(reply=lambda request: "I will not. ANSWER: 0")
    async with running(platform) as api, serve(chat) as model:
        house_model(platform, model.url("/v1"))
        rated = 0
        for _ in range(600):
            status, body = await api.call("GET", "/api/leaderboard?arena=cage")
            assert status == 200, body
            rated = sum(row["attack"]["matches"] for row in body["live"])
            if rated >= 2:
                break
            await asyncio.sleep(0.05)
        assert rated >= 2
        status, body = await api.call("POST", "/api/leaderboard/recompute", token=ADMIN_TOKEN)
        assert status == 200, body
        assert body["match_count"] >= 2


async def test_a_house_fighter_played_by_the_baseline_is_not_scheduled(
    platform: Platform,
) -> None:
    platform.settings.local_model_enabled = False  # no model: the house plays canned lines
    names = {}
    for name in ("harness", "model", "house"):
        owner = await add_owner(platform, name)
        names[await add_fighter(platform, owner, name, entrant_type=name)] = name
    created = await Matchmaker(platform, Referee(platform)).run_once()
    assert {names[f] for pair in created for f in pair} == {"harness", "model"}
    # With a house model set up, the house fighter is the model's and is scheduled again.
    await finish_all(platform)
    house_model(platform, "http://127.0.0.1:9/v1")
    created = await Matchmaker(platform, Referee(platform)).run_once()
    assert "house" in {names[f] for pair in created for f in pair}
