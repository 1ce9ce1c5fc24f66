"""The health monitor through real pings, with time advanced by a controllable clock."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import func, select

from palaestra.clock import FrozenClock
from palaestra.engine.agents.health import HealthMonitor
from palaestra.platform import Platform
from palaestra.store.models import AgentEvent
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

CADENCE = {"ACTIVE": 300, "DEGRADED": 60, "PROBATION": 60, "SUSPENDED": 300}


async def admit(api: Api, token: str, agent: EdgeAgent, url: str) -> tuple[str, str]:
    status, created = await api.call(
        "POST",
        "/api/agents",
        token=token,
        json={"name": "pinged", "role": agent.role, "endpoint_url": url},
    )
    assert status == 201, created
    agent.key = created["api_key"]
    _, result = await api.call("POST", f"/api/agents/{created['agent_id']}/wizard", token=token)
    assert result["passed"] is True, result
    return created["agent_id"], created["api_key"]


async def state(api: Api, token: str, agent_id: str) -> tuple[str, int]:
    status, body = await api.call("GET", f"/api/agents/{agent_id}", token=token)
    assert status == 200
    return body["status"], body["consecutive_failures"]


async def tick(platform: Platform, clock: FrozenClock, status: str) -> int:
    clock.advance(CADENCE[status])
    return await HealthMonitor(platform).run_once()


async def test_failing_agent_walks_down_to_suspended_and_verify_brings_it_back(
    platform: Platform, clock: FrozenClock
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            agent_id, key = await admit(api, token, agent, endpoint.url("/agent"))
            assert await state(api, token, agent_id) == ("ACTIVE", 0)
            assert await HealthMonitor(platform).run_once() == 0  # nothing due yet

            agent.failing = True
            walk = []
            current = "ACTIVE"
            for _ in range(9):
                assert await tick(platform, clock, current) == 1
                current, failures = await state(api, token, agent_id)
                walk.append((current, failures))
            assert walk == [
                ("ACTIVE", 1),
                ("ACTIVE", 2),
                ("DEGRADED", 3),
                ("DEGRADED", 4),
                ("DEGRADED", 5),
                ("PROBATION", 6),
                ("PROBATION", 7),
                ("PROBATION", 8),
                ("SUSPENDED", 9),
            ]

            pings_before = len([r for r in endpoint.received if r.method == "GET"])
            for _ in range(3):
                assert await tick(platform, clock, "SUSPENDED") == 0
            assert len([r for r in endpoint.received if r.method == "GET"]) == pings_before

            agent.failing = False
            status, body = await api.call(
                "POST", f"/api/agents/{agent_id}/verify", headers={"X-Agent-Key": key}
            )
            assert (status, body) == (200, {"status": "ACTIVE"})
            assert endpoint.received[-1].headers["User-Agent"] == "EdgeArena-Verify/1.0"
            assert await state(api, token, agent_id) == ("ACTIVE", 0)
            assert await tick(platform, clock, "ACTIVE") == 1  # pinged again

        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=token)
    changes = [row["outcome"] for row in reversed(history) if row["kind"] == "status"]
    assert changes == ["ACTIVE", "DEGRADED", "PROBATION", "SUSPENDED", "ACTIVE"]
    pings = [row for row in history if row["kind"] == "ping"]
    assert len(pings) == 10
    assert all(
        row["reason"] == 'External agent responded with 503: {"error": "upstream down"}'
        for row in pings[1:]
    )
    health = [r.headers["User-Agent"] for r in endpoint.received if r.method == "GET"]
    assert set(health[1:]) == {"EdgeArena-Health/1.0", "EdgeArena-Verify/1.0"}


async def test_a_failed_verify_counts_toward_the_consecutive_failures(
    platform: Platform, clock: FrozenClock
) -> None:
    """The seed lists verify among the liveness calls: outside 2xx, it is a failure like a
    failed health ping, and three in a row demote an ACTIVE agent."""
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            agent_id, key = await admit(api, token, agent, endpoint.url("/agent"))
            agent.get_status = 405  # only POST handled: the seed's common failure
            answers: list[tuple[Any, Any]] = []
            for _ in range(3):
                status, body = await api.call(
                    "POST", f"/api/agents/{agent_id}/verify", headers={"X-Agent-Key": key}
                )
                answers.append((status, body["code"]))
                answers.append(await state(api, token, agent_id))
            assert answers == [
                (400, "invalid-request"),
                ("ACTIVE", 1),
                (400, "invalid-request"),
                ("ACTIVE", 2),
                (400, "invalid-request"),
                ("DEGRADED", 3),
            ]
            agent.get_status = 200
            status, body = await api.call(
                "POST", f"/api/agents/{agent_id}/verify", headers={"X-Agent-Key": key}
            )
            assert (status, body) == (200, {"status": "ACTIVE"})
            assert await state(api, token, agent_id) == ("ACTIVE", 0)
        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=token)
    verifies = [row["outcome"] for row in reversed(history) if row["kind"] == "verify"]
    assert verifies == ["failure", "failure", "failure", "success"]
    changes = [row["outcome"] for row in reversed(history) if row["kind"] == "status"]
    assert changes == ["ACTIVE", "DEGRADED", "ACTIVE"]


async def test_one_success_promotes_one_step(platform: Platform, clock: FrozenClock) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            agent_id, _ = await admit(api, token, agent, endpoint.url("/a"))
            agent.failing = True
            current = "ACTIVE"
            for _ in range(6):
                await tick(platform, clock, current)
                current, _failures = await state(api, token, agent_id)
            assert current == "PROBATION"
            agent.failing = False
            await tick(platform, clock, "PROBATION")
            assert await state(api, token, agent_id) == ("DEGRADED", 0)
            await tick(platform, clock, "DEGRADED")
            assert await state(api, token, agent_id) == ("ACTIVE", 0)
            await tick(platform, clock, "ACTIVE")
            assert await state(api, token, agent_id) == ("ACTIVE", 0)


async def test_paused_and_held_agents_are_not_pinged(
    platform: Platform, clock: FrozenClock
) -> None:
    from tests.integration.platform_fixtures import ADMIN_TOKEN

    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            agent_id, _ = await admit(api, token, agent, endpoint.url("/a"))
            await api.call("POST", f"/api/agents/{agent_id}/pause", token=token)
            assert await tick(platform, clock, "ACTIVE") == 0
            _, body = await api.call("POST", f"/api/agents/{agent_id}/resume", token=token)
            assert body["status"] == "ACTIVE"
            assert await tick(platform, clock, "ACTIVE") == 1
            await api.call("POST", f"/api/agents/{agent_id}/hold", token=ADMIN_TOKEN)
            assert await tick(platform, clock, "ACTIVE") == 0
            await api.call("POST", f"/api/agents/{agent_id}/release", token=ADMIN_TOKEN)
            assert await tick(platform, clock, "ACTIVE") == 1
            gets = [r.headers["User-Agent"] for r in endpoint.received if r.method == "GET"]
    assert gets == ["EdgeArena-Ping/1.0", "EdgeArena-Health/1.0", "EdgeArena-Health/1.0"]


async def test_pending_agents_are_not_pinged(platform: Platform, clock: FrozenClock) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            await api.call(
                "POST",
                "/api/agents",
                token=token,
                json={"name": "p", "role": "SCOUT", "endpoint_url": endpoint.url("/a")},
            )
            assert await tick(platform, clock, "ACTIVE") == 0


async def test_a_crash_between_claim_and_record_loses_only_that_ping(
    platform: Platform, clock: FrozenClock
) -> None:
    """Claimed but unrecorded pings are due again next period; nothing else is lost."""
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            agent_id, _ = await admit(api, token, agent, endpoint.url("/a"))
            clock.advance(300)
            monitor = HealthMonitor(platform)
            claimed = await monitor.claim(10)
            assert [c.agent_id for c in claimed] == [agent_id]
            assert await monitor.claim(10) == []  # claimed once per period
            # ... the process dies here; a fresh monitor sees nothing due until next period
            assert await HealthMonitor(platform).run_once() == 0
            clock.advance(300)
            assert await HealthMonitor(platform).run_once() == 1
    async with platform.db.session() as session:
        pings = await session.scalar(
            select(func.count()).select_from(AgentEvent).where(AgentEvent.kind == "ping")
        )
    assert pings == 1


async def test_a_round_longer_than_the_period_pings_each_agent_once(
    platform: Platform, clock: FrozenClock
) -> None:
    """``run_once`` drains what was due when it began: an agent due again before its ping
    is recorded (a round that outlasts the period, on a slow machine) waits for the next
    round, so that a drain pings each agent once and always ends."""
    agent = EdgeAgent(key="")
    slow = 0  # pings left that outlast the agent's period

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        nonlocal slow
        if slow and request.method == "GET":
            slow -= 1
            clock.advance(CADENCE["ACTIVE"] + 1)
        return await agent(request)

    async with running(platform) as api:
        token = await api.owner()
        async with serve(handler) as endpoint:
            await admit(api, token, agent, endpoint.url("/a"))
            clock.advance(CADENCE["ACTIVE"])
            slow = 3  # a drain that claimed the agent again would ping it four times
            assert await HealthMonitor(platform).run_once() == 1
            assert await HealthMonitor(platform).run_once() == 1  # due again by now
