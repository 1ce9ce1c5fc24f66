"""A new endpoint for an edgearena agent: checked as at registration, then admitted again.

The new URL is judged by the egress policy first (a refused one is told at once, in the
reason's own words), then probed as at registration (``EdgeArena-Ping/1.0``, any status
below 500). Once it answers, the agent takes the URL and goes back to PENDING (a paused
agent stays paused and resumes PENDING): nothing is sent to a URL that passed no wizard.
A wizard attempt on the new URL opens in the same transaction; the caller runs its steps
(:func:`palaestra.engine.agents.wizard.run_wizard_steps`), and a pass admits the agent
again. The agent's key is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from palaestra.checks import CheckResult, probe
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.lifecycle import apply_event, history
from palaestra.engine.agents.wizard import WizardAttempt, open_attempt
from palaestra.errors import EgressRefused, InvalidRequest, NotFound
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.protocol.failures import CallFailure
from palaestra.protocol.urls import require_url
from palaestra.rules.status import Event
from palaestra.store.models import Agent

__all__ = ["EndpointChange", "change_endpoint", "checked_endpoint", "valid_endpoint"]

#: The prefix of the reason the platform records for a URL its egress policy refuses.
REFUSED = "Endpoint refused by egress policy"


@dataclass(frozen=True, slots=True)
class EndpointChange:
    """The agent with its new endpoint, the probe that let it in, and the wizard attempt
    opened on it (None when the URL was the one it had: nothing changed)."""

    agent: Agent
    probe: CheckResult | None
    attempt: WizardAttempt | None


def valid_endpoint(url: str) -> str:
    """``url`` in the shape an agent's endpoint takes (trimmed), or :class:`InvalidRequest`."""
    url = url.strip()
    if not url.startswith(("https://", "http://")):
        raise InvalidRequest("endpoint_url must be an https:// URL")
    if len(url) > 2000:
        raise InvalidRequest("endpoint_url is longer than 2000 characters")
    return require_url("endpoint_url", url)


def checked_endpoint(platform: Platform, endpoint_url: str) -> str:
    """``endpoint_url`` as an agent's endpoint, judged by the egress policy; else
    :class:`InvalidRequest` with the reason (``Endpoint refused by egress policy: ...``)."""
    url = valid_endpoint(endpoint_url)
    try:
        platform.settings.egress_policy.target(url)
    except EgressRefused as exc:
        raise InvalidRequest(f"{REFUSED}: {exc.message}") from None
    return url


async def require_reachable(platform: Platform, url: str) -> CheckResult:
    """Probe ``url`` as at registration and return the passed probe; an invalid request, in
    the protocol's words, when its name resolved to an address the egress policy refuses or
    nothing answered."""
    result = await probe(platform.egress, url)
    if not result.passed:
        reason = result.reason or "no answer"
        if CallFailure.of(reason) is CallFailure.EGRESS_REFUSED:
            raise InvalidRequest(reason)  # "Endpoint refused by egress policy: <why>"
        raise InvalidRequest(f"Endpoint not reachable: {reason}")
    return result


async def change_endpoint(
    platform: Platform, caller: Caller, agent_id: str, endpoint_url: str
) -> EndpointChange:
    """Give the agent ``endpoint_url`` (its owner, or the admin), as the module says."""
    url = checked_endpoint(platform, endpoint_url)
    async with platform.db.session() as session:
        agent = await _editable(await session.get(Agent, agent_id), caller, agent_id)
    if agent.endpoint_url == url:
        return EndpointChange(agent, None, None)
    result = await require_reachable(platform, url)
    now = platform.clock.now()
    who = "admin" if caller.is_admin else "owner"
    async with platform.db.session() as session, session.begin():
        agent = await _editable(await session.get(Agent, agent_id), caller, agent_id)
        agent.endpoint_url = url
        agent.wizard_warnings = None  # the old endpoint's findings
        agent.cooldown_until = None
        session.add(
            history(
                agent.id,
                now,
                "probe",
                "success",
                latency_ms=result.latency_ms,
                detail={"endpoint": "changed", "by": who},
            )
        )
        session.add_all(
            apply_event(
                agent,
                Event.ENDPOINT_CHANGED,
                now,
                platform.schedule,
                cause=f"new endpoint by {who}",
            )
        )
        attempt = open_attempt(platform, session, agent)
    return EndpointChange(agent, result, attempt)


async def _editable(agent: Agent | None, caller: Caller, agent_id: str) -> Agent:
    if agent is None or not (caller.is_admin or agent.owner_id == caller.owner_id):
        raise NotFound(f"Agent {agent_id} not found")
    if agent.arena != Arena.EDGEARENA:
        raise InvalidRequest(
            "a fighter's endpoint is registered with its claim code (POST /api/fighters/endpoint)"
        )
    return agent
