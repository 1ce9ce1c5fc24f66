"""The web UI over HTTP, on both stores: pages, registration, the live wizard, error pages."""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import urlsplit

import pytest

from palaestra.clock import FrozenClock
from palaestra.engine.agents.lifecycle import history
from palaestra.engine.agents.wizard import WIZARD_CHECKS
from palaestra.platform import Platform
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import serve
from tests.integration.web_support import post_form

pytestmark = pytest.mark.asyncio

HTML = {"Accept": "text/html"}


async def page(api: Api, path: str, **kwargs: Any) -> tuple[int, str]:
    headers = {**HTML, **kwargs.pop("headers", {})}
    async with api.session.get(api.base + path, headers=headers, **kwargs) as response:
        return response.status, await response.text()


async def register_in_browser(api: Api, token: str, url: str, name: str = "web-scout") -> str:
    status, body, headers = await post_form(
        api,
        "/register",
        {"token": token, "name": name, "role": "SCOUT", "endpoint_url": url},
    )
    assert status == 200, body
    assert headers["Cache-Control"] == "no-store"
    key = re.search(r'<pre class="secret" id="api-key">([^<]+)</pre>', body)
    assert key is not None, body
    # The hint serves the agent on its registered port, never on the arena's own.
    assert f"palaestra agent serve my_agent:app --port {urlsplit(url).port}</pre>" in body
    return key.group(1)


async def test_the_pages_render_for_an_empty_arena(platform: Platform) -> None:
    platform.settings.public_runs = True
    async with running(platform) as api:
        for path in ("/", "/agents", "/register", "/runs", "/matches", "/leaderboard"):
            status, body = await page(api, path)
            assert status == 200, (path, body[:300])
            assert "<nav" in body
            assert 'href="/docs"' in body
        assert "No agents yet" in (await page(api, "/"))[1]
        assert "Nothing yet" in (await page(api, "/runs"))[1]
        async with api.session.get(api.base + "/static/htmx.min.js") as response:
            assert response.status == 200
            assert (await response.text()).startswith("/*! htmx 2")


async def test_unknown_pages_are_html_for_browsers_and_json_for_the_api(platform: Platform) -> None:
    async with running(platform) as api:
        status, body = await page(api, "/nowhere")
        assert status == 404
        assert "<h1>Not found</h1>" in body
        status, body = await page(api, "/agents/01234567-89ab-7def-8123-456789abcdef")
        assert status == 404
        assert "No such agent." in body
        status, error = await api.call("GET", "/api/nowhere", headers=HTML)
        assert (status, error["code"]) == (404, "not-found")
        status, error = await api.call("GET", "/nowhere")  # a client that does not ask for HTML
        assert (status, error["code"]) == (404, "not-found")


async def test_registration_shows_the_key_once_and_the_wizard_live(platform: Platform) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", delay_s=0.05)
        async with serve(agent) as endpoint:
            agent.key = await register_in_browser(api, token, endpoint.url("/a"))
            status, agents = await api.call("GET", "/api/agents", token=token)
            agent_id = agents[0]["agent_id"]
            assert agents[0]["status"] == "PENDING"

            status, fragment, _ = await post_form(
                api, f"/agents/{agent_id}/wizard", {"token": token}, {"HX-Request": "true"}
            )
            assert status == 200, fragment
            assert 'data-state="running"' in fragment
            # The owner started it: the panel polls with the token, for whole reasons.
            attempt = re.search(r'hx-post="(/agents/[^"]+/wizard/[^"]+)"', fragment)
            assert attempt is not None
            assert f"""hx-vals='{{"token": "{token}"}}'""" in fragment
            seen_running_with_some_done = False
            for _ in range(200):
                status, fragment, sent = await post_form(
                    api, attempt.group(1), {"token": token}, {"HX-Request": "true"}
                )
                assert status == 200
                assert sent["Cache-Control"] == "no-store"
                done = fragment.count('class="check pass"')
                if 'data-state="running"' in fragment and 0 < done < len(WIZARD_CHECKS):
                    seen_running_with_some_done = True
                if 'data-state="running"' not in fragment:
                    break
                await asyncio.sleep(0.02)
        assert 'data-state="passed"' in fragment, fragment
        assert "hx-get" not in fragment  # polling stops
        assert "hx-post" not in fragment
        assert fragment.count('class="check pass"') == len(WIZARD_CHECKS)
        assert 'class="chip st-ACTIVE"' in fragment
        assert seen_running_with_some_done
        _, listed = await api.call("GET", f"/api/agents/{agent_id}", token=token)
        assert listed["status"] == "ACTIVE"
        # The key is never shown again, on any page.
        for path in ("/", "/agents", f"/agents/{agent_id}", attempt.group(1)):
            assert agent.key not in (await page(api, path))[1]


async def test_registration_errors_are_shown_in_the_form(platform: Platform) -> None:
    async with running(platform) as api:
        status, body, _ = await post_form(
            api,
            "/register",
            {"token": "wrong", "name": "x", "role": "SCOUT", "endpoint_url": "http://127.0.0.1:9/"},
        )
        assert status == 400
        assert "Invalid bearer token" in body
        assert 'value="x"' in body  # what was typed is kept
        token = await api.owner()
        status, body, _ = await post_form(
            api,
            "/register",
            {"token": token, "name": "x", "role": "SCOUT", "endpoint_url": "http://127.0.0.1:9/"},
        )
        assert status == 400
        assert "Endpoint not reachable" in body


async def test_forms_posted_from_another_site_are_refused(platform: Platform) -> None:
    async with running(platform) as api:
        token = await api.owner()
        status, body, _ = await post_form(
            api,
            "/register",
            {"token": token, "name": "x", "role": "SCOUT", "endpoint_url": "http://127.0.0.1:9/"},
            {"Origin": "https://evil.example"},
        )
        assert status == 403
        assert "another site" in body
        _, agents = await api.call("GET", "/api/agents", token=token)
        assert agents == []


async def test_only_the_owner_starts_the_wizard_from_the_page(platform: Platform) -> None:
    async with running(platform) as api:
        owner, other = await api.owner("a"), await api.owner("b")
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            await register_in_browser(api, owner, endpoint.url("/a"))
            _, agents = await api.call("GET", "/api/agents", token=owner)
            agent_id = agents[0]["agent_id"]
            status, body, _ = await post_form(
                api, f"/agents/{agent_id}/wizard", {"token": other}, {"HX-Request": "true"}
            )
        assert status == 400
        assert f"Agent {agent_id} not found" in body


async def test_an_agent_page_shows_its_failures_timeline_and_chart(
    platform: Platform, clock: FrozenClock
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register_in_browser(api, token, endpoint.url("/a"), "flaky")
            agent.key = created
            _, agents = await api.call("GET", "/api/agents", token=token)
            agent_id = agents[0]["agent_id"]
            status, result = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
            assert result["passed"] is True
        async with platform.db.session() as session, session.begin():
            for i in range(3):
                clock.advance(10)
                session.add(history(agent_id, clock.now(), "ping", "success", latency_ms=20.0 + i))
            clock.advance(10)
            session.add(
                history(
                    agent_id,
                    clock.now(),
                    "ping",
                    "failure",
                    latency_ms=4000.0,
                    reason="External agent responded with 503: flaky on purpose",
                )
            )
            session.add(
                history(
                    agent_id,
                    clock.now(),
                    "status",
                    "DEGRADED",
                    reason="ACTIVE -> DEGRADED (health ping)",
                    detail={"from": "ACTIVE", "to": "DEGRADED"},
                )
            )
        status, body = await page(api, f"/agents/{agent_id}")
        assert status == 200
        # Everyone reads the failure's kind and status; what the agent sent is its owner's.
        assert "External agent responded with 503</td>" in body
        assert "flaky on purpose" not in body
        assert body.count('class="pt-ok"') == 2 * 3  # the wide chart and the narrow one
        assert body.count('class="pt-fail"') == 2
        assert 'class="st-DEGRADED"' in body  # the strip
        assert "health ping" in body
        assert 'data-state="passed"' in body  # the wizard's last result
        # The percentiles over its history: the failed ping's 4 s is the slowest timing.
        assert re.search(r"Over its whole history:\s+half within [\d.,]+ ms", body)
        assert re.search(r"99% within 4,217 ms\.</p>", body)
        assert endpoint.url("/a") not in body  # only the host is public
        status, overview = await page(api, "/")
        assert "External agent responded with 503" in overview
        assert "flaky on purpose" not in overview
        assert re.search(r"ACTIVE →</span> <span class=\"chip st-DEGRADED\">", overview)


async def test_a_forged_signature_warning_is_public_on_the_agent_pages(platform: Platform) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", check_signatures=False)
        async with serve(agent) as endpoint:
            agent.key = await register_in_browser(api, token, endpoint.url("/a"), "trusting")
            _, agents = await api.call("GET", "/api/agents", token=token)
            agent_id = agents[0]["agent_id"]
            _, result = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
        assert (result["passed"], result["status"]) == (True, "ACTIVE")
        # No token: what anyone sees.
        status, body = await page(api, f"/agents/{agent_id}")
        assert status == 200
        assert 'data-state="passed"' in body
        assert "Admitted with 1 warning" in body
        assert 'class="check warn" data-check="tampered-signature"' in body
        assert "Warning from its wizard: accepts forged signatures" in body
        status, listing = await page(api, "/agents")
        assert status == 200
        assert re.search(r'data-agent="trusting">.*?1 warning</span>', listing, re.S)


async def test_forms_behind_a_proxy_that_rewrites_host_are_taken_from_the_public_url(
    platform: Platform,
) -> None:
    platform.settings.public_url = "https://arena.example.org/"
    form = {"token": "wrong", "name": "x", "role": "SCOUT", "endpoint_url": "http://127.0.0.1:9/"}
    proxied = {"Host": "palaestra-internal:8000"}
    async with running(platform) as api:
        status, body, _ = await post_form(
            api, "/register", form, {**proxied, "Origin": "https://arena.example.org"}
        )
        assert (status, "Invalid bearer token" in body) == (400, True)  # past the origin check
        for other in ("http://arena.example.org", "https://evil.example", "null"):
            status, body, _ = await post_form(api, "/register", form, {**proxied, "Origin": other})
            assert status == 403, other
            assert "another site" in body
