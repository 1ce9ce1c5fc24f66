"""An egress refusal tells an owner that the host resolves to an address the platform does
not reach, never the address: the platform's DNS is no owner's to map. The address is in
the logs (for the operator), and ``palaestra check``, run by the author on their own
machine, still names it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog.testing

from palaestra.clock import FrozenClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import running
from tests.integration.servers import LOOPBACK, ScriptedResolver, serve

pytestmark = pytest.mark.asyncio

INTERNAL = "10.20.30.40"
WITHHELD = "resolves to an address the platform does not reach"
USER_AGENT = "EdgeArena-Ping/1.0"


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"


@pytest.fixture
def dns() -> ScriptedResolver:
    return ScriptedResolver(
        {"db.internal": [INTERNAL], "metadata.internal": ["169.254.169.254"]}
    ).then("agent.test", [LOOPBACK], [INTERNAL])


@pytest.fixture
async def platform(
    settings: Settings, clock: FrozenClock, dns: ScriptedResolver
) -> AsyncIterator[Platform]:
    # Every call resolves anew (no kept-alive connection), as after a name's answer changed.
    egress = EgressClient(settings.egress_policy, clock=clock, resolver=dns, keepalive=False)
    opened = await Platform.open(settings, clock=clock, egress=egress)
    try:
        yield opened
    finally:
        await opened.close()


def exposed(value: Any) -> bool:
    return INTERNAL in str(value) or "169.254" in str(value)


@pytest.mark.parametrize("host", ["db.internal", "metadata.internal"])
async def test_registering_an_internal_name_is_refused_without_its_address(
    platform: Platform, host: str
) -> None:
    with structlog.testing.capture_logs() as logs:
        async with running(platform) as api:
            token = await api.owner()
            status, body = await api.call(
                "POST",
                "/api/agents",
                token=token,
                json={"name": "a", "role": "SCOUT", "endpoint_url": f"https://{host}/agent"},
            )
    assert status == 400
    assert body["error"] == (f"Endpoint refused by egress policy: {host} {WITHHELD}")
    assert not exposed(body)
    [logged] = [entry for entry in logs if entry["event"] == "egress refused a resolved address"]
    assert logged["host"] == host
    assert exposed(logged["exact"])


async def test_an_agent_whose_name_moves_inside_is_told_so_without_the_address(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            url = endpoint.url("/agent").replace(LOOPBACK, "agent.test")
            status, created = await api.call(
                "POST",
                "/api/agents",
                token=token,
                json={"name": "a", "role": "SCOUT", "endpoint_url": url},
            )
            assert status == 201, created  # agent.test answered 127.0.0.1 (allowed) first
            agent_id, agent.key = created["agent_id"], created["api_key"]
            # Now agent.test answers an internal address: the wizard and the history say so.
            status, wizard = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
        assert status == 200, wizard
        reasons = [check["reason"] for check in wizard["checks"] if not check["passed"]]
        assert reasons, wizard
        assert any(f"agent.test {WITHHELD}" in (reason or "") for reason in reasons)
        assert not exposed(wizard)
        status, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=token)
        assert status == 200
        assert any(f"agent.test {WITHHELD}" in (row.get("reason") or "") for row in history)
        assert not exposed(history)
        page = await api.session.get(f"{api.base}/agents/{agent_id}")
        assert not exposed(await page.text())


@pytest.mark.parametrize(
    ("reveal", "reason"),
    [
        (False, f"Endpoint refused by egress policy: db.internal {WITHHELD}"),
        (True, f"Endpoint refused by egress policy: {INTERNAL} is a private address"),
    ],
)
async def test_the_address_is_named_only_by_a_client_that_reveals_it(
    dns: ScriptedResolver, reveal: bool, reason: str
) -> None:
    """``palaestra check`` runs on the author's machine: its client names the address."""
    async with EgressClient(EgressPolicy(), resolver=dns, reveal_addresses=reveal) as client:
        result = await client.request(
            "GET", "https://db.internal/", user_agent=USER_AGENT, deadline=2.0
        )
    assert result.reason == reason
