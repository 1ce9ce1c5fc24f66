"""The registration wizard run step by step: every check recorded as it ends, on both stores."""

from __future__ import annotations

import pytest

from palaestra.checks import CheckResult, run_wizard
from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.wizard import (
    WIZARD_CHECKS,
    WizardProgress,
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


async def test_a_steps_own_warning_does_not_end_the_attempt_early(platform: Platform) -> None:
    """A simulation reply past the production cap passes with a simulation:size warning of
    its own; the attempt still runs every planned check, and the agent is admitted."""
    async with running(platform) as api:
        token = await api.owner()
        agent = EdgeAgent(key="", simulation_pad=300_000)
        async with serve(agent) as endpoint:
            created = await register(api, token, endpoint.url("/a"))
            agent.key = created["api_key"]
            status, result = await api.call(
                "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
            )
    assert status == 200, result
    assert result["passed"] is True
    progress = await wizard_progress(platform, created["agent_id"])
    assert progress is not None
    assert progress.finished
    assert progress.passed
    names = [c.name for c in progress.checks]
    assert set(WIZARD_CHECKS) <= set(names)
    assert {"simulation:size", "signed-simulation:size"} <= set(names)
    assert names[-1] == "tampered-signature"  # the last step ran: nothing ended it early
    assert any(w.startswith("the reply is ") for w in progress.warnings)
    _, agent_row = await api_agent(platform, created["agent_id"])
    assert agent_row == "ACTIVE"


async def test_an_attempt_with_extra_checks_is_finished_only_when_every_planned_one_is() -> None:
    """Counted by name: a step's own advisory checks do not stand in for a planned one."""
    extra = [CheckResult(f"{p}:size", False, "big", advisory=True) for p in ("simulation", "x")]
    planned = [CheckResult(name, True) for name in WIZARD_CHECKS]
    missing_last = WizardProgress("a", 0.0, (*planned[:-1], *extra))
    assert len(missing_last.checks) >= len(WIZARD_CHECKS)
    assert not missing_last.finished
    assert missing_last.waiting == ("tampered-signature",)
    assert WizardProgress("a", 0.0, (*planned, *extra)).finished


async def api_agent(platform: Platform, agent_id: str) -> tuple[str, str]:
    async with platform.db.session() as session:
        stored = await session.get(Agent, agent_id)
        assert stored is not None
        return stored.id, stored.status


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
