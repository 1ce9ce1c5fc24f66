"""Every URL the platform is handed is judged whole where it comes in, through the real server:
the API's three URL fields and the register form answer a 400 that names the problem, and
nothing is sent; the resolver refuses a name it cannot look up instead of raising; a URL
stored before these checks gives its entrant a clear URL error, charged to the entrant."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from palaestra.egress import EgressClient, EgressPolicy, PolicyResolver, resolve_checked
from palaestra.engine.cage.referee import Referee
from palaestra.errors import EgressRefused
from palaestra.platform import Platform
from palaestra.store.models import Agent, Turn
from tests.integration.cage_agents import CageHarness, injects
from tests.integration.conftest import NetworkGuard
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import serve
from tests.integration.web_support import HTML

pytestmark = pytest.mark.asyncio

LONG_LABEL = "a" * 64
#: URLs whose host or port no request could ever reach, and the problem each is told.
BAD_URLS = [
    pytest.param("https://a..com/", "the host name 'a..com' has an empty label", id="empty-label"),
    pytest.param(
        f"https://{LONG_LABEL}.com/",
        f"the host label '{'a' * 40}…' is 64 characters long, more than 63",
        id="label-of-64",
    ),
    pytest.param(
        "https://" + ("a" * 60 + ".") * 5 + "com/",
        "the host name is 308 characters long, more than 253",
        id="name-of-308",
    ),
    pytest.param("https://.agent.invalid/", "the host name '.agent.invalid' has an empty label"),
    pytest.param(
        "https://a\u3002\u3002com/",
        "the host name 'a..com' has an empty label",
        id="ideographic-dots",
    ),
    pytest.param(
        "https://agent.invalid:99999/", "the port 99999 is out of range (1-65535)", id="port-range"
    ),
    pytest.param("https://agent.invalid:80a/", "the port '80a' is not a number", id="port-text"),
    pytest.param(
        "https://agent.invalid:0/", "port 0 is not a port a server listens on", id="port-0"
    ),
    pytest.param(
        "https://xn--a.invalid/",
        "the host label 'xn--a' decodes to '\\x80', which UTS #46 does not allow "
        "(Codepoint U+0080 not allowed at position 1 in '\\x80')",
        id="bad-a-label",
    ),
    pytest.param(
        "https://xn--ab-.invalid/",
        "the host label 'xn--ab-' is not an A-label: it spells no Unicode name",
        id="fake-a-label",
    ),
    pytest.param(
        "https://ab\u200d.invalid/",
        "the host label 'ab\\u200d' is not allowed by UTS #46 "
        "(Joiner U+200D not allowed at position 3 in 'ab\\u200d')",
        id="joiner",
    ),
    pytest.param(
        "https://exa mple.invalid/",
        "the host contains ' ' (U+0020), which no host name may",
        id="space",
    ),
    pytest.param("https://[::1/", "the IPv6 address has no closing ']'", id="ipv6-unclosed"),
]

#: The egress policy says these in its own words (``... is not a valid IPv4 address``).
BAD_ADDRESSES = [
    pytest.param(
        "https://1.2.3.4.5/", "the host '1.2.3.4.5' is not a valid IPv4 address", id="ipv4-five"
    ),
]


def invalid_url(field: str, problem: str) -> dict[str, str]:
    return {"error": f"{field} is not a valid URL: {problem}", "code": "invalid-url"}


async def new_fighter(api: Api, token: str, **more: Any) -> dict[str, Any]:
    body = {"name": "f", "entrant_type": "harness", "class": "rogue", **more}
    status, created = await api.call("POST", "/api/fighters", token=token, json=body)
    assert status == 201, created
    return created  # type: ignore[no-any-return]


@pytest.mark.parametrize(("url", "problem"), BAD_URLS + BAD_ADDRESSES)
async def test_a_bad_url_is_a_400_naming_the_problem_on_every_api_route(
    platform: Platform, network: NetworkGuard, url: str, problem: str
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        fighter = await new_fighter(api, token)
        sent_before = len(network.connects)
        agent = {"name": "a", "role": "SCOUT", "endpoint_url": url}
        assert await api.call("POST", "/api/agents", token=token, json=agent) == (
            400,
            invalid_url("endpoint_url", problem),
        )
        model = {"base_url": url, "model": "m", "api_key": "k"}
        assert await api.call(
            "POST",
            "/api/fighters",
            token=token,
            json={"name": "f", "entrant_type": "model", "class": "rogue", "model": model},
        ) == (400, invalid_url("model.base_url", problem))
        claim = {"fighter_id": fighter["fighter_id"], "claim_code": fighter["claim_code"]}
        assert await api.call("POST", "/api/fighters/endpoint", json={**claim, "url": url}) == (
            400,
            invalid_url("url", problem),
        )
        # Nothing was looked up or sent: only the test's own calls to the API left.
        assert network.lookups == []
        assert all(host == "127.0.0.1" for host, _ in network.connects[sent_before:])
        # The claim code was not used up by the refusal.
        status, _ = await api.call("GET", f"/api/fighters/{fighter['fighter_id']}")
        assert status == 200


@pytest.mark.parametrize(("url", "problem"), BAD_URLS[:3])
async def test_the_register_form_shows_a_bad_url_as_a_form_error(
    platform: Platform, url: str, problem: str
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        form = {"token": token, "name": "web", "role": "SCOUT", "endpoint_url": url}
        async with api.session.post(
            api.base + "/register", data=form, headers={**HTML, "Origin": api.base}
        ) as response:
            status, body = response.status, await response.text()
    assert status == 400
    assert response.content_type == "text/html"
    assert "endpoint_url is not a valid URL" in body
    assert problem.split("'")[0] in body
    assert 'value="web"' in body  # the form is shown again with what was typed


@pytest.mark.parametrize(
    "host", ["a..com", f"{LONG_LABEL}.com", ".", "", ("a" * 60 + ".") * 5 + "com"]
)
async def test_the_resolver_refuses_a_name_it_cannot_look_up(
    network: NetworkGuard, host: str
) -> None:
    resolver = PolicyResolver(EgressPolicy())
    with pytest.raises(EgressRefused, match="invalid host name"):
        await resolver.resolve(host, 443)
    await resolver.close()
    assert network.lookups == []


@pytest.mark.parametrize(("url", "problem"), BAD_URLS)
async def test_resolving_a_bad_url_is_a_refusal(
    network: NetworkGuard, url: str, problem: str
) -> None:
    with pytest.raises(EgressRefused) as refused:
        await resolve_checked(EgressPolicy(), url)
    assert refused.value.message == f"invalid URL {url!r}: {problem}"
    assert network.lookups == []


@pytest.mark.parametrize(("url", "problem"), BAD_URLS)
async def test_a_call_to_a_bad_url_is_a_refused_failure(
    network: NetworkGuard, url: str, problem: str
) -> None:
    async with EgressClient(EgressPolicy()) as client:
        result = await client.get(url, user_agent="test", deadline=1.0)
    assert result.reason == f"Endpoint refused by egress policy: invalid URL {url!r}: {problem}"
    assert network.connects == []
    assert network.lookups == []


async def test_a_model_url_stored_before_the_checks_is_its_entrants_failed_turn(
    platform: Platform,
) -> None:
    platform.settings.referee_enabled = False
    platform.settings.cage_turn_deadline_ms = 500
    async with running(platform) as api, serve(CageHarness(injects)) as harness:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = {"base_url": "https://llm.invalid/v1", "model": "tiny", "api_key": "sk-x"}
        defender = await new_fighter(
            api, bob, entrant_type="model", model=model, friendly_challenges=True
        )
        attacker = await new_fighter(api, alice)
        claim = {
            "fighter_id": attacker["fighter_id"],
            "claim_code": attacker["claim_code"],
            "url": harness.url("/fight"),
        }
        assert (await api.call("POST", "/api/fighters/endpoint", json=claim))[0] == 200
        stored = "https://a\u3002\u3002com/v1"  # as an older version let it in
        async with platform.db.session() as session, session.begin():
            await session.execute(
                update(Agent)
                .where(Agent.id == defender["fighter_id"])
                .values(provider={"base_url": stored, "model": "tiny"})
            )
        status, started = await api.call(
            "POST",
            "/api/matches",
            token=alice,
            json={"attacker": attacker["fighter_id"], "defender": defender["fighter_id"]},
        )
        assert status == 202, started
        await Referee(platform).run_once()
        match = await platform_match(api, started["match_id"])
        async with platform.db.session() as session:
            reasons = list(
                await session.scalars(
                    select(Turn.reason)
                    .where(Turn.match_id == started["match_id"], Turn.status == "FAILED")
                    .order_by(Turn.turn)
                )
            )
    assert reasons[0] == (
        "model provider failed: Endpoint refused by egress policy: invalid URL "
        f"'{stored}/chat/completions': the host name 'a..com' has an empty label"
    )
    assert match["status"] == "SCORED"  # the entrant's fault: never voided as the arena's
    assert match["outcome"] == "attacker"
    assert match["decided_by"] == "forfeit"
    assert match["void_reason"] is None


async def platform_match(api: Api, match_id: str) -> dict[str, Any]:
    status, body = await api.call("GET", f"/api/matches/{match_id}")
    assert status == 200, body
    return body  # type: ignore[no-any-return]
