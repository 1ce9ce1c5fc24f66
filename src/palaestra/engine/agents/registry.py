"""edgearena agents: registration, the wizard, owner controls, verify and history."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.checks import CheckResult, admitted, warnings
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.endpoints import require_reachable, valid_endpoint
from palaestra.engine.agents.lifecycle import apply_event, history
from palaestra.engine.agents.names import choice, ensure_unused, new_entrant, valid_name
from palaestra.engine.agents.wizard import begin_wizard, run_wizard_steps
from palaestra.errors import (
    Forbidden,
    InvalidCredential,
    InvalidRequest,
    NotFound,
    Unauthorized,
)
from palaestra.platform import Platform
from palaestra.protocol import Role, UserAgent
from palaestra.protocol.constants import VERIFY_TIMEOUT_S, Arena
from palaestra.rules.status import Event, Status
from palaestra.security import new_token
from palaestra.store.events import agent_events, newest_first
from palaestra.store.models import Agent, AgentEvent
from palaestra.store.paging import Key, Page, keyset, keyset_serial, page_of, page_of_serial

__all__ = [
    "Registration",
    "WizardOutcome",
    "change",
    "get_agent",
    "list_agents",
    "recent_history",
    "register_agent",
    "rename",
    "rotate_key",
    "run_wizard",
    "verify_agent",
]


@dataclass(frozen=True, slots=True)
class Registration:
    agent: Agent
    api_key: str
    probe: CheckResult


@dataclass(frozen=True, slots=True)
class WizardOutcome:
    agent: Agent
    passed: bool  # admitted: every binding check passed
    checks: list[CheckResult]
    warnings: list[str]  # the advisory checks that did not pass


async def register_agent(
    platform: Platform, caller: Caller, name: str, role: str, endpoint_url: str
) -> Registration:
    """Probe the endpoint; if reachable, create a PENDING agent and issue its key (shown once)."""
    if caller.owner_id is None:
        raise Forbidden("agents are registered by an owner")
    name = valid_name(name)
    role_enum = choice(Role, role, "role")
    url = valid_endpoint(endpoint_url)
    async with platform.db.session() as session:
        await ensure_unused(session, caller.owner_id, Arena.EDGEARENA, name)
    result = await require_reachable(platform, url)
    now = platform.clock.now()
    key = new_token("ea")
    agent = new_entrant(
        caller.owner_id,
        name,
        Arena.EDGEARENA,
        now,
        role=role_enum,
        endpoint_url=url,
        key_sealed=platform.vault.seal(key),
        status=Status.PENDING,
    )
    async with platform.db.session() as session, session.begin():
        await ensure_unused(session, caller.owner_id, Arena.EDGEARENA, name)  # since the probe
        session.add(agent)
        await session.flush()
        session.add(history(agent.id, now, "probe", "success", latency_ms=result.latency_ms))
    return Registration(agent, key, result)


async def _owned(session: AsyncSession, caller: Caller, agent_id: str) -> Agent:
    agent = await session.get(Agent, agent_id)
    if agent is None or not (caller.is_admin or agent.owner_id == caller.owner_id):
        raise NotFound(f"Agent {agent_id} not found")
    return agent


async def get_agent(platform: Platform, caller: Caller, agent_id: str) -> Agent:
    async with platform.db.session() as session:
        return await _owned(session, caller, agent_id)


async def list_agents(
    platform: Platform,
    caller: Caller,
    arena: str | None = None,
    *,
    limit: int = 200,
    cursor: str | None = None,
) -> Page[Agent]:
    """A page of the caller's agents (the admin's: all), newest first."""
    query = keyset(select(Agent), Agent.created_at, Agent.id, cursor, limit)
    if not caller.is_admin:
        query = query.where(Agent.owner_id == caller.owner_id)
    if arena is not None:
        query = query.where(Agent.arena == arena)
    async with platform.db.session() as session:
        rows = (await session.scalars(query)).all()
    return page_of(rows, limit, lambda agent: Key(agent.created_at, agent.id))


async def recent_history(
    platform: Platform, caller: Caller, agent_id: str, limit: int = 200, cursor: str | None = None
) -> Page[AgentEvent]:
    """A page of the agent's history, newest first (one row more is read to know of a next)."""
    async with platform.db.session() as session:
        await _owned(session, caller, agent_id)
        mine = agent_events(agent_id).order_by(*newest_first())  # see store.events
        rows = (await session.scalars(keyset_serial(mine, AgentEvent.id, cursor, limit))).all()
    return page_of_serial(rows, limit, lambda event: event.id)


async def run_wizard(platform: Platform, caller: Caller, agent_id: str) -> WizardOutcome:
    """Run wizard steps 3-5; every check is recorded; a full pass admits a PENDING agent."""
    attempt = await begin_wizard(platform, caller, agent_id)
    checks = await run_wizard_steps(platform, attempt)
    agent = await get_agent(platform, caller, agent_id)
    return WizardOutcome(agent, admitted(checks), checks, warnings(checks))


_OWNER_EVENTS = {"pause": Event.PAUSE, "resume": Event.RESUME}
_ADMIN_EVENTS = {"hold": Event.HOLD, "release": Event.RELEASE}


async def change(platform: Platform, caller: Caller, agent_id: str, action: str) -> Agent:
    """Owner pause/resume, admin hold/release."""
    if action in _ADMIN_EVENTS:
        if not caller.is_admin:
            raise Forbidden("hold and release are admin actions")
        event = _ADMIN_EVENTS[action]
    elif action in _OWNER_EVENTS:
        event = _OWNER_EVENTS[action]
    else:  # pragma: no cover - routes only pass known actions
        raise InvalidRequest(f"unknown action {action}")
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        agent = await _owned(session, caller, agent_id)
        if event in _OWNER_EVENTS.values() and agent.owner_id != caller.owner_id:
            raise Forbidden("only the agent's owner pauses or resumes it")
        session.add_all(
            apply_event(
                agent,
                event,
                now,
                platform.schedule,
                cause=f"{action} by {'admin' if caller.is_admin else 'owner'}",
            )
        )
    return agent


async def rename(platform: Platform, caller: Caller, agent_id: str, name: str) -> Agent:
    """The owner's new name for its agent or fighter; a name another of its own (in the same
    arena) already has is refused, as at registration (:mod:`.names`)."""
    name = valid_name(name)
    async with platform.db.session() as session, session.begin():
        agent = await _owned(session, caller, agent_id)
        if agent.owner_id != caller.owner_id:
            raise Forbidden("only the agent's owner renames it")
        if name == agent.name:
            return agent
        if name.lower() != agent.name.lower():  # a change of letter case alone is its own name
            await ensure_unused(session, agent.owner_id, Arena(agent.arena), name)
        agent.name = name
        agent.updated_at = platform.clock.now()
    return agent


async def rotate_key(platform: Platform, caller: Caller, agent_id: str) -> str:
    """Issue a new key (shown once); the old one stops working at once."""
    key = new_token("ea")
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        agent = await _owned(session, caller, agent_id)
        if agent.owner_id != caller.owner_id:
            raise Forbidden("only the agent's owner rotates its key")
        agent.key_sealed = platform.vault.seal(key)
        agent.updated_at = now
        session.add(history(agent_id, now, "key", "rotated"))
    return key


async def verify_agent(platform: Platform, agent_id: str, agent_key: str | None) -> Agent:
    """The seed's verify: authenticated by the agent's key, a 2xx ``EdgeArena-Verify/1.0`` GET
    brings the agent back to ACTIVE (an admin hold stays); any other answer is a failure
    on its status machine, as a failed health ping is."""
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    if agent is None or agent.key_sealed is None:
        raise NotFound(f"Agent {agent_id} not found")
    expected = platform.vault.open(agent.key_sealed)
    if not agent_key:
        raise Unauthorized("Invalid or missing X-Agent-Key header")
    if not hmac.compare_digest(expected.encode(), agent_key.encode()):
        raise InvalidCredential("Invalid or missing X-Agent-Key header")
    if agent.endpoint_url is None:
        raise InvalidRequest("the agent has no endpoint")
    result = await platform.egress.get(
        agent.endpoint_url, user_agent=UserAgent.VERIFY, deadline=VERIFY_TIMEOUT_S
    )
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        stored = await session.get(Agent, agent_id)
        if stored is None:
            raise NotFound(f"Agent {agent_id} not found")
        session.add(
            history(
                agent_id,
                now,
                "verify",
                "success" if result.ok else "failure",
                latency_ms=result.latency_ms,
                reason=result.reason,
            )
        )
        # The seed lists verify among the liveness calls: a failed one counts toward the
        # consecutive failures (and may demote the agent) as a failed health ping does.
        session.add_all(
            apply_event(
                stored,
                Event.VERIFIED if result.ok else Event.FAILURE,
                now,
                platform.schedule,
                cause="verified by owner" if result.ok else "verify failed",
            )
        )
    if not result.ok:
        raise InvalidRequest(f"Verify failed: {result.reason}")
    return stored
