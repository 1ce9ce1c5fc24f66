"""An agent's configuration: environment variables prefixed ``PALAESTRA_AGENT_``."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DEFAULT_MAX_BODY_BYTES", "AgentSettings"]

DEFAULT_MAX_BODY_BYTES = 1 << 20


class AgentSettings(BaseSettings):
    """What an agent built with :class:`palaestra.harness.Agent` reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="PALAESTRA_AGENT_", extra="ignore")

    key: SecretStr | None = Field(
        default=None,
        description="The agent's API key, issued at registration; it verifies signed requests.",
    )
    public_url: str | None = Field(
        default=None,
        description="The URL the agent was registered under, when a proxy sits in front of it: "
        "signatures cover that URL's host and path, not the ones the agent sees.",
    )
    model_id: str = Field(
        default="",
        description="The modelId reported in dispatch replies when a handler does not say.",
    )
    max_body_bytes: int = Field(
        default=DEFAULT_MAX_BODY_BYTES,
        ge=1,
        description="Requests with a larger body are refused with 413.",
    )
    replay_cache_size: int = Field(
        default=10_000,
        ge=1,
        description="How many answers the default store keeps for repeated taskIds and "
        "idempotency keys.",
    )
