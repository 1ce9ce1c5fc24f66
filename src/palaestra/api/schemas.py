"""Request and response bodies of the HTTP API (they double as the OpenAPI schemas)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from palaestra.api.leaderboard_schemas import LiveRating
from palaestra.checks import CheckResult
from palaestra.engine.agents.reading import AgentRead, EventRead
from palaestra.engine.cage.reading import FighterRead
from palaestra.protocol.constants import Role
from palaestra.rules.cage import EntrantType
from palaestra.rules.ratings import FighterRatings, Rating, Record
from palaestra.rules.reasons import owner_reason
from palaestra.store.models import Agent, AgentEvent

__all__ = [
    "AgentChange",
    "AgentOut",
    "CheckOut",
    "EndpointChanged",
    "EventOut",
    "FighterChange",
    "FighterCreate",
    "FighterEndpoint",
    "FighterOut",
    "NewAgent",
    "NewOwner",
    "WizardOut",
]


class _In(BaseModel):
    # Strict: a JSON boolean is never taken for an integer, nor a number for a boolean.
    model_config = ConfigDict(extra="forbid", str_max_length=4000, strict=True)


class NewOwner(_In):
    name: str = Field(min_length=1, max_length=200)


class OwnerCreated(BaseModel):
    owner_id: str
    token: str


#: What the schema says of a URL; the server checks it whole (its host, and the egress
#: policy, which may refuse addresses the schema cannot know of) and answers 400.
_URL: JsonDict = {"format": "uri", "pattern": "^https?://"}


class NewAgent(_In):
    name: str = Field(min_length=1, max_length=200)
    role: str = Field(json_schema_extra={"enum": list(Role)})
    endpoint_url: str = Field(
        min_length=1,
        max_length=2000,
        json_schema_extra=_URL,
        validation_alias=AliasChoices("endpoint_url", "endpointUrl"),
        description="The URL the agent answers on; the seed's spelling `endpointUrl` "
        "is accepted in its place, but not both.",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        # Without this, the second spelling would be refused as an unknown key.
        if isinstance(data, dict) and "endpoint_url" in data and "endpointUrl" in data:
            raise PydanticCustomError(
                "endpoint_url_twice", "give endpoint_url or endpointUrl, not both"
            )
        return data


class CheckOut(BaseModel):
    name: str
    passed: bool
    reason: str | None = None
    latency_ms: float | None = None
    error_code: str | None = None
    advisory: bool = Field(
        default=False,
        description="The check tests what the protocol only recommends: its failure is a "
        "warning, not a refusal.",
    )

    @classmethod
    def of(cls, check: CheckResult) -> CheckOut:
        return cls(**check.as_dict())


class ProbeOut(BaseModel):
    passed: bool
    reason: str | None = None


class AgentOut(AgentRead):
    @classmethod
    def of(cls, agent: Agent) -> AgentOut:
        return cls.model_validate(agent)


class AgentCreated(BaseModel):
    agent_id: str
    api_key: str
    status: str
    probe: ProbeOut


class WizardOut(BaseModel):
    passed: bool = Field(description="Every binding check passed: the agent is admitted.")
    status: str
    checks: list[CheckOut]
    warnings: list[str] = Field(
        description="The reason line of every advisory check that did not pass."
    )


class AgentChange(_In):
    """A new endpoint for the agent. It is judged by the egress policy and probed as at
    registration; then the agent is PENDING (a paused agent stays paused) until the wizard
    passes on the new URL, which is run at once."""

    endpoint_url: str = Field(
        min_length=1,
        max_length=2000,
        json_schema_extra=_URL,
        description="The new URL the agent answers on (its key is unchanged).",
    )


class EndpointChanged(BaseModel):
    agent: AgentOut = Field(description="The agent after the wizard on its new endpoint.")
    changed: bool = Field(description="False when the URL was the one it had: nothing ran.")
    probe: ProbeOut | None = Field(
        default=None, description="The pre-registration probe of the new URL."
    )
    wizard: WizardOut | None = Field(
        default=None, description="The wizard run on the new URL; passing admits the agent."
    )


class KeyOut(BaseModel):
    api_key: str


class VerifyOut(BaseModel):
    status: str


class EventOut(EventRead):
    @classmethod
    def of(cls, row: AgentEvent) -> EventOut:
        # For the owner and the admin: redacted, capped.
        return cls.model_validate(row).model_copy(update={"reason": owner_reason(row.reason)})


class ModelIn(_In):
    """An OpenAI-compatible model (``base_url``, ``model``, ``api_key``), or ``model: local``
    alone for the arena's local model."""

    base_url: str | None = Field(default=None, min_length=1, max_length=2000)
    model: str = Field(min_length=1, max_length=200)
    api_key: str | None = Field(default=None, min_length=1, max_length=4000)


class FighterCreate(_In):
    name: str = Field(min_length=1, max_length=200)
    entrant_type: str = Field(json_schema_extra={"enum": list(EntrantType)})
    class_: str = Field(alias="class", description="One of the arena's fighter classes.")
    model: ModelIn | None = None
    rated_challenges: bool = Field(
        default=False,
        description="Let other owners start rated matches against this fighter (when the "
        "operator enables owner-rated matches, within the per-pair cap); by default their "
        "matches against it are friendlies.",
    )
    friendly_challenges: bool | None = Field(
        default=None,
        description="Let other owners start friendly matches against this fighter. Left "
        "out (or null): yes, unless it is a model fighter on a remote provider, whose "
        "turns spend its owner's provider key.",
    )


class FighterChange(_In):
    """The owner's controls on a fighter: which challenges from other owners it accepts,
    and a model fighter's model. At least one; one left out (or null) is unchanged."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    rated_challenges: bool | None = Field(
        default=None,
        description="Let other owners start rated matches against this fighter; the next "
        "match started reads it.",
    )
    friendly_challenges: bool | None = Field(
        default=None,
        description="Let other owners start friendly matches against this fighter; the "
        "next match started reads it.",
    )

    model: ModelIn | None = Field(
        default=None,
        description="A model fighter's new model, checked as at creation (its owner, or the "
        "admin). `api_key` may be left out to keep the stored key, for the same `base_url` "
        "only; the turns it plays from then on use it.",
    )

    @model_validator(mode="after")
    def _one_at_least(self) -> FighterChange:
        if not self.model_fields_set:
            raise PydanticCustomError(
                "missing_change",
                "give at least one of rated_challenges, friendly_challenges and model",
            )
        return self


class FighterCreated(BaseModel):
    fighter_id: str
    claim_code: str


class FighterEndpoint(_In):
    fighter_id: str
    claim_code: str
    url: str = Field(min_length=1, max_length=2000, json_schema_extra=_URL)
    harness_name: str = Field(default="", max_length=200)
    sandbox_attested: bool = False


class FighterOut(FighterRead):
    attack: LiveRating | None = None
    defence: LiveRating | None = None

    @classmethod
    def of(cls, fighter: Agent, ratings: FighterRatings | None = None) -> FighterOut:
        if ratings is None:
            ratings = FighterRatings()
        return cls.model_validate(fighter).model_copy(
            update={
                "attack": _rating_out(ratings.attack, ratings.attack_record),
                "defence": _rating_out(ratings.defence, ratings.defence_record),
            }
        )


def _rating_out(rating: Rating, record: Record) -> LiveRating:
    return LiveRating(
        mu=rating.mu,
        sigma=rating.sigma,
        conservative=rating.conservative,
        **asdict(record),
    )
