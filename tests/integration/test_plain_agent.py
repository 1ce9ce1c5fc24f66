"""An agent written for Edge Arena without the SDK is admitted, serves a run and passes the checker.

``examples/plain_scout.py`` is what third-party agents look like: it verifies
signatures on production dispatches only, answers 401 and 409 as the docs
suggest, and does not check the timestamp window.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from examples.plain_scout import create_app

from palaestra.checks import CheckVerdict, admitted, run_checks
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.protocol.constants import Arena
from palaestra.settings import Settings
from tests.integration.platform_fixtures import Api, running
from tests.integration.test_run_end_to_end import wait_for_report

pytestmark = pytest.mark.asyncio

ACCEPTS_FORGED = (
    "accepts forged signatures: a dispatch with a corrupted signature was answered 200, "
    "expected a 4xx"
)
STALE = "a timestamp 360s old was answered 200, expected a 4xx"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"dispatch_deadline_scale": 1 / 30})


class Plain:
    """The plain scout on 127.0.0.1, with the key it learns at registration."""

    def __init__(self) -> None:
        self.key = ""
        self.url = ""


@asynccontextmanager
async def plain_scout(*, verify_signatures: bool = True) -> AsyncIterator[Plain]:
    agent = Plain()
    app = create_app(lambda: agent.key, verify_signatures=verify_signatures)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    agent.url = f"http://127.0.0.1:{runner.addresses[0][1]}/edge/agent"
    try:
        yield agent
    finally:
        await runner.cleanup()


async def register(api: Api, token: str, agent: Plain) -> tuple[str, dict[str, Any]]:
    """Registered with the seed's own field name, then through the wizard."""
    status, created = await api.call(
        "POST",
        "/api/agents",
        token=token,
        json={"name": "plain-scout", "role": "SCOUT", "endpointUrl": agent.url},
    )
    assert status == 201, created
    agent.key = created["api_key"]
    status, wizard = await api.call(
        "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
    )
    assert status == 200, wizard
    return created["agent_id"], wizard


async def test_it_is_admitted_and_serves_a_whole_run(platform: Platform) -> None:
    async with running(platform) as api, plain_scout() as agent:
        token = await api.owner()
        agent_id, wizard = await register(api, token, agent)
        assert (wizard["passed"], wizard["status"], wizard["warnings"]) == (True, "ACTIVE", [])
        forged = next(c for c in wizard["checks"] if c["name"] == "tampered-signature")
        assert (forged["passed"], forged["reason"]) == (True, "rejects forged signatures")

        status, started = await api.call(
            "POST",
            "/api/runs",
            token=token,
            json={"goal": "Find a business for a solo developer", "launchpad": "make-money"},
        )
        assert status == 202, started
        run = await wait_for_report(api, token, started["run_id"])
    assert run["status"] == "COMPLETED", run
    mine = [task for task in run["tasks"] if task["agent_id"] == agent_id]
    assert mine, run["tasks"]
    assert {(task["phase"], task["status"]) for task in mine} == {("SCOUT", "SUCCEEDED")}
    assert run["report"]["ranking"], run["report"]


async def test_it_passes_the_checker_with_one_warning(platform: Platform) -> None:
    async with plain_scout() as agent:
        agent.key = "ea_plain-key"
        results = await run_checks(
            platform.egress,
            agent.url,
            Arena.EDGEARENA,
            clock=platform.clock,
            role=Role.SCOUT,
            key=agent.key,
        )
    assert [(r.name, r.reason) for r in results if r.verdict is not CheckVerdict.PASS] == [
        ("stale-timestamp", STALE)
    ]
    assert [r.verdict for r in results].count(CheckVerdict.WARN) == 1
    assert admitted(results)


async def test_without_verification_it_is_admitted_with_the_warning(platform: Platform) -> None:
    async with running(platform) as api, plain_scout(verify_signatures=False) as agent:
        token = await api.owner()
        agent_id, wizard = await register(api, token, agent)
        assert (wizard["passed"], wizard["status"]) == (True, "ACTIVE")
        assert wizard["warnings"] == [ACCEPTS_FORGED]
        status, shown = await api.call("GET", f"/api/agents/{agent_id}", token=token)
        assert (status, shown["warnings"]) == (200, [ACCEPTS_FORGED])
        results = await run_checks(
            platform.egress,
            agent.url,
            Arena.EDGEARENA,
            clock=platform.clock,
            role=Role.SCOUT,
            key=agent.key,
        )
    assert {r.name: r.reason for r in results if not r.passed} == {
        "tampered-signature": ACCEPTS_FORGED,
        "stale-timestamp": STALE,
    }
    assert admitted(results)
