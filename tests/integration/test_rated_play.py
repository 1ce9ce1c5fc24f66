"""Rated play is the arena's: owners' matches are friendlies unless the rules allow rated
ones, ratings cannot be farmed, and owners' runs and matches have quotas (429 + Retry-After).

House-baseline fighters play without a network, so whole matches are played here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select

from palaestra.clock import FrozenClock
from palaestra.engine.cage.referee import Referee
from palaestra.engine.export.dataset import export_dataset
from palaestra.engine.ratings.leaderboard import recompute
from palaestra.engine.ratings.live import rate_pending
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.store.rating_models import FighterRating, RatedMatch
from tests.integration.cage_agents import ChatServer
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.servers import serve
from tests.integration.web_support import page, post_form

pytestmark = pytest.mark.asyncio


@pytest.fixture
def arena(platform: Platform) -> Platform:
    """Matches played only when a test drains them; no quotas unless a test sets them."""
    platform.settings.referee_enabled = False
    platform.settings.ratings_enabled = False
    platform.settings.runs_enabled = False
    platform.settings.owner_matches_in_flight = 0
    platform.settings.owner_matches_per_hour = 0
    platform.settings.local_model_enabled = False  # the house is the baseline unless a test says
    return platform


async def house(api: Api, token: str, **more: Any) -> str:
    name = "house-willing" if more.get("rated_challenges") else "house"  # an owner's are distinct
    body = {"name": name, "entrant_type": "house", "class": "academic", **more}
    status, created = await api.call("POST", "/api/fighters", token=token, json=body)
    assert status == 201, created
    return str(created["fighter_id"])


async def start(api: Api, token: str, attacker: str, defender: str, **more: Any) -> Any:
    return await api.call(
        "POST",
        "/api/matches",
        token=token,
        json={"attacker": attacker, "defender": defender, **more},
    )


def rated_form(shown: str, action: str) -> str:
    """What the page's form posting to ``action`` would set ``accepts`` to."""
    found = re.search(rf'action="{action}".*?name="accepts" value="(\w+)"', shown, re.DOTALL)
    assert found is not None, shown
    return found.group(1)


async def rating_rows(platform: Platform) -> tuple[int, int]:
    async with platform.db.session() as session:
        ratings = await session.scalar(select(func.count()).select_from(FighterRating))
        rated = await session.scalar(select(func.count()).select_from(RatedMatch))
    return ratings or 0, rated or 0


async def test_farming_matches_against_another_owner_leaves_the_ratings_unchanged(
    arena: Platform, tmp_path: Path
) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, theirs = await house(api, alice), await house(api, bob)
        ids = []
        for _ in range(5):
            status, created = await start(api, alice, mine, theirs)
            assert status == 202, created
            ids.append(created["match_id"])
        await Referee(arena).run_once()
        await rate_pending(arena)
        for match_id in ids:
            status, body = await api.call("GET", f"/api/matches/{match_id}")
            assert (status, body["kind"], body["status"]) == (200, "friendly", "SCORED")
        assert await rating_rows(arena) == (0, 0)
        board = await recompute(arena, Arena.CAGE, resamples=10)
        assert board.match_count == 0
        # The dataset says what they were, and that they moved no rating.
        await export_dataset(arena, tmp_path / "export")
        exported = (tmp_path / "export" / "matches.jsonl").read_bytes().splitlines()
        rows = {row["match_id"]: row for row in map(orjson.loads, exported)}
        assert {(rows[i]["kind"], rows[i]["ratings"]) for i in ids} == {("friendly", None)}
        # The admin's match between the same two is rated, and moves both ratings once a
        # house model plays them (the house baseline's matches move none: docs/ratings.md).
        async with serve(ChatServer(reply=lambda request: "No. ANSWER: 0")) as model:
            arena.settings.house_base_url, arena.settings.house_model = model.url("/v1"), "m1"
            status, created = await start(api, ADMIN_TOKEN, mine, theirs)
            assert status == 202
            await Referee(arena).run_once()
        await rate_pending(arena)
        _, body = await api.call("GET", f"/api/matches/{created['match_id']}")
        assert (body["kind"], body["status"], body["baseline_played"]) == ("rated", "SCORED", False)
    assert await rating_rows(arena) == (2, 1)
    assert (await recompute(arena, Arena.CAGE, resamples=10)).match_count == 1


async def test_an_owner_asking_for_a_rated_match_is_refused_unless_the_operator_allows(
    arena: Platform,
) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, theirs = await house(api, alice), await house(api, bob, rated_challenges=True)
        status, body = await start(api, alice, mine, theirs, rated=True)
    assert status == 403
    assert body["code"] == "forbidden"
    assert "owner-rated matches" in body["error"]


async def test_owner_rated_matches_need_a_willing_opponent_and_stay_under_the_pair_cap(
    arena: Platform, clock: FrozenClock
) -> None:
    arena.settings.owner_rated_matches = True
    arena.settings.owner_rated_per_pair_per_day = 2
    async with running(arena) as api:
        alice, bob, carol = [await api.owner(n) for n in ("alice", "bob", "carol")]
        mine = await house(api, alice)
        shy = await house(api, bob)
        willing = await house(api, bob, rated_challenges=True)
        for fighter, accepts in ((shy, False), (willing, True)):
            _, shown = await api.call("GET", f"/api/fighters/{fighter}")
            assert shown["rated_challenges"] is accepts
        carols = await house(api, carol, rated_challenges=True)
        status, body = await start(api, alice, mine, shy, rated=True)
        assert (status, body["error"]) == (403, f"fighter {shy} does not accept rated challenges")
        # Two rated matches between alice and bob, whoever starts them, either seat order.
        assert (await start(api, alice, mine, willing, rated=True))[0] == 202
        clock.advance(3600)
        assert (await start(api, alice, willing, mine, rated=True))[0] == 202
        async with api.session.post(
            api.base + "/api/matches",
            json={"attacker": mine, "defender": willing, "rated": True},
            headers={"Authorization": f"Bearer {alice}"},
        ) as response:
            capped = response.status, response.headers.get("Retry-After"), await response.json()
        assert capped[0] == 429
        assert capped[2]["code"] == "too-many-requests"
        assert "2 rated matches between the same two owners per 24 hours" in capped[2]["error"]
        assert int(capped[1] or 0) == 86400 - 3600  # when the first leaves the window
        # Friendlies between them, and rated matches with another owner, are not capped.
        assert (await start(api, alice, mine, willing))[0] == 202
        assert (await start(api, alice, mine, carols, rated=True))[0] == 202
        # A day after the first, there is room again.
        clock.advance(86400 - 3600 + 1)
        status, created = await start(api, alice, mine, willing, rated=True)
        assert status == 202
        _, body = await api.call("GET", f"/api/matches/{created['match_id']}")
        assert body["kind"] == "rated"
        # The admin is never capped, and may ask for a friendly.
        status, created = await start(api, ADMIN_TOKEN, mine, willing, rated=False)
        assert status == 202
        _, body = await api.call("GET", f"/api/matches/{created['match_id']}")
        assert body["kind"] == "friendly"


async def test_an_owners_matches_in_flight_and_per_hour_are_limited(
    arena: Platform, clock: FrozenClock
) -> None:
    arena.settings.owner_matches_in_flight = 2
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, theirs = await house(api, alice), await house(api, bob)
        assert [(await start(api, alice, mine, theirs))[0] for _ in range(3)] == [202, 202, 429]
        assert (await start(api, bob, theirs, mine))[0] == 202  # bob has his own quota
        assert (await start(api, ADMIN_TOKEN, mine, theirs))[0] == 202  # the admin has none
        await Referee(arena).run_once()  # alice's two finish: room again
        assert (await start(api, alice, mine, theirs))[0] == 202
        await Referee(arena).run_once()

        arena.settings.owner_matches_in_flight = 0
        arena.settings.owner_matches_per_hour = 3  # three started
        async with api.session.post(
            api.base + "/api/matches",
            json={"attacker": mine, "defender": theirs},
            headers={"Authorization": f"Bearer {alice}"},
        ) as response:
            body = await response.json()
            assert response.status == 429, body
            assert body == {
                "error": "Quota reached: at most 3 matches per hour",
                "code": "too-many-requests",
            }
            assert int(response.headers["Retry-After"]) == 3600
        clock.advance(3600)
        assert (await start(api, alice, mine, theirs))[0] == 202


async def test_the_pages_show_a_friendly_as_such(arena: Platform) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, theirs = await house(api, alice), await house(api, bob)
        _, friendly = await start(api, alice, mine, theirs)
        _, rated = await start(api, ADMIN_TOKEN, mine, theirs)
        _, friendly_page = await page(api, f"/matches/{friendly['match_id']}")
        _, rated_page = await page(api, f"/matches/{rated['match_id']}")
        _, listing = await page(api, "/matches")
    assert re.search(r'class="match-kind">friendly <span[^>]*>\(never rated\)', friendly_page)
    assert 'class="match-kind">rated</dd>' in rated_page
    rows = re.findall(r'<tr data-match="([^"]+)">(.*?)</tr>', listing, re.DOTALL)
    marked = {match_id: 'chip friendly">friendly' in row for match_id, row in rows}
    assert marked == {friendly["match_id"]: True, rated["match_id"]: False}


async def test_the_owner_turns_rated_challenges_on_and_off_and_the_next_match_reads_it(
    arena: Platform,
) -> None:
    arena.settings.owner_rated_matches = True
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, theirs = await house(api, alice), await house(api, bob)
        path = f"/api/fighters/{theirs}"
        assert (await start(api, alice, mine, theirs, rated=True))[0] == 403
        status, shown = await api.call("PATCH", path, token=bob, json={"rated_challenges": True})
        assert (status, shown["fighter_id"], shown["rated_challenges"]) == (200, theirs, True)
        assert (await api.call("GET", path))[1]["rated_challenges"] is True
        status, created = await start(api, alice, mine, theirs, rated=True)
        assert status == 202, created
        _, body = await api.call("GET", f"/api/matches/{created['match_id']}")
        assert body["kind"] == "rated"
        status, shown = await api.call("PATCH", path, token=bob, json={"rated_challenges": False})
        assert (status, shown["rated_challenges"]) == (200, False)
        status, body = await start(api, alice, mine, theirs, rated=True)
        refusal = f"fighter {theirs} does not accept rated challenges"
        assert (status, body["error"]) == (403, refusal)
        # A friendly is still open to anyone's fighter.
        assert (await start(api, alice, mine, theirs))[0] == 202


async def test_only_the_fighters_owner_changes_its_consent(arena: Platform) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        theirs = await house(api, bob)
        path, on = f"/api/fighters/{theirs}", {"rated_challenges": True}
        for token in (alice, ADMIN_TOKEN):
            status, body = await api.call("PATCH", path, token=token, json=on)
            assert (status, body["code"]) == (403, "forbidden"), body
            assert body["error"] == "only the fighter's owner changes which challenges it accepts"
        assert (await api.call("PATCH", path, json=on))[0] == 401
        assert (await api.call("PATCH", path, token="wrong", json=on))[0] == 401
        status, body = await api.call("PATCH", "/api/fighters/nope", token=bob, json=on)
        assert (status, body) == (404, {"error": "Fighter nope not found", "code": "not-found"})
        for bad in ({}, {"rated_challenges": "maybe"}, {"rated_challenges": True, "name": "x"}):
            status, body = await api.call("PATCH", path, token=bob, json=bad)
            assert (status, body["code"]) == (422, "invalid-request"), (bad, body)
        assert (await api.call("GET", path))[1]["rated_challenges"] is False


async def test_the_fighters_page_shows_the_consent_and_lets_only_its_owner_change_it(
    arena: Platform,
) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        theirs = await house(api, bob)
        path, form = f"/fighters/{theirs}", f"/fighters/{theirs}/rated-challenges"
        _, shown = await page(api, path)
        assert "no: other owners&#39; matches are friendlies" in shown
        assert rated_form(shown, form) == "yes"
        for token, refused in ((alice, 403), (ADMIN_TOKEN, 403), ("wrong", 401)):
            status, body, _ = await post_form(api, form, {"token": token, "accepts": "yes"})
            assert status == refused, body
        status, body, _ = await post_form(
            api, form, {"token": bob, "accepts": "yes"}, headers={"Origin": "https://evil.test"}
        )
        assert status == 403
        assert "another site" in body
        assert (await api.call("GET", f"/api/fighters/{theirs}"))[1]["rated_challenges"] is False
        status, _, headers = await post_form(api, form, {"token": bob, "accepts": "yes"})
        assert (status, headers["Location"]) == (303, f"{path}#rated-challenges")
        _, shown = await page(api, path)
        assert '<dd id="rated-challenges">accepted</dd>' in shown
        assert rated_form(shown, form) == "no"
        assert (await api.call("GET", f"/api/fighters/{theirs}"))[1]["rated_challenges"] is True
        status, _, _ = await post_form(api, form, {"token": bob, "accepts": "no"})
        assert status == 303
        assert (await api.call("GET", f"/api/fighters/{theirs}"))[1]["rated_challenges"] is False
        status, _, _ = await post_form(api, "/fighters/nope/rated-challenges", {"token": bob})
        assert status == 404
