"""Owners and edgearena agents."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request

from palaestra.api.contract import errors
from palaestra.api.paging import PAGED, KeysetCursorQuery, PagerDep, SerialCursorQuery
from palaestra.api.schemas import (
    AgentChange,
    AgentCreated,
    AgentOut,
    CheckOut,
    EndpointChanged,
    EventOut,
    KeyOut,
    NewAgent,
    NewOwner,
    OwnerCreated,
    ProbeOut,
    VerifyOut,
    WizardOut,
)
from palaestra.checks import admitted, warnings
from palaestra.engine.accounts import create_owner
from palaestra.engine.agents import registry as service
from palaestra.engine.agents.endpoints import change_endpoint
from palaestra.engine.agents.wizard import run_wizard_steps
from palaestra.http.deps import AdminCaller, AnyCaller, PlatformDep, guarded

router = APIRouter(prefix="/api")


@router.post(
    "/owners",
    status_code=201,
    response_model=OwnerCreated,
    tags=["owners"],
    responses=errors(403),
)
async def new_owner(body: NewOwner, platform: PlatformDep, _admin: AdminCaller) -> OwnerCreated:
    """Create an owner; its token is shown once."""
    owner, token = await create_owner(platform, body.name)
    return OwnerCreated(owner_id=owner.id, token=token)


@router.post(
    "/agents",
    status_code=201,
    response_model=AgentCreated,
    tags=["agents"],
    responses=errors(403, 409),
)
async def register(body: NewAgent, platform: PlatformDep, caller: AnyCaller) -> AgentCreated:
    """Probe the endpoint and register a PENDING agent; its API key is shown once."""
    done = await service.register_agent(platform, caller, body.name, body.role, body.endpoint_url)
    return AgentCreated(
        agent_id=done.agent.id,
        api_key=done.api_key,
        status=done.agent.status,
        probe=ProbeOut(passed=done.probe.passed, reason=done.probe.reason),
    )


@router.get("/agents", response_model=list[AgentOut], tags=["agents"], responses=PAGED)
async def agents(
    pager: PagerDep,
    platform: PlatformDep,
    caller: AnyCaller,
    arena: Annotated[str | None, Query(pattern="^(edgearena|cage)$")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    cursor: KeysetCursorQuery = None,
) -> list[AgentOut]:
    """The caller's agents (the admin's: all), newest first, a page at a time."""
    page = await service.list_agents(platform, caller, arena, limit=limit, cursor=cursor)
    return pager.rows(page, limit, AgentOut.of)


@router.get("/agents/{agent_id}", response_model=AgentOut, tags=["agents"])
async def agent(agent_id: str, platform: PlatformDep, caller: AnyCaller) -> AgentOut:
    """The agent's status, failures, cooldown and hold (its owner, or the admin)."""
    return AgentOut.of(await service.get_agent(platform, caller, agent_id))


@router.patch(
    "/agents/{agent_id}",
    response_model=EndpointChanged,
    tags=["agents"],
    responses=errors(400, 404),
)
async def change(
    agent_id: str, body: AgentChange, platform: PlatformDep, caller: AnyCaller
) -> EndpointChanged:
    """Owner or admin: give the agent a new endpoint. A URL the egress policy refuses is
    answered 400 with the reason (`Endpoint refused by egress policy: ...`), as is one the
    registration probe cannot reach. Otherwise the agent takes it and is PENDING (a paused
    agent stays paused): nothing is sent to it until the wizard, run here on the new URL,
    passes. The same URL again changes nothing."""
    done = await change_endpoint(platform, caller, agent_id, body.endpoint_url)
    if done.attempt is None:
        return EndpointChanged(agent=AgentOut.of(done.agent), changed=False)
    checks = await run_wizard_steps(platform, done.attempt)
    agent = await service.get_agent(platform, caller, agent_id)
    probe = done.probe
    return EndpointChanged(
        agent=AgentOut.of(agent),
        changed=True,
        probe=None if probe is None else ProbeOut(passed=probe.passed, reason=probe.reason),
        wizard=WizardOut(
            passed=admitted(checks),
            status=agent.status,
            checks=[CheckOut.of(c) for c in checks],
            warnings=warnings(checks),
        ),
    )


@router.get(
    "/agents/{agent_id}/history", response_model=list[EventOut], tags=["agents"], responses=PAGED
)
async def agent_history(
    agent_id: str,
    platform: PlatformDep,
    caller: AnyCaller,
    pager: PagerDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    cursor: SerialCursorQuery = None,
) -> list[EventOut]:
    """Recent pings, wizard checks, dispatches and status changes, newest first, paged."""
    page = await service.recent_history(platform, caller, agent_id, limit, cursor)
    return pager.rows(page, limit, EventOut.of)


@router.post(
    "/agents/{agent_id}/wizard",
    response_model=WizardOut,
    tags=["agents"],
    responses=errors(400, 403),
)
async def run_wizard(agent_id: str, platform: PlatformDep, caller: AnyCaller) -> WizardOut:
    """Run the registration wizard: the handshake and the unsigned and signed simulations
    decide admission; the forged-signature dispatch is advisory (a warning)."""
    outcome = await service.run_wizard(platform, caller, agent_id)
    return WizardOut(
        passed=outcome.passed,
        status=outcome.agent.status,
        checks=[CheckOut.of(c) for c in outcome.checks],
        warnings=outcome.warnings,
    )


def _action(action: str, summary: str) -> None:
    async def act(agent_id: str, platform: PlatformDep, caller: AnyCaller) -> AgentOut:
        return AgentOut.of(await service.change(platform, caller, agent_id, action))

    act.__doc__ = summary
    router.add_api_route(
        f"/agents/{{agent_id}}/{action}",
        act,
        methods=["POST"],
        response_model=AgentOut,
        tags=["agents"],
        name=action,
        responses=errors(400, 403),
    )


_action("pause", "Owner: stop pings and dispatches until resumed.")
_action("resume", "Owner: return to the status held before the pause.")
_action("hold", "Admin: hold the agent; nothing reaches it until released.")
_action("release", "Admin: release a hold.")


@router.post(
    "/agents/{agent_id}/rotate-key",
    response_model=KeyOut,
    tags=["agents"],
    responses=errors(403),
)
async def rotate(agent_id: str, platform: PlatformDep, caller: AnyCaller) -> KeyOut:
    """Issue a new API key (shown once); the old one stops working."""
    return KeyOut(api_key=await service.rotate_key(platform, caller, agent_id))


@router.post(
    "/agents/{agent_id}/verify",
    response_model=VerifyOut,
    tags=["agents"],
    responses=errors(400, 401, 429),
)
async def verify(
    agent_id: str,
    request: Request,
    platform: PlatformDep,
    x_agent_key: Annotated[str | None, Header()] = None,
) -> VerifyOut:
    """Seed: the agent asks to be checked again; a 2xx reachability check reactivates it."""
    async with guarded(request, target=f"agent:{agent_id}"):
        agent = await service.verify_agent(platform, agent_id, x_agent_key)
    return VerifyOut(status=agent.status)
