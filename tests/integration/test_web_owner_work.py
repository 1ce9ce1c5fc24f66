"""The owner's work from the browser, signed in: start a run, pause and resume an agent.

The forms call the services the API calls: the same checks, the same quota, the same rows.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from palaestra.platform import Platform
from palaestra.store.models import Agent, Match, Run
from tests.integration.arena_rows import add_agent, add_fighter
from tests.integration.browser_support import browser, hidden, owner_of
from tests.integration.platform_fixtures import running
from tests.integration.web_support import still


async def stored_runs(platform: Platform) -> list[Run]:
    async with platform.db.session() as session:
        return list(await session.scalars(select(Run).order_by(Run.created_at)))


async def agent_status(platform: Platform, agent_id: str) -> str:
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    assert agent is not None
    return agent.status


@pytest.mark.asyncio
async def test_a_signed_in_owner_starts_a_run_with_its_sizes(platform: Platform) -> None:
    still(platform)
    platform.settings.public_runs = False
    platform.settings.owner_runs_in_flight = 1
    async with running(platform) as api, browser(api) as alice:
        token = await api.owner("alice")
        await alice.sign_in(token)
        status, page, headers = await alice.get("/runs/new")
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        assert 'name="token"' not in page
        form = {
            "csrf_token": hidden(page, "csrf_token"),
            "goal": "A bakery for night owls",
            "launchpad": "make-money",
            "scouts": "2",
            "shortlist": "",
            "critiques": "1",
        }
        # Refused as the API refuses: sizes out of bounds or not numbers; the form is kept.
        for bad, says in (
            ({"scouts": "2", "shortlist": "3"}, "sizes.shortlist must not exceed sizes.scouts"),
            ({"critiques": "9"}, "sizes.critiques must be an integer from 1 to 5"),
            ({"builds": "two"}, "builds must be a whole number"),
            ({"launchpad": "elsewhere"}, "launchpad must be one of"),
            ({"goal": "   "}, "goal must be 1 to"),
        ):
            status, body, _ = await alice.post("/runs/new", form | bad)
            assert status == 400, bad
            assert says in body, bad
            assert "night owls" in body or bad == {"goal": "   "}
        status, body, _ = await alice.post("/runs/new", form | {"csrf_token": "forged"})
        assert status == 403
        assert "Form token missing or wrong" in body
        assert await stored_runs(platform) == []

        status, _, headers = await alice.post("/runs/new", form)
        assert status == 303
        [run] = await stored_runs(platform)
        assert headers["Location"] == f"/runs/{run.id}"
        assert (run.owner_id, run.goal, run.launchpad) == (
            await owner_of(platform, token),
            "A bakery for night owls",
            "make-money",
        )
        sizes = run.config["sizes"]
        assert (sizes["scouts"], sizes["shortlist"], sizes["critiques"]) == (2, 2, 1)
        # Its page is the owner's to read, although runs are private.
        status, body, _ = await alice.get(f"/runs/{run.id}")
        assert status == 200
        assert "night owls" in body
        # The form shows the owner's use of its quota, counted as the check counts it.
        _, page, _ = await alice.get("/runs/new")
        assert (
            '<tr data-quota="runs"><th scope="row">runs</th>'
            '<td class="num">1 of 1</td><td class="num">1 of 30</td></tr>'
        ) in page
        # The owner's quota holds here as in the API: one run in flight.
        status, body, headers = await alice.post("/runs/new", form)
        assert status == 429
        assert "Retry-After" in headers
        assert len(await stored_runs(platform)) == 1


@pytest.mark.asyncio
async def test_a_run_needs_a_session_or_the_token(platform: Platform) -> None:
    still(platform)
    async with running(platform) as api, browser(api) as anyone:
        token = await api.owner("alice")
        _, page, _ = await anyone.get("/runs/new")
        assert 'name="token"' in page
        form = {"goal": "A shop", "launchpad": "make-money"}
        status, body, _ = await anyone.post("/runs/new", form)
        assert status == 401
        assert "Sign in" in body
        status, _, _ = await anyone.post("/runs/new", form, origin="https://evil.test")
        assert status == 403
        assert await stored_runs(platform) == []
        status, _, _ = await anyone.post("/runs/new", form | {"token": token})
        assert status == 303
        assert len(await stored_runs(platform)) == 1


@pytest.mark.asyncio
async def test_the_owner_pauses_and_resumes_its_agent_from_its_page(platform: Platform) -> None:
    still(platform)
    async with running(platform) as api, browser(api) as alice, browser(api) as bob:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        agent = await add_agent(platform, await owner_of(platform, alice_token), "scout-a", "SCOUT")
        await alice.sign_in(alice_token)
        await bob.sign_in(bob_token)
        # Another owner sees no control, and its form is refused as the API refuses it
        # (another's agent is not found).
        _, page, _ = await bob.get(f"/agents/{agent}")
        assert 'id="owner-controls"' not in page
        status, _, _ = await bob.post(
            f"/agents/{agent}/pause", {"csrf_token": hidden(page, "csrf_token")}
        )
        assert status == 404
        assert await agent_status(platform, agent) == "ACTIVE"

        _, page, _ = await alice.get(f"/agents/{agent}")
        assert 'id="pause-agent"' in page
        form_token = hidden(page, "csrf_token")
        assert (await alice.post(f"/agents/{agent}/pause", {}))[0] == 403
        status, _, headers = await alice.post(f"/agents/{agent}/pause", {"csrf_token": form_token})
        assert (status, headers["Location"]) == (303, f"/agents/{agent}#owner-controls")
        assert await agent_status(platform, agent) == "PAUSED"
        _, page, _ = await alice.get(f"/agents/{agent}")
        assert 'id="resume-agent"' in page
        await alice.post(f"/agents/{agent}/resume", {"csrf_token": form_token})
        assert await agent_status(platform, agent) == "ACTIVE"
        # A fighter the same way, from its own page.
        fighter = await add_fighter(platform, await owner_of(platform, alice_token), "f")
        _, page, _ = await alice.get(f"/fighters/{fighter}")
        assert 'id="pause-agent"' in page
        assert 'id="pause-agent"' not in (await bob.get(f"/fighters/{fighter}"))[1]
        status, _, headers = await alice.post(
            f"/agents/{fighter}/pause", {"csrf_token": form_token}
        )
        assert (status, headers["Location"]) == (303, f"/fighters/{fighter}#owner-controls")
        assert await agent_status(platform, fighter) == "PAUSED"
        assert 'id="resume-agent"' in (await alice.get(f"/fighters/{fighter}"))[1]


@pytest.mark.asyncio
async def test_the_owner_rotates_its_agents_key_and_sees_it_once(platform: Platform) -> None:
    still(platform)
    async with running(platform) as api, browser(api) as alice:
        token = await api.owner("alice")
        agent = await add_agent(platform, await owner_of(platform, token), "scout-k", "SCOUT")
        await alice.sign_in(token)
        _, page, _ = await alice.get(f"/agents/{agent}")
        assert f'action="/agents/{agent}/rotate-key"' in page
        form = {"csrf_token": hidden(page, "csrf_token")}
        status, body, _ = await alice.post(f"/agents/{agent}/rotate-key", form)
        assert status == 400
        assert "tick the box" in body
        status, body, headers = await alice.post(
            f"/agents/{agent}/rotate-key", form | {"confirm": "yes"}
        )
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        shown = re.search(r'id="api-key">([^<]+)<', body)
        assert shown is not None
        async with platform.db.session() as session:
            stored = await session.get(Agent, agent)
        assert stored is not None
        assert stored.key_sealed is not None
        assert platform.vault.open(stored.key_sealed) == shown.group(1)
        assert shown.group(1) not in (await alice.get(f"/agents/{agent}"))[1]


async def stored_matches(platform: Platform) -> list[Match]:
    async with platform.db.session() as session:
        return list(await session.scalars(select(Match)))


@pytest.mark.asyncio
async def test_an_owner_starts_a_friendly_against_anothers_fighter(platform: Platform) -> None:
    still(platform)
    platform.settings.owner_matches_in_flight = 1
    async with running(platform) as api, browser(api) as alice:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        alice_id, bob_id = (
            await owner_of(platform, alice_token),
            await owner_of(platform, bob_token),
        )
        mine = await add_fighter(platform, alice_id, "alice-f")
        theirs = await add_fighter(platform, bob_id, "bob-f", friendly_challenges=True)
        shy = await add_fighter(platform, bob_id, "bob-shy", friendly_challenges=False)
        await alice.sign_in(alice_token)
        _, own_page, _ = await alice.get(f"/fighters/{mine}")
        assert 'id="challenge"' not in own_page  # not against its own fighter
        _, page, _ = await alice.get(f"/fighters/{theirs}")
        assert f'<option value="{mine}">alice-f</option>' in page
        action = f"/fighters/{theirs}/challenge"
        form = {"csrf_token": hidden(page, "csrf_token"), "mine": mine, "seat": "defender"}
        assert (await alice.post(action, form | {"csrf_token": ""}))[0] == 403
        status, body, _ = await alice.post(action, form | {"seat": "referee"})
        assert status == 400
        assert "seat must be attacker or defender" in body
        # The other owner's consent is checked as in the API.
        status, body, _ = await alice.post(f"/fighters/{shy}/challenge", form)
        assert status == 403
        assert "does not accept friendly matches from other owners" in body
        assert await stored_matches(platform) == []

        status, body, headers = await alice.post(action, form)
        assert status == 303, body
        [match] = await stored_matches(platform)
        assert headers["Location"] == f"/matches/{match.id}"
        assert (match.attacker_id, match.defender_id) == (theirs, mine)
        assert (match.requested_by, match.kind) == (alice_id, "friendly")
        _, page, _ = await alice.get(f"/fighters/{theirs}")
        assert '<td class="num">1 of 1</td><td class="num">1 of 60</td>' in page
        # The owner's match quota holds as in the API: one in flight.
        status, _, headers = await alice.post(action, form)
        assert status == 429
        assert "Retry-After" in headers
