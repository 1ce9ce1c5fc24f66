"""Registration and the wizard, through the real API, against agents on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from palaestra.platform import Platform
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

SIMULATION = ["reachable", "accepts-post", "returns-json", "required-fields", "timing"]
ALL_CHECKS = [
    "handshake",
    *(f"simulation:{c}" for c in SIMULATION),
    *(f"signed-simulation:{c}" for c in SIMULATION),
    "tampered-signature",
]


async def register(api: Api, token: str, url: str, role: str = "SCOUT") -> dict[str, Any]:
    status, body = await api.call(
        "POST",
        "/api/agents",
        token=token,
        json={"name": "agent", "role": role, "endpoint_url": url},
    )
    assert status == 201, body
    return body  # type: ignore[no-any-return]


def failed(checks: list[dict[str, Any]]) -> dict[str, str]:
    return {c["name"]: c["reason"] for c in checks if not c["passed"]}


@pytest.mark.parametrize("role", ["SCOUT", "BUILDER", "ANALYST"])
async def test_a_good_agent_passes_the_wizard_and_becomes_active(
    platform: Platform, role: str
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", role=role)
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/agent"), role)
            assert created["status"] == "PENDING"
            assert created["probe"] == {"passed": True, "reason": None}
            assert created["api_key"].startswith("ea_")
            assert agent.ledger.gets == ["EdgeArena-Ping/1.0"]
            agent.key = created["api_key"]

            status, result = await api.call(
                "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
            )
        assert status == 200, result
        assert [c["name"] for c in result["checks"]] == ALL_CHECKS
        assert failed(result["checks"]) == {}
        assert result["passed"] is True
        assert result["warnings"] == []
        assert result["status"] == "ACTIVE"
        forged = result["checks"][-1]
        assert (forged["reason"], forged["advisory"]) == ("rejects forged signatures", True)
        posts = [r for r in endpoint.received if r.method == "POST"]
        assert [r.headers["User-Agent"] for r in posts] == [
            "EdgeArena-Handshake/1.0",
            "EdgeArena-VerifyPayload/1.0",
            "EdgeArena-VerifyDispatch/1.0",
            "EdgeArena-Dispatch/1.0",
        ]
        # The forged request is a production dispatch: a fresh taskId in body and header.
        dispatch = agent.ledger.posts[-1]
        assert (
            dispatch["phase"] == {"SCOUT": "SCOUT", "BUILDER": "BUILD", "ANALYST": "VERIFY"}[role]
        )
        assert posts[-1].headers["x-edgearena-task-id"] == dispatch["taskId"]
        assert agent.ledger.signature_failures == 1  # the forged one, and only it

        status, history = await api.call(
            "GET", f"/api/agents/{created['agent_id']}/history", token=token
        )
        assert status == 200
        kinds = [(row["kind"], row["outcome"]) for row in history]
        assert ("status", "ACTIVE") in kinds
        assert sum(1 for kind, _ in kinds if kind == "wizard") == len(ALL_CHECKS)


ACCEPTS_FORGED = (
    "accepts forged signatures: a dispatch with a corrupted signature was answered 200, "
    "expected a 4xx"
)


async def test_an_agent_that_accepts_a_forged_signature_is_admitted_with_a_warning(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", check_signatures=False)
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            agent_id = created["agent_id"]
            status, result = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
            assert status == 200
            assert failed(result["checks"]) == {"tampered-signature": ACCEPTS_FORGED}
            assert [c["name"] for c in result["checks"] if c["advisory"]] == ["tampered-signature"]
            assert result["passed"] is True
            assert result["warnings"] == [ACCEPTS_FORGED]
            assert result["status"] == "ACTIVE"

            _, shown = await api.call("GET", f"/api/agents/{agent_id}", token=token)
            assert shown["warnings"] == [ACCEPTS_FORGED]
            _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=token)
            assert [row["reason"] for row in history if row["outcome"] == "warning"] == [
                ACCEPTS_FORGED
            ]

            # Once it verifies signatures, a new attempt clears the warning.
            agent.check_signatures = True
            agent.key = created["api_key"]
            _, again = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
            assert again["warnings"] == []
            _, shown = await api.call("GET", f"/api/agents/{agent_id}", token=token)
            assert shown["warnings"] == []


async def test_the_strict_rule_keeps_an_agent_that_accepts_forged_signatures_pending(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform.settings, "wizard_require_signature_check", True)
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", check_signatures=False)
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            status, result = await api.call(
                "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
            )
    assert status == 200
    assert failed(result["checks"]) == {"tampered-signature": ACCEPTS_FORGED}
    assert [c["name"] for c in result["checks"] if c["advisory"]] == []
    assert (result["passed"], result["warnings"], result["status"]) == (False, [], "PENDING")


async def test_an_agent_that_omits_a_required_field_fails_required_fields(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", omit="proposed_solution")
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            agent.key = created["api_key"]
            _, result = await api.call(
                "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
            )
    assert failed(result["checks"]) == {
        "simulation:required-fields": "Validation failed: Missing proposed_solution",
        "signed-simulation:required-fields": "Validation failed: Missing proposed_solution",
    }
    assert result["passed"] is False


async def test_an_agent_with_the_wrong_key_fails_the_signed_simulation(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="not-the-key")
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            _, result = await api.call(
                "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
            )
    reasons = failed(result["checks"])
    assert set(reasons) == {f"signed-simulation:{c}" for c in SIMULATION[1:4]}
    assert reasons["signed-simulation:accepts-post"].startswith(
        "External agent responded with 401: "
    )


async def test_an_agent_answering_get_with_405_registers_but_is_not_healthy(
    platform: Platform,
) -> None:
    """The probe treats any status below 500 as reachable; the health ping needs a 2xx."""
    from palaestra.engine.agents.health import HealthMonitor

    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", get_status=405)
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            agent.key = created["api_key"]
            _, result = await api.call(
                "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
            )
            assert result["passed"] is True
            platform.clock.advance(300)  # type: ignore[attr-defined]
            assert await HealthMonitor(platform).run_once() == 1
            _, history = await api.call(
                "GET", f"/api/agents/{created['agent_id']}/history", token=token
            )
    ping = next(row for row in history if row["kind"] == "ping")
    assert ping["outcome"] == "failure"
    assert ping["reason"] == "External agent responded with 405: Method Not Allowed"


async def test_registration_refuses_unreachable_and_forbidden_endpoints(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", failing=True)
        async with serve(agent) as endpoint:
            status, body = await api.call(
                "POST",
                "/api/agents",
                token=token,
                json={"name": "a", "role": "SCOUT", "endpoint_url": endpoint.url("/a")},
            )
        assert status == 400
        assert body == {
            "error": "Endpoint not reachable: External agent responded with 503: "
            '{"error": "upstream down"}',
            "code": "invalid-request",
        }
        status, body = await api.call(
            "POST",
            "/api/agents",
            token=token,
            json={"name": "a", "role": "SCOUT", "endpoint_url": "https://10.0.0.1/agent"},
        )
        assert status == 400
        assert body["error"] == ("Endpoint refused by egress policy: 10.0.0.1 is a private address")
        status, body = await api.call(
            "POST",
            "/api/agents",
            token=token,
            json={"name": "a", "role": "CRITIC", "endpoint_url": "https://example.com/"},
        )
        assert (status, body["code"]) == (400, "invalid-request")
        _, agents = await api.call("GET", "/api/agents", token=token)
        assert agents == []
