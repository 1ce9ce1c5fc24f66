"""An agent and its history as they are read: the models behind the agents API and the
agents' pages.

Each projects :class:`AgentRead` and :class:`EventRead` and adds what it alone shows (the
pages: the endpoint's host rather than its URL; both: reasons as their reader may read
them).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["AgentRead", "EventRead"]


def _listed(value: Any) -> Any:
    """A stored list that may be NULL: empty then."""
    return [] if value is None else value


class AgentRead(BaseModel):
    """An agent as the API and the pages show it, read from its row
    (``AgentRead.model_validate(agent)``): never its key. The API names its id
    ``agent_id``."""

    model_config = ConfigDict(from_attributes=True, frozen=True)

    id: str = Field(serialization_alias="agent_id")
    name: str
    arena: str
    role: str | None
    endpoint_url: str | None
    status: str
    consecutive_failures: int
    cooldown_until: float | None
    last_heartbeat: float | None
    hold: bool
    warnings: Annotated[list[str], BeforeValidator(_listed)] = Field(
        default_factory=list,
        validation_alias=AliasChoices("warnings", "wizard_warnings"),
        description="Advisory findings of the agent's last wizard, e.g. that it accepts "
        "forged signatures.",
    )


class EventRead(BaseModel):
    """A row of an agent's history as the API and the pages show it, read from its row
    (``EventRead.model_validate(event)``); each says whose ``reason`` it shows."""

    model_config = ConfigDict(from_attributes=True, frozen=True)

    at: float
    kind: str
    outcome: str
    latency_ms: float | None
    reason: str | None
    detail: dict[str, Any] | None
