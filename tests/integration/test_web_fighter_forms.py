"""A fighter registered from the browser, and an agent or a fighter renamed by its owner: the
forms call the services the API calls, with the same checks."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select

from palaestra.platform import Platform
from palaestra.security import token_matches
from palaestra.store.models import Agent
from tests.integration.arena_rows import add_agent, add_fighter
from tests.integration.browser_support import browser, hidden, owner_of
from tests.integration.platform_fixtures import running
from tests.integration.web_support import still

pytestmark = pytest.mark.asyncio


async def fighters_named(platform: Platform, name: str) -> list[Agent]:
    async with platform.db.session() as session:
        found = await session.scalars(select(Agent).where(Agent.name == name))
        return list(found)


async def test_an_owner_registers_a_harness_and_a_model_fighter(platform: Platform) -> None:
    still(platform)
    async with running(platform) as api, browser(api) as alice, browser(api) as anyone:
        token = await api.owner("alice")
        # Not signed in: the form asks for the token, and refuses to act without one.
        _, page, _ = await anyone.get("/fighters/new")
        assert 'name="token"' in page
        harness = {"name": "night-owl", "entrant_type": "harness", "fighter_class": "rogue"}
        assert (await anyone.post("/fighters/new", harness))[0] == 401

        await alice.sign_in(token)
        status, page, headers = await alice.get("/fighters/new")
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        form = {"csrf_token": hidden(page, "csrf_token")}
        assert (await alice.post("/fighters/new", harness))[0] == 403  # no form token
        status, body, headers = await alice.post("/fighters/new", form | harness)
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        [fighter] = await fighters_named(platform, "night-owl")
        assert (fighter.owner_id, fighter.arena, fighter.status) == (
            await owner_of(platform, token),
            "cage",
            "PENDING",
        )
        code = re.search(r'id="claim-code">([^<]+)<', body)
        assert code is not None
        assert fighter.claim_code_hash is not None
        assert token_matches(code.group(1), fighter.claim_code_hash)  # the code it claims with
        assert f'"fighter_id": "{fighter.id}"' in html.unescape(body)

        # The same name again (letter case aside) is said at once, the form kept.
        status, body, _ = await alice.post("/fighters/new", form | harness | {"name": "Night-Owl"})
        assert status == 400
        assert "You already have a fighter named" in html.unescape(body)
        assert 'value="Night-Owl"' in body
        # The API's checks: the class, the model's fields.
        for bad, says in (
            ({"fighter_class": "pirate"}, "class must be one of"),
            ({"entrant_type": "model", "model": ""}, "model.model must not be empty"),
            (
                {"entrant_type": "model", "model": "gpt-x", "base_url": "https://m.example/v1"},
                "model.base_url and model.api_key are required",
            ),
            ({"entrant_type": "robot"}, "entrant_type must be one of"),
        ):
            status, body, _ = await alice.post(
                "/fighters/new", form | harness | {"name": "x"} | bad
            )
            assert status == 400, bad
            assert says in html.unescape(body), bad
        assert await fighters_named(platform, "x") == []

        # A model on the arena's local model: no URL, no key; straight to its page.
        local = {"name": "owl-local", "entrant_type": "model", "fighter_class": "academic"}
        status, _, headers = await alice.post(
            "/fighters/new", form | local | {"model": "local", "rated_challenges": "yes"}
        )
        assert status == 303
        [model] = await fighters_named(platform, "owl-local")
        assert headers["Location"] == f"/fighters/{model.id}"
        assert (model.entrant_type, model.provider, model.status) == (
            "model",
            {"model": "local"},
            "ACTIVE",
        )
        assert model.rated_challenges is True
        assert model.friendly_challenges is True  # the default: it spends no owner's key


async def test_an_owner_renames_its_agent_and_its_fighter_but_not_to_a_name_it_has(
    platform: Platform,
) -> None:
    still(platform)
    async with running(platform) as api, browser(api) as alice, browser(api) as bob:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        alice_id = await owner_of(platform, alice_token)
        agent = await add_agent(platform, alice_id, "scout-a", "SCOUT")
        await add_agent(platform, alice_id, "scout-b", "SCOUT")
        fighter = await add_fighter(platform, alice_id, "scout-b")  # another arena: its own names
        await alice.sign_in(alice_token)
        await bob.sign_in(bob_token)
        _, page, _ = await alice.get(f"/agents/{agent}")
        assert f'action="/agents/{agent}/rename"' in page
        form = {"csrf_token": hidden(page, "csrf_token")}

        status, body, _ = await alice.post(f"/agents/{agent}/rename", form | {"name": "Scout-B"})
        assert status == 400
        assert "You already have an agent named" in html.unescape(body)
        status, _, headers = await alice.post(f"/agents/{agent}/rename", form | {"name": " owl "})
        assert (status, headers["Location"]) == (303, f"/agents/{agent}#owner-controls")
        assert [a.id for a in await fighters_named(platform, "owl")] == [agent]
        # Its own name in other letters is no clash with itself.
        await alice.post(f"/agents/{agent}/rename", form | {"name": "OWL"})
        assert [a.id for a in await fighters_named(platform, "OWL")] == [agent]
        assert (await alice.post(f"/agents/{agent}/rename", form | {"name": " "}))[0] == 400

        status, _, headers = await alice.post(f"/agents/{fighter}/rename", form | {"name": "OWL"})
        assert (status, headers["Location"]) == (303, f"/fighters/{fighter}#owner-controls")

        # Another owner may not, and learns nothing of it.
        _, page, _ = await bob.get(f"/agents/{agent}")
        assert f'action="/agents/{agent}/rename"' not in page
        bob_form = {"csrf_token": hidden(page, "csrf_token"), "name": "mine now"}
        assert (await bob.post(f"/agents/{agent}/rename", bob_form))[0] == 404
        assert await fighters_named(platform, "mine now") == []
