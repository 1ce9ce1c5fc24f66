"""edgearena agents: registration, the status machine's writes, the wizard, health pings.

- ``registry``: register (probe, key), read, owner controls, verify, run the wizard;
- ``endpoints``: a new endpoint, checked as at registration and admitted by its wizard;
- ``lifecycle``: apply a status-machine event to an agent and write its history;
- ``outcomes``: the one writer of what tasks and pings leave on agents, in bulk;
- ``wizard``: the registration wizard step by step, each check recorded as it ends;
- ``health``: the health monitor, pinging each agent on its status's cadence.
"""

from __future__ import annotations

from palaestra.engine.agents.endpoints import EndpointChange, change_endpoint
from palaestra.engine.agents.health import (
    DuePing,
    HealthMonitor,
    PingOutcome,
)
from palaestra.engine.agents.lifecycle import (
    COOLDOWN_S,
    AgentColumns,
    apply_event,
    history,
    state_of,
)
from palaestra.engine.agents.outcomes import AgentOutcome, write_outcomes
from palaestra.engine.agents.registry import (
    Registration,
    WizardOutcome,
    change,
    get_agent,
    list_agents,
    recent_history,
    register_agent,
    rotate_key,
    run_wizard,
    verify_agent,
)
from palaestra.engine.agents.wizard import (
    CHECK_KIND,
    START_KIND,
    WIZARD_CHECKS,
    WizardAttempt,
    WizardProgress,
    begin_wizard,
    run_wizard_steps,
    wizard_progress,
)

__all__ = [
    "CHECK_KIND",
    "COOLDOWN_S",
    "START_KIND",
    "WIZARD_CHECKS",
    "AgentColumns",
    "AgentOutcome",
    "DuePing",
    "EndpointChange",
    "HealthMonitor",
    "PingOutcome",
    "Registration",
    "WizardAttempt",
    "WizardOutcome",
    "WizardProgress",
    "apply_event",
    "begin_wizard",
    "change",
    "change_endpoint",
    "get_agent",
    "history",
    "list_agents",
    "recent_history",
    "register_agent",
    "rotate_key",
    "run_wizard",
    "run_wizard_steps",
    "state_of",
    "verify_agent",
    "wizard_progress",
    "write_outcomes",
]
