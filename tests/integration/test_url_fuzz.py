"""Random and hostile URLs through every route that takes one, on the real server: whatever
the URL, the answer is a 2xx or a 4xx with a reason, never a 5xx.

The platform's egress here resolves no name (every one fails as unknown) and refuses every
address but loopback, so whatever an example's URL points at, nothing leaves the machine.
"""

from __future__ import annotations

import ipaddress
import string
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palaestra.egress import EgressClient, EgressPolicy
from palaestra.egress.policy import Address
from palaestra.platform import Platform
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import ScriptedResolver

pytestmark = pytest.mark.asyncio


@dataclass(frozen=True)
class LoopbackOnly(EgressPolicy):
    """The development policy, with every address outside loopback refused as well."""

    def category(self, address: Address) -> str | None:
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        if not (mapped or address).is_loopback:
            return "outside this test's loopback"
        return super().category(address)


LABEL_CHARS = string.ascii_letters + string.digits + "-_"
HOSTILE_HOSTS = [
    "a..com",
    "a" * 64 + ".com",
    ("a" * 63 + ".") * 4 + "com",
    ".",
    "..",
    "xn--",
    "xn--a",
    "xn--ls8h.la",
    "\U0001f4a9.la",
    "a\u200db.com",
    "a\u3002\u3002com",
    "\u05d0a.com",
    "%00.com",
    "%zz.com",
    "%80.com",
    "[::1",
    "[::g]",
    "[::1]x",
    "0x7f.1",
    "2130706433",
    "1.2.3.4.5",
    "256.1.1.1",
    "127.0.0.1",
    "[::ffff:127.0.0.1]",
    "localhost",
    "user:pass@agent.invalid",
    "\udcff.com",
    "\ufffd",
    "a b.com",
    "a\\b.com",
]
labels = st.one_of(
    st.text(LABEL_CHARS, max_size=70), st.just(""), st.just("xn--a"), st.text(max_size=8)
)
hosts = st.one_of(
    st.sampled_from(HOSTILE_HOSTS),
    st.lists(labels, max_size=6).map(".".join),
    st.text(max_size=40),
)
ports = st.one_of(
    st.none(), st.integers(min_value=-1, max_value=10**7).map(str), st.text(max_size=6)
)
schemes = st.sampled_from(["https", "http", "HTTPS", "ftp", "javascript", "file", "", "h ttps"])
paths = st.one_of(st.just("/"), st.text(max_size=30).map(lambda text: "/" + text))


@st.composite
def composed_urls(draw: st.DrawFn) -> str:
    port = draw(ports)
    authority = draw(hosts) + ("" if port is None else f":{port}")
    return f"{draw(schemes)}://{authority}{draw(paths)}"


urls = st.one_of(composed_urls(), st.text(max_size=120))


@dataclass
class Routes:
    api: Api
    token: str
    fighter: dict[str, Any]


@pytest.fixture
def database_url(tmp_path: Any) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"  # a URL's handling, one store


@pytest.fixture
async def routes(platform: Platform) -> AsyncIterator[Routes]:
    await platform.egress.close()
    platform.egress = EgressClient(
        LoopbackOnly.allowing(["127.0.0.0/8"]), clock=platform.clock, resolver=ScriptedResolver()
    )
    async with running(platform) as api:
        token = await api.owner()
        body = {"name": "f", "entrant_type": "harness", "class": "rogue"}
        status, fighter = await api.call("POST", "/api/fighters", token=token, json=body)
        assert status == 201, fighter
        yield Routes(api, token, fighter)


def answered_with_a_reason(status: int, body: Any) -> None:
    assert status < 500, body
    if status >= 400:
        assert isinstance(body, dict), body
        assert set(body) == {"error", "code"}, body
        assert body["error"], body


@settings(
    max_examples=120,
    deadline=None,
    # One server for all the examples: its state between them is part of what is tested.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(url=urls)
async def test_no_url_gets_a_5xx_on_any_route(routes: Routes, url: str) -> None:
    api, token = routes.api, routes.token
    agent = {"name": "a", "role": "SCOUT", "endpoint_url": url}
    answered_with_a_reason(*await api.call("POST", "/api/agents", token=token, json=agent))
    model = {"name": "m", "entrant_type": "model", "class": "rogue"}
    model["model"] = {"base_url": url, "model": "m", "api_key": "k"}  # type: ignore[assignment]
    answered_with_a_reason(*await api.call("POST", "/api/fighters", token=token, json=model))
    claim = {
        "fighter_id": routes.fighter["fighter_id"],
        "claim_code": routes.fighter["claim_code"],
        "url": url,
    }
    answered_with_a_reason(*await api.call("POST", "/api/fighters/endpoint", json=claim))
    form = urlencode(
        {"token": token, "name": "web", "role": "SCOUT", "endpoint_url": url},
        encoding="utf-8",
        errors="surrogatepass",
    )
    async with api.session.post(
        api.base + "/register",
        data=form.encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "text/html",
            "Origin": api.base,
        },
    ) as response:
        page = await response.text()
    assert response.status in (200, 400, 422), page[:500]
    assert "Internal error" not in page
    assert "Traceback" not in page
