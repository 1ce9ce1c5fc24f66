"""The registration wizard run step by step: every check recorded as it ends, on both stores."""

from __future__ import annotations

import pytest

from palaestra.checks import run_wizard
from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.wizard import (
    WIZARD_CHECKS,
    begin_wizard,
    run_wizard_steps,
    wizard_progress,
)
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.store.models import Agent
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio


async def owner_of(platform: Platform, agent_id: str) -> Caller:
    async with platform.db.session() as session:
        stored = await session.get(Agent, agent_id)
        assert stored is not None
        return Caller(owner_id=stored.owner_id)


async def register(api: Api, token: str, url: str) -> dict[str, str]:
    status, created = await api.call(
        "POST",
        "/api/agents",
        token=token,
        json={"name": "a", "role": "SCOUT", "endpoint_url": url},
    )
    assert status == 201, created
    return created  # type: ignore[no-any-return]


async def test_the_api_wizard_is_recorded_as_an_attempt(platform: Platform) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", check_signatures=False)
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            agent.key = created["api_key"]
            await api.call("POST", f"/api/agents/{created['agent_id']}/wizard", token=token)
    progress = await wizard_progress(platform, created["agent_id"])
    assert progress is not None
    assert [c.name for c in progress.checks] == list(WIZARD_CHECKS)
    assert progress.finished
    assert progress.passed  # admitted: the forged-signature check is advisory
    assert not progress.interrupted
    assert [c.name for c in progress.checks if not c.passed] == ["tampered-signature"]
    assert [c.name for c in progress.checks if c.advisory] == ["tampered-signature"]
    assert progress.warnings == [
        "accepts forged signatures: a dispatch with a corrupted signature was answered 200, "
        "expected a 4xx"
    ]


async def test_an_attempt_that_goes_quiet_is_interrupted(
    platform: Platform, clock: FrozenClock
) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
    caller = await owner_of(platform, created["agent_id"])
    attempt = await begin_wizard(platform, caller, created["agent_id"])
    progress = await wizard_progress(platform, created["agent_id"], attempt.attempt_id)
    assert progress is not None
    assert progress.running
    assert progress.checks == ()
    clock.advance(30 + 4 + 15 + 1)  # the SCOUT simulation's deadline, its grace and the slack
    progress = await wizard_progress(platform, created["agent_id"], attempt.attempt_id)
    assert progress is not None
    assert progress.interrupted
    assert not progress.running
    assert await wizard_progress(platform, created["agent_id"], "no-such-attempt") is None


async def test_steps_are_the_shared_wizard_in_the_same_order(platform: Platform) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            agent.key = created["api_key"]
            caller = await owner_of(platform, created["agent_id"])
            attempt = await begin_wizard(platform, caller, created["agent_id"])
            stepped = await run_wizard_steps(platform, attempt)
            at_once = await run_wizard(
                platform.egress, attempt.url, Role.SCOUT, key=agent.key, clock=platform.clock
            )
    assert [c.name for c in stepped] == [c.name for c in at_once] == list(WIZARD_CHECKS)
    assert all(c.passed for c in stepped)


async def test_only_the_owner_opens_an_attempt(platform: Platform) -> None:
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
    from palaestra.errors import Forbidden, NotFound

    with pytest.raises(NotFound):
        await begin_wizard(platform, Caller(owner_id="someone-else"), created["agent_id"])
    with pytest.raises(Forbidden):
        await begin_wizard(platform, Caller(owner_id=None, is_admin=True), created["agent_id"])
    assert await wizard_progress(platform, created["agent_id"]) is None
