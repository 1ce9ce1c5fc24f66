"""Liveness GETs through every caller, against endpoints whose 2xx bodies are hostile.

The seed says of the liveness GET "Response body Ignored": the status decides.
A 200 whose body is ten megabytes, never ends, drips slower than the deadline,
or is not the gzip it claims to be is a pass for the conformance health check,
the health monitor's ping and the owner's verify alike, and none of them waits
for the body; nor does the wizard's probe.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import pytest

from palaestra.checks.edgearena import health
from palaestra.checks.wizard import probe
from palaestra.clock import FrozenClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.engine.agents.health import HealthMonitor
from palaestra.engine.agents.registry import verify_agent
from palaestra.platform import Platform
from tests.integration.run_support import add_agent, add_owner, agent_row
from tests.integration.servers import Handler, Stream, endless, reply, serve

pytestmark = pytest.mark.asyncio

KEY = "ea_liveness-key"
TEN_MB = 10 * 1024 * 1024
#: Well under every liveness deadline (4 s and 5 s): the call returned on the status line.
QUICK_S = 1.5


def slow_drip() -> Stream:
    """A 200 whose body takes a minute to arrive, past every liveness deadline."""
    return Stream(1200, chunk=1, interval=0.05)


HOSTILE: dict[str, Callable[[], Handler]] = {
    "ten-mb": lambda: Stream(TEN_MB),
    "endless": endless,
    "slow-drip": slow_drip,
    "garbage-gzip": lambda: reply(b"\x1f\x8b garbage", headers={"Content-Encoding": "gzip"}),
}


@pytest.fixture(params=list(HOSTILE), ids=list(HOSTILE))
def hostile(request: pytest.FixtureRequest) -> Handler:
    return HOSTILE[request.param]()


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


async def test_the_probe_does_not_wait_for_the_body(egress: EgressClient) -> None:
    # Any status below 500 passed the probe already; what it must not do is sit
    # through a body that takes longer than its deadline to arrive.
    async with serve(slow_drip()) as endpoint:
        started = time.monotonic()
        result = await probe(egress, endpoint.url())
        elapsed = time.monotonic() - started
    assert (result.passed, result.reason) == (True, None)
    assert elapsed < QUICK_S


async def test_the_health_check_passes(egress: EgressClient, hostile: Handler) -> None:
    async with serve(hostile) as endpoint:
        started = time.monotonic()
        result = await health(egress, endpoint.url())
        elapsed = time.monotonic() - started
    assert (result.passed, result.reason) == (True, None)
    assert elapsed < QUICK_S


async def test_the_health_monitor_counts_a_success(
    platform: Platform, clock: FrozenClock, hostile: Handler
) -> None:
    owner = await add_owner(platform)
    async with serve(hostile) as endpoint:
        agent_id = await add_agent(
            platform,
            owner,
            "pinged",
            "SCOUT",
            endpoint.url(),
            KEY,
            status="DEGRADED",
            consecutive_failures=3,
            next_ping_at=clock.now(),
        )
        started = time.monotonic()
        assert await HealthMonitor(platform).run_once() == 1
        elapsed = time.monotonic() - started
    agent = await agent_row(platform, agent_id)
    assert (agent.status, agent.consecutive_failures) == ("ACTIVE", 0)
    assert elapsed < QUICK_S
    assert endpoint.received[0].headers["User-Agent"] == "EdgeArena-Health/1.0"


async def test_verify_brings_the_agent_back(platform: Platform, hostile: Handler) -> None:
    owner = await add_owner(platform)
    async with serve(hostile) as endpoint:
        agent_id = await add_agent(
            platform, owner, "verified", "SCOUT", endpoint.url(), KEY, status="SUSPENDED"
        )
        started = time.monotonic()
        agent = await verify_agent(platform, agent_id, KEY)
        elapsed = time.monotonic() - started
    assert agent.status == "ACTIVE"
    assert elapsed < QUICK_S
    assert endpoint.received[0].headers["User-Agent"] == "EdgeArena-Verify/1.0"
