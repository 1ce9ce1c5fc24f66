"""Friendlies against another owner's fighter need its owner's consent: a model fighter's
turns spend its owner's provider key, so it takes none until its owner allows them.

The owner's own fighters, and the arena's own matches (the admin's, the matchmaker's),
are not held back by it.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from palaestra.engine.cage.matchmaker import Matchmaker, through_referee
from palaestra.platform import Platform
from palaestra.store.models import Match
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.web_support import page, post_form

pytestmark = pytest.mark.asyncio

#: A remote provider: the fighter's turns would spend this key (no match is played here).
PROVIDER = {"base_url": "https://llm.example/v1", "model": "tiny-1", "api_key": "sk-bobs-key"}


@pytest.fixture
def arena(platform: Platform) -> Platform:
    """Matches are created, never played; no quotas."""
    platform.settings.referee_enabled = False
    platform.settings.ratings_enabled = False
    platform.settings.runs_enabled = False
    platform.settings.owner_matches_in_flight = 0
    platform.settings.owner_matches_per_hour = 0
    return platform


async def fighter(api: Api, token: str, entrant_type: str = "house", **more: Any) -> str:
    body: dict[str, Any] = {"name": entrant_type, "entrant_type": entrant_type, "class": "rogue"}
    if entrant_type == "model":
        body["model"] = more.pop("model", PROVIDER)
    status, created = await api.call("POST", "/api/fighters", token=token, json=body | more)
    assert status == 201, created
    return str(created["fighter_id"])


async def start(api: Api, token: str, attacker: str, defender: str, **more: Any) -> Any:
    body = {"attacker": attacker, "defender": defender, **more}
    return await api.call("POST", "/api/matches", token=token, json=body)


def refusal(fighter_id: str) -> dict[str, str]:
    return {
        "error": f"fighter {fighter_id} does not accept friendly matches from other owners "
        "(its owner can allow them)",
        "code": "forbidden",
    }


async def matches(platform: Platform) -> int:
    async with platform.db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(Match)) or 0)


async def test_a_friendly_against_another_owners_model_fighter_needs_its_owners_consent(
    arena: Platform,
) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, model = await fighter(api, alice), await fighter(api, bob, "model")
        path = f"/api/fighters/{model}"
        assert (await api.call("GET", path))[1]["friendly_challenges"] is False
        # Refused in either seat, and nothing is created.
        for attacker, defender in ((mine, model), (model, mine)):
            assert await start(api, alice, attacker, defender) == (403, refusal(model))
        assert await matches(arena) == 0
        # Its owner allows them: the next match reads it.
        status, shown = await api.call("PATCH", path, token=bob, json={"friendly_challenges": True})
        assert (status, shown["friendly_challenges"], shown["rated_challenges"]) == (
            200,
            True,
            False,
        )
        status, created = await start(api, alice, mine, model)
        assert status == 202, created
        _, body = await api.call("GET", f"/api/matches/{created['match_id']}")
        assert body["kind"] == "friendly"
        # And takes it back.
        status, shown = await api.call(
            "PATCH", path, token=bob, json={"friendly_challenges": False}
        )
        assert (status, shown["friendly_challenges"]) == (200, False)
        assert await start(api, alice, model, mine) == (403, refusal(model))
        assert await matches(arena) == 1


async def test_an_owners_own_fighters_are_not_held_back_by_their_consent(
    arena: Platform,
) -> None:
    """Consent is to being challenged: alice plays her model fighter (which takes no
    friendlies) against bob's house fighter (which takes them), in either seat."""
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, theirs = await fighter(api, alice, "model"), await fighter(api, bob)
        assert (await api.call("GET", f"/api/fighters/{theirs}"))[1]["friendly_challenges"]
        assert (await start(api, alice, mine, theirs))[0] == 202
        assert (await start(api, alice, theirs, mine))[0] == 202
        # Bob starting the same match challenges alice's model fighter: refused.
        assert await start(api, bob, theirs, mine) == (403, refusal(mine))
        # Bob's fighter taking no friendlies now holds alice back.
        await api.call(
            "PATCH", f"/api/fighters/{theirs}", token=bob, json={"friendly_challenges": False}
        )
        assert await start(api, alice, mine, theirs) == (403, refusal(theirs))


async def test_the_arenas_own_matches_need_no_consent(arena: Platform) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        # Two model fighters: a house fighter the baseline plays is not matched (it moves no
        # rating).
        mine, model = await fighter(api, alice, "model"), await fighter(api, bob, "model")
        # The matchmaker's (it pairs fighters with no open match).
        arena.settings.matchmaking_enabled = True
        created = await Matchmaker(arena, through_referee(arena)).run_once()
        assert sorted(created) == sorted([(mine, model), (model, mine)])
        # The admin's (and so the command line's, which acts as the admin), rated or not.
        for more in ({}, {"rated": False}):
            assert (await start(api, ADMIN_TOKEN, mine, model, **more))[0] == 202
    assert await matches(arena) == 4


async def test_rated_consent_is_its_own(arena: Platform) -> None:
    """A fighter that takes rated challenges but no friendlies: a rated match is open to
    another owner, a friendly is not."""
    arena.settings.owner_rated_matches = True
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine = await fighter(api, alice)
        model = await fighter(api, bob, "model", rated_challenges=True)
        assert (await start(api, alice, mine, model, rated=True))[0] == 202
        assert await start(api, alice, mine, model) == (403, refusal(model))


@pytest.mark.parametrize(
    ("entrant_type", "more", "accepts"),
    [
        ("model", {}, False),  # a remote provider: the owner's key
        ("model", {"model": {"model": "local"}}, True),  # the arena's local model
        ("house", {}, True),
        ("harness", {}, True),
        ("model", {"friendly_challenges": True}, True),
        ("house", {"friendly_challenges": False}, False),
        ("house", {"friendly_challenges": None}, True),
    ],
)
async def test_what_a_new_fighter_accepts(
    arena: Platform, entrant_type: str, more: dict[str, Any], accepts: bool
) -> None:
    async with running(arena) as api:
        bob = await api.owner("bob")
        created = await fighter(api, bob, entrant_type, **more)
        _, shown = await api.call("GET", f"/api/fighters/{created}")
    assert shown["friendly_challenges"] is accepts


async def test_only_the_owner_changes_it_and_a_change_says_what(arena: Platform) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = await fighter(api, bob, "model")
        path, on = f"/api/fighters/{model}", {"friendly_challenges": True}
        for token in (alice, ADMIN_TOKEN):
            status, body = await api.call("PATCH", path, token=token, json=on)
            assert (status, body) == (
                403,
                {
                    "error": "only the fighter's owner changes which challenges it accepts",
                    "code": "forbidden",
                },
            )
        for bad in ({}, {"friendly_challenges": "maybe"}, {"friendly_challenges": True, "x": 1}):
            status, body = await api.call("PATCH", path, token=bob, json=bad)
            assert (status, body["code"]) == (422, "invalid-request"), (bad, body)
        _, body = await api.call("PATCH", path, token=bob, json={})
        assert (
            "give at least one of rated_challenges, friendly_challenges and model" in body["error"]
        )
        # One left out is unchanged.
        both = {"friendly_challenges": True, "rated_challenges": True}
        assert (await api.call("PATCH", path, token=bob, json=both))[0] == 200
        status, shown = await api.call("PATCH", path, token=bob, json={"rated_challenges": False})
        assert (status, shown["friendly_challenges"], shown["rated_challenges"]) == (
            200,
            True,
            False,
        )


async def test_the_fighters_page_shows_it_and_lets_only_its_owner_change_it(
    arena: Platform,
) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        mine, model = await fighter(api, alice), await fighter(api, bob, "model")
        path, form = f"/fighters/{model}", f"/fighters/{model}/friendly-challenges"
        _, shown = await page(api, path)
        assert '<dd id="friendly-challenges">no: only the arena&#39;s matches' in shown
        assert f'action="{form}"' in shown
        for token, refused in ((alice, 403), (ADMIN_TOKEN, 403), ("wrong", 401)):
            status, body, _ = await post_form(api, form, {"token": token, "accepts": "yes"})
            assert status == refused, body
        status, body, _ = await post_form(
            api, form, {"token": bob, "accepts": "yes"}, headers={"Origin": "https://evil.test"}
        )
        assert (status, "another site" in body) == (403, True)
        assert (await start(api, alice, mine, model))[0] == 403
        status, _, headers = await post_form(api, form, {"token": bob, "accepts": "yes"})
        assert (status, headers["Location"]) == (303, f"{path}#friendly-challenges")
        _, shown = await page(api, path)
        assert '<dd id="friendly-challenges">accepted</dd>' in shown
        assert (await start(api, alice, mine, model))[0] == 202
        assert (await post_form(api, form, {"token": bob, "accepts": "no"}))[0] == 303
        assert (await start(api, alice, mine, model))[0] == 403
        status, _, _ = await post_form(api, "/fighters/nope/friendly-challenges", {"token": bob})
        assert status == 404
