"""A fighter as it is read: the model behind the fighters API and a fighter's page.

The API adds its live ratings (:class:`palaestra.api.schemas.FighterOut`); the page shows
it beside the fighter's row as the agents' pages show every agent.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["FighterRead"]


def _is_set(url: Any) -> bool:
    """Whether the row has an endpoint URL; a model's own dump says so already."""
    return url if isinstance(url, bool) else url is not None


class FighterRead(BaseModel):
    """A fighter as the API and its page show it, read from its row
    (``FighterRead.model_validate(fighter)``): whether it has an endpoint, never the URL,
    its model or its claim code. The API names its class ``class``."""

    model_config = ConfigDict(from_attributes=True, frozen=True)

    fighter_id: str = Field(validation_alias=AliasChoices("fighter_id", "id"))
    name: str
    entrant_type: str | None
    fighter_class: str | None = Field(serialization_alias="class")
    status: str
    harness_name: str | None
    sandbox_attested: bool
    # Read from the row's endpoint_url: only whether there is one.
    has_endpoint: Annotated[bool, BeforeValidator(_is_set)] = Field(
        validation_alias=AliasChoices("endpoint_url", "has_endpoint")
    )
    rated_challenges: bool = Field(
        description="Other owners may start rated matches against it (see POST /api/matches)"
    )
    friendly_challenges: bool = Field(
        description="Other owners may start friendly matches against it (see POST /api/matches)"
    )
