"""An agent's endpoint and a model fighter's model, changed by the owner (or the admin) from
the browser and through the API: the same service, the same checks, on both stores."""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any

import pytest
from sqlalchemy import select

from palaestra.checks import admitted
from palaestra.engine.accounts import authenticate
from palaestra.engine.agents.endpoints import change_endpoint
from palaestra.engine.agents.wizard import begin_wizard, run_wizard_steps
from palaestra.platform import Platform
from palaestra.store.models import Agent, AgentEvent
from tests.integration.browser_support import browser, hidden
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.servers import closed_port, serve
from tests.integration.web_support import still

pytestmark = pytest.mark.asyncio


async def stored(platform: Platform, agent_id: str) -> Agent:
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    assert agent is not None
    return agent


async def status_changes(platform: Platform, agent_id: str) -> list[str]:
    query = (
        select(AgentEvent.reason)
        .where(AgentEvent.agent_id == agent_id, AgentEvent.kind == "status")
        .order_by(AgentEvent.id)
    )
    async with platform.db.session() as session:
        return [str(reason) for reason in await session.scalars(query)]


async def admitted_agent(api: Api, token: str, url: str, agent: EdgeAgent) -> str:
    """An agent registered at ``url`` and admitted by its wizard; its id."""
    body = {"name": "mover", "role": "SCOUT", "endpoint_url": url}
    status, created = await api.call("POST", "/api/agents", token=token, json=body)
    assert status == 201, created
    agent.key = created["api_key"]
    agent_id: str = created["agent_id"]
    status, wizard = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
    assert (status, wizard["status"]) == (200, "ACTIVE"), wizard
    return agent_id


async def until_status(platform: Platform, agent_id: str, status: str) -> Agent:
    for _ in range(200):
        agent = await stored(platform, agent_id)
        if agent.status == status:
            return agent
        await asyncio.sleep(0.05)
    raise AssertionError(f"the agent did not become {status}: {agent.status}")


async def test_the_owner_moves_its_agent_and_the_wizard_admits_it_again(
    platform: Platform,
) -> None:
    still(platform)
    old, new = EdgeAgent(key=""), EdgeAgent(key="")
    async with (
        running(platform) as api,
        browser(api) as alice,
        browser(api) as bob,
        serve(old) as first,
        serve(new) as second,
    ):
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        agent_id = await admitted_agent(api, alice_token, first.url("/agent"), old)
        new.key = old.key
        path = f"/agents/{agent_id}/endpoint"
        await alice.sign_in(alice_token)
        await bob.sign_in(bob_token)

        # Another owner: the form shows nothing of the URL, and is refused as not found.
        _, page, _ = await bob.get(path)
        assert first.url("/agent") not in page
        form = {"csrf_token": hidden(page, "csrf_token"), "endpoint_url": second.url("/agent")}
        assert (await bob.post(path, form))[0] == 404
        _, agent_page, _ = await bob.get(f"/agents/{agent_id}")
        assert 'id="change-endpoint-link"' not in agent_page

        _, agent_page, _ = await alice.get(f"/agents/{agent_id}")
        assert 'id="change-endpoint-link"' in agent_page
        status, page, headers = await alice.get(path)
        assert (status, headers["Cache-Control"]) == (200, "no-store")
        assert f'value="{first.url("/agent")}"' in page  # the URL it has, to edit
        form_token = hidden(page, "csrf_token")
        # No form token, or a form from another site: refused, nothing changes.
        status, body, _ = await alice.post(path, {"endpoint_url": second.url("/agent")})
        assert (status, "Form token missing or wrong" in body) == (403, True)
        sent = {"csrf_token": form_token, "endpoint_url": second.url("/agent")}
        assert (await alice.post(path, sent, origin="https://evil.test"))[0] == 403
        # A URL the egress policy refuses: said in its words, the form kept as typed.
        for url, says in (
            ("https://10.1.2.3/hook", "10.1.2.3 is a private address"),
            ("https://169.254.169.254/latest", "169.254.169.254 is a link-local address"),
            ("ftp://agents.example/hook", "endpoint_url must be an https:// URL"),
        ):
            status, body, _ = await alice.post(
                path, {"csrf_token": form_token, "endpoint_url": url}
            )
            assert status == 400, url
            assert says in html.unescape(body), url
            assert f'value="{url}"' in body, url
        status, body, _ = await alice.post(
            path, {"csrf_token": form_token, "endpoint_url": "https://10.1.2.3/hook"}
        )
        assert "Endpoint refused by egress policy: 10.1.2.3 is a private address" in body
        # One that does not answer: refused as at registration.
        gone = f"http://127.0.0.1:{closed_port()}/agent"
        status, body, _ = await alice.post(path, {"csrf_token": form_token, "endpoint_url": gone})
        assert status == 400
        assert "Endpoint not reachable: External agent unreachable: connect" in body
        agent = await stored(platform, agent_id)
        assert (agent.endpoint_url, agent.status) == (first.url("/agent"), "ACTIVE")

        # The new URL: probed, the agent PENDING, its wizard run there; admitted again.
        status, _, headers = await alice.post(path, sent)
        assert status == 303
        assert re.fullmatch(rf"/agents/{agent_id}/wizard/[0-9a-f-]+", headers["Location"])
        agent = await until_status(platform, agent_id, "ACTIVE")
        assert agent.endpoint_url == second.url("/agent")
        assert new.ledger.gets == ["EdgeArena-Ping/1.0"]
        assert new.ledger.posts[0].get("type") == "handshake"
        changes = await status_changes(platform, agent_id)
        assert changes[-2:] == [
            "ACTIVE -> PENDING (new endpoint by owner)",
            "PENDING -> ACTIVE (wizard passed)",
        ]
        status, wizard_page, _ = await alice.get(headers["Location"])
        assert status == 200
        assert 'data-state="passed"' in wizard_page


async def test_the_api_changes_an_endpoint_for_its_owner_and_the_admin(
    platform: Platform,
) -> None:
    still(platform)
    old, new = EdgeAgent(key=""), EdgeAgent(key="")
    async with running(platform) as api, serve(old) as first, serve(new) as second:
        token, other = await api.owner("alice"), await api.owner("bob")
        agent_id = await admitted_agent(api, token, first.url("/agent"), old)
        new.key = old.key
        path = f"/api/agents/{agent_id}"
        body = {"endpoint_url": second.url("/agent")}
        assert (await api.call("PATCH", path, token=other, json=body))[0] == 404
        refused = {"endpoint_url": "https://[::1]:8443/agent"}
        status, answer = await api.call("PATCH", path, token=token, json=refused)
        assert status == 400
        assert answer["error"].startswith("Endpoint refused by egress policy: ")
        status, answer = await api.call("PATCH", path, token=ADMIN_TOKEN, json=body)
        assert status == 200, answer
        assert answer["changed"] is True
        assert answer["probe"] == {"passed": True, "reason": None}
        assert answer["wizard"]["passed"] is True
        assert (answer["agent"]["status"], answer["agent"]["endpoint_url"]) == (
            "ACTIVE",
            second.url("/agent"),
        )
        assert "ACTIVE -> PENDING (new endpoint by admin)" in await status_changes(
            platform, agent_id
        )
        status, answer = await api.call("PATCH", path, token=token, json=body)
        assert (status, answer["changed"], answer["wizard"]) == (200, False, None)


async def test_a_paused_agent_moved_stays_paused_until_resumed(platform: Platform) -> None:
    still(platform)
    old, new = EdgeAgent(key=""), EdgeAgent(key="")
    async with running(platform) as api, serve(old) as first, serve(new) as second:
        token = await api.owner("alice")
        agent_id = await admitted_agent(api, token, first.url("/agent"), old)
        new.key = old.key
        assert (await api.call("POST", f"/api/agents/{agent_id}/pause", token=token))[0] == 200
        body = {"endpoint_url": second.url("/agent")}
        status, answer = await api.call("PATCH", f"/api/agents/{agent_id}", token=token, json=body)
        assert (status, answer["agent"]["status"], answer["wizard"]["passed"]) == (
            200,
            "PAUSED",
            True,
        )
        status, resumed = await api.call("POST", f"/api/agents/{agent_id}/resume", token=token)
        assert (status, resumed["status"]) == (200, "ACTIVE")


async def fighter_row(platform: Platform, fighter_id: str) -> Agent:
    return await stored(platform, fighter_id)


async def model_fighter(api: Api, token: str, platform: Platform) -> str:
    body: dict[str, Any] = {
        "name": "owl",
        "entrant_type": "model",
        "class": platform.settings.fighter_classes[0],
        "model": {"model": "local"},
    }
    status, created = await api.call("POST", "/api/fighters", token=token, json=body)
    assert status == 201, created
    fighter_id: str = created["fighter_id"]
    return fighter_id


async def test_the_owner_changes_its_model_fighters_model(platform: Platform) -> None:
    still(platform)
    async with running(platform) as api, browser(api) as alice, browser(api) as bob:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        fighter_id = await model_fighter(api, alice_token, platform)
        assert (await fighter_row(platform, fighter_id)).friendly_challenges is True
        path = f"/fighters/{fighter_id}/model"
        await alice.sign_in(alice_token)
        await bob.sign_in(bob_token)
        _, page, _ = await bob.get(path)
        remote = {"model": "m1", "base_url": "https://models.example/v1", "api_key": "sk-one"}
        form = {"csrf_token": hidden(page, "csrf_token")} | remote
        assert (await bob.post(path, form))[0] == 403
        _, fighter_page, _ = await bob.get(f"/fighters/{fighter_id}")
        assert 'id="change-model-link"' not in fighter_page

        _, fighter_page, _ = await alice.get(f"/fighters/{fighter_id}")
        assert 'id="change-model-link"' in fighter_page
        status, page, _ = await alice.get(path)
        assert status == 200
        assert 'value="local"' in page
        form_token = hidden(page, "csrf_token")
        assert (await alice.post(path, remote))[0] == 403  # no form token
        for change, says in (
            (
                {"base_url": "https://192.168.1.5/v1"},
                "model.base_url is refused by the egress policy: 192.168.1.5 is a private address",
            ),
            ({"api_key": ""}, "model.base_url and model.api_key are required"),
            ({"model": ""}, "model.model must not be empty"),
        ):
            typed = {"csrf_token": form_token} | remote | change
            status, body, _ = await alice.post(path, typed)
            assert status == 400, change
            assert says in html.unescape(body), change
            assert f'value="{typed["base_url"]}"' in body, change  # kept as typed
            assert "sk-one" not in body  # but never the key
        assert (await fighter_row(platform, fighter_id)).provider == {"model": "local"}

        status, _, headers = await alice.post(path, {"csrf_token": form_token} | remote)
        assert (status, headers["Location"]) == (303, f"/fighters/{fighter_id}#model")
        fighter = await fighter_row(platform, fighter_id)
        assert fighter.provider == {"base_url": "https://models.example/v1", "model": "m1"}
        assert platform.vault.open(fighter.provider_key_sealed or "") == "sk-one"
        assert fighter.friendly_challenges is False  # it spends its owner's key now
        # The key left out: kept for the same provider URL, never for another.
        same = {"csrf_token": form_token, "model": "m2", "base_url": remote["base_url"]}
        assert (await alice.post(path, same))[0] == 303
        fighter = await fighter_row(platform, fighter_id)
        assert (fighter.provider or {})["model"] == "m2"
        assert platform.vault.open(fighter.provider_key_sealed or "") == "sk-one"
        elsewhere = same | {"base_url": "https://other.example/v1"}
        status, body, _ = await alice.post(path, elsewhere)
        assert status == 400
        assert "model.base_url and model.api_key are required" in body


async def test_the_api_changes_a_fighters_model(platform: Platform) -> None:
    still(platform)
    async with running(platform) as api:
        token, other = await api.owner("alice"), await api.owner("bob")
        fighter_id = await model_fighter(api, token, platform)
        path = f"/api/fighters/{fighter_id}"
        body = {"model": {"model": "m1", "base_url": "https://models.example/v1", "api_key": "k"}}
        assert (await api.call("PATCH", path, token=other, json=body))[0] == 403
        loopback = {"model": body["model"] | {"base_url": "https://10.0.0.1/v1"}}
        status, answer = await api.call("PATCH", path, token=token, json=loopback)
        assert status == 400
        assert "refused by the egress policy: 10.0.0.1 is a private address" in answer["error"]
        status, answer = await api.call("PATCH", path, token=ADMIN_TOKEN, json=body)
        assert status == 200, answer
        fighter = await fighter_row(platform, fighter_id)
        assert fighter.provider == {"base_url": "https://models.example/v1", "model": "m1"}
        status, answer = await api.call(
            "PATCH", path, token=token, json={"model": {"model": "local"}, "rated_challenges": True}
        )
        assert (status, answer["rated_challenges"]) == (200, True)
        fighter = await fighter_row(platform, fighter_id)
        assert (fighter.provider, fighter.provider_key_sealed) == ({"model": "local"}, None)


async def test_a_wizard_of_the_old_endpoint_admits_nothing_once_it_moved(
    platform: Platform,
) -> None:
    """An attempt begun on the old URL that ends after the move is recorded, but its pass
    speaks of the old URL: the agent stays PENDING until a wizard passes on the new one."""
    still(platform)
    old, new = EdgeAgent(key=""), EdgeAgent(key="")
    async with running(platform) as api, serve(old) as first, serve(new) as second:
        token = await api.owner("alice")
        body = {"name": "mover", "role": "SCOUT", "endpoint_url": first.url("/agent")}
        status, created = await api.call("POST", "/api/agents", token=token, json=body)
        assert status == 201
        old.key = new.key = created["api_key"]
        agent_id = created["agent_id"]
        caller = await authenticate(platform, token)
        stale = await begin_wizard(platform, caller, agent_id)
        moved = await change_endpoint(platform, caller, agent_id, second.url("/agent"))
        assert moved.attempt is not None
        assert admitted(await run_wizard_steps(platform, stale))  # it passed, on the old URL
        assert (await stored(platform, agent_id)).status == "PENDING"
        assert admitted(await run_wizard_steps(platform, moved.attempt))
        assert (await stored(platform, agent_id)).status == "ACTIVE"
