"""Paged API lists: every row is seen exactly once walking the pages, inserts or not.

The frozen clock gives every row the same creation time, so the walks also show that
rows with equal times are ordered, and paged, by their ids.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from palaestra.clock import FrozenClock
from palaestra.platform import Platform
from tests.integration.arena_rows import (
    add_agent,
    add_fighter,
    add_match,
    add_matches,
    add_owner,
    add_run,
)
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.web_support import still

pytestmark = pytest.mark.asyncio

NEXT_LINK = re.compile(r'^<(?P<url>[^>]+)>; rel="next"$')


async def get_page(api: Api, path: str, token: str | None = ADMIN_TOKEN) -> tuple[Any, str | None]:
    """One page of an API list, and the path of the next (from its Link header)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with api.session.get(api.base + path, headers=headers) as response:
        assert response.status == 200, await response.text()
        body = await response.json()
        link = response.headers.get("Link")
        cursor = response.headers.get("X-Next-Cursor")
    if link is None:
        assert cursor is None
        return body, None
    found = NEXT_LINK.match(link)
    assert found, link
    assert f"cursor={cursor}" in found["url"]
    return body, found["url"]


async def walk(api: Api, path: str, id_key: str, token: str | None = ADMIN_TOKEN) -> list[str]:
    """Every id of a list, following the next links; each page no longer than asked."""
    seen: list[str] = []
    next_path: str | None = path
    pages = 0
    while next_path is not None:
        body, next_path = await get_page(api, next_path, token)
        assert 0 < len(body) <= 3
        seen += [row[id_key] for row in body]
        pages += 1
        assert pages < 100
    return seen


async def test_runs_are_walked_page_by_page_newest_first(platform: Platform) -> None:
    created = [await add_run(still(platform), [], goal=f"goal {i}") for i in range(8)]
    async with running(platform) as api:
        seen = await walk(api, "/api/runs?limit=3", "run_id")
        assert seen == created[::-1]  # each once, newest first
        everything, following = await get_page(api, "/api/runs")
        assert following is None  # the default page holds all eight, as before
        assert [row["run_id"] for row in everything] == created[::-1]


async def test_rows_added_during_a_walk_do_not_shift_its_pages(platform: Platform) -> None:
    created = [await add_run(still(platform), [], goal=f"goal {i}") for i in range(7)]
    async with running(platform) as api:
        first, next_path = await get_page(api, "/api/runs?limit=3")
        newer = [await add_run(platform, [], goal=f"late {i}") for i in range(4)]
        seen = [row["run_id"] for row in first]
        while next_path is not None:
            body, next_path = await get_page(api, next_path)
            seen += [row["run_id"] for row in body]
        assert seen == created[::-1]
        fresh = await walk(api, "/api/runs?limit=3", "run_id")
        assert fresh == [*newer[::-1], *created[::-1]]


async def test_an_owner_walks_only_their_agents_and_filters_hold(platform: Platform) -> None:
    async with running(still(platform)) as api:
        alice = await api.owner("alice")
        _, me = await api.call("GET", "/api/agents", token=alice)
        assert me == []
        status, body = await api.call(
            "POST", "/api/owners", token=ADMIN_TOKEN, json={"name": "bob"}
        )
        assert status == 201
        bob_id = body["owner_id"]
        owner_id = await _owner_of(platform, "alice")
        mine = [await add_agent(platform, owner_id, f"a{i}", "SCOUT") for i in range(5)]
        fighters = [await add_fighter(platform, owner_id, f"f{i}") for i in range(4)]
        for i in range(3):
            await add_agent(platform, bob_id, f"b{i}", "SCOUT")
        seen = await walk(api, "/api/agents?limit=2", "agent_id", token=alice)
        assert seen == [*fighters[::-1], *mine[::-1]]
        only_cage = await walk(api, "/api/agents?arena=cage&limit=3", "agent_id", token=alice)
        assert only_cage == fighters[::-1]
        everyone = await walk(api, "/api/agents?limit=3", "agent_id")
        assert len(everyone) == len(set(everyone)) == 12


async def test_matches_are_walked_page_by_page(platform: Platform) -> None:
    owner = await add_owner(still(platform))
    one, two = await add_fighter(platform, owner, "one"), await add_fighter(platform, owner, "two")
    entrants = {
        "attacker": {"fighter_id": one, "name": "one"},
        "defender": {"fighter_id": two, "name": "two"},
    }
    for _ in range(10):
        await add_match(platform, one, two, "defender", material={"entrants": entrants})
    async with running(platform) as api:
        seen = await walk(api, "/api/matches?limit=3", "match_id", token=None)
        _, everything = await api.call("GET", "/api/matches")
        assert seen == [row["match_id"] for row in everything]
        assert len(set(seen)) == 10


async def test_a_cursor_off_its_pattern_is_refused_and_one_of_it_is_a_place(
    platform: Platform,
) -> None:
    """The OpenAPI document states each list's cursor pattern: a string off it is refused
    as the schema says (422), and any string of it is a place in the list."""
    async with running(still(platform)) as api:
        for cursor in ("not-a-cursor", "WzEsMl0", "s12", "k0x1.8p0"):
            status, body = await api.call("GET", f"/api/matches?cursor={cursor}")
            assert status == 422, body
            assert body["code"] == "invalid-request"
            assert body["error"].startswith("query.cursor: String should match pattern")
        status, _ = await api.call("GET", "/api/runs?cursor=" + "x" * 201, token=ADMIN_TOKEN)
        assert status == 422
        made_up = "k" + (1.0).hex().replace("p+", "p") + "~zzzz"
        assert await api.call("GET", f"/api/matches?cursor={made_up}") == (200, [])
        made_up_history = "/api/agents/x/history?cursor=s99"
        assert (await api.call("GET", made_up_history, token=ADMIN_TOKEN))[0] == 404


async def _owner_of(platform: Platform, name: str) -> str:
    from sqlalchemy import select

    from palaestra.store.models import Owner

    async with platform.db.session() as session:
        owner_id = await session.scalar(select(Owner.id).where(Owner.name == name))
    assert owner_id is not None
    return owner_id


async def test_the_leaderboard_table_pages_within_one_snapshot(
    platform: Platform, clock: FrozenClock
) -> None:
    fighters = []
    for i in range(7):
        owner = await add_owner(still(platform), f"owner-{i}")
        fighters.append(await add_fighter(platform, owner, f"fighter-{i}"))
    await add_matches(
        platform,
        [(fighters[i % 7], fighters[(i + 1 + i // 7) % 7], "attacker") for i in range(60)],
    )
    async with running(platform) as api:
        _, whole = await api.call("GET", "/api/leaderboard")
        assert whole["next_cursor"] is None  # no limit: the whole table, as before
        table = [row["fighter_id"] for row in whole["fighters"]]
        assert sorted(table) == sorted(fighters)

        seen: list[str] = []
        path: str | None = "/api/leaderboard?limit=3"
        pages = 0
        while path is not None:
            body, path = await get_page(api, path)
            assert 0 < len(body["fighters"]) <= 3
            assert body["computed_at"] == whole["computed_at"]
            seen += [row["fighter_id"] for row in body["fighters"]]
            pages += 1
        assert (seen, pages) == (table, 3)

        _, first = await api.call("GET", "/api/leaderboard?limit=3")
        clock.advance(1)
        status, _ = await api.call(
            "POST", "/api/leaderboard/recompute?arena=cage", token=ADMIN_TOKEN
        )
        assert status == 200
        status, body = await api.call(
            "GET", f"/api/leaderboard?limit=3&cursor={first['next_cursor']}"
        )
        assert (status, body["code"]) == (409, "conflict")
        assert "published again" in body["error"]


async def test_an_agents_history_is_walked_page_by_page(platform: Platform) -> None:
    from palaestra.store.models import AgentEvent

    owner = await add_owner(still(platform))
    agent_id = await add_agent(platform, owner, "pinged", "SCOUT")
    async with platform.db.session() as session, session.begin():
        for i in range(8):
            session.add(
                AgentEvent(
                    agent_id=agent_id,
                    at=platform.clock.now(),
                    kind="ping",
                    outcome="success",
                    latency_ms=float(i),
                )
            )
    async with running(platform) as api:
        path = f"/api/agents/{agent_id}/history"
        _, whole = await api.call("GET", path, token=ADMIN_TOKEN)
        assert len(whole) == 8
        seen: list[Any] = []
        next_path: str | None = path + "?limit=3"
        while next_path is not None:
            body, next_path = await get_page(api, next_path)
            assert 0 < len(body) <= 3
            seen += body
        assert seen == whole
        assert [row["latency_ms"] for row in seen] == [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
        time_cursor = "k0x1.0p0~abc"  # a runs cursor: off this list's pattern
        status, body = await api.call("GET", f"{path}?cursor={time_cursor}", token=ADMIN_TOKEN)
        assert (status, body["code"]) == (422, "invalid-request")


async def test_the_live_table_is_walked_page_by_page_best_first(platform: Platform) -> None:
    from palaestra.engine.ratings.live import rate_pending

    fighters = []
    for i in range(11):
        owner = await add_owner(still(platform), f"owner-{i}")
        kind = ("harness", "model")[i % 2]
        fighters.append(await add_fighter(platform, owner, f"f-{i:02d}", entrant_type=kind))
    rated = fighters[:6]  # the other five keep the starting rating: a tie, ordered by name
    await add_matches(
        platform,
        [(rated[i % 6], rated[(i + 1 + i // 6) % 6], "attacker") for i in range(24)],
    )
    await rate_pending(platform)
    async with running(platform) as api:
        _, everything = await api.call("GET", "/api/leaderboard/live")
        assert [row["rank"] for row in everything] == list(range(1, 12))
        order = [row["fighter_id"] for row in everything]
        assert sorted(order) == sorted(fighters)
        scores = [row["score"] for row in everything]
        assert scores == sorted(scores, reverse=True)
        assert len(set(scores)) < len(scores)  # ties are paged too
        seen, ranks = [], []
        path: str | None = "/api/leaderboard/live?limit=3"
        while path is not None:
            body, path = await get_page(api, path, token=None)
            assert 0 < len(body) <= 3
            seen += [row["fighter_id"] for row in body]
            ranks += [row["rank"] for row in body]
        assert (seen, ranks) == (order, list(range(1, 12)))  # each once, in order
        models = await walk(api, "/api/leaderboard/live?entrant_type=model&limit=3", "fighter_id")
        assert models == [f for f in order if fighters.index(f) % 2]
        # The leaderboard holds the live table's first page, and says where it goes on.
        _, board = await api.call("GET", "/api/leaderboard?limit=4")
        assert [row["fighter_id"] for row in board["live"]] == order[:4]
        _, rest = await api.call(
            "GET", f"/api/leaderboard/live?limit=20&cursor={board['live_next_cursor']}"
        )
        assert [row["fighter_id"] for row in rest] == order[4:]
        _, whole = await api.call("GET", "/api/leaderboard")
        assert (len(whole["live"]), whole["live_next_cursor"]) == (11, None)
        for cursor in ("not-a-cursor", "WzEsMl0", board["next_cursor"]):
            status, body = await api.call("GET", f"/api/leaderboard/live?cursor={cursor}")
            assert (status, body["code"]) == (422, "invalid-request"), cursor
