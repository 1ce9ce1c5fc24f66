"""Entrant adapters: one cage.v1 move from a harness, a model, or the house.

Every adapter turns one :class:`~palaestra.protocol.TurnRequest` into a
:class:`Move` and never raises for the entrant's misbehaviour. A failure that
is the entrant's (a harness timing out, a ``model`` entrant's provider
failing) is a failed turn; a failure that is the arena's own (its house model
failing, a key it cannot decrypt) is marked ``arena_fault`` and voids the
match instead of scoring it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from palaestra.egress import EgressClient
from palaestra.engine.cage.fighters import EntrantType
from palaestra.errors import EntrantMisconfigured
from palaestra.platform import Platform
from palaestra.protocol import TurnRequest, UserAgent, dumps, idempotency_key, turn_problem
from palaestra.protocol.constants import IDEMPOTENCY_HEADER
from palaestra.providers import ChatProvider, ProviderFailed
from palaestra.rules.cage_baseline import BASELINE_NAME, baseline_move
from palaestra.rules.cage_material import Material
from palaestra.rules.cage_payloads import SYSTEM_PROMPT
from palaestra.settings import Settings
from palaestra.store.models import Agent

__all__ = [
    "BaselineEntrant",
    "Entrant",
    "FighterFacts",
    "HarnessEntrant",
    "ModelEntrant",
    "Move",
    "entrant_for",
    "executor_of",
]


@dataclass(frozen=True, slots=True)
class Move:
    """One turn's outcome: the message, or why there is none."""

    message: str | None
    reason: str | None = None
    latency_ms: float | None = None
    arena_fault: bool = False

    @property
    def failed(self) -> bool:
        return self.message is None


class FighterFacts(Protocol):
    """What playing reads of a fighter: a stored ``Agent`` or the referee's ``Fighter``."""

    @property
    def id(self) -> str: ...
    @property
    def entrant_type(self) -> str | None: ...
    @property
    def endpoint_url(self) -> str | None: ...
    @property
    def provider(self) -> dict[str, Any] | None: ...
    @property
    def provider_key_sealed(self) -> str | None: ...


class Entrant(Protocol):
    async def move(self, request: TurnRequest) -> Move: ...


@dataclass(frozen=True, slots=True)
class HarnessEntrant:
    """An endpoint its owner runs: one POST per turn, with the turn's idempotency key."""

    egress: EgressClient
    url: str

    async def move(self, request: TurnRequest) -> Move:
        result = await self.egress.post_json(
            self.url,
            dumps(request.wire()),
            user_agent=UserAgent.CAGE,
            deadline=request.deadline_ms / 1000,
            headers={IDEMPOTENCY_HEADER: idempotency_key(request.match_id, request.turn)},
        )
        problem = result.reason if result.failure is not None else turn_problem(result.data)
        if problem is not None:
            return Move(None, problem, result.latency_ms)
        return Move(result.data["message"], None, result.latency_ms)


@dataclass(frozen=True, slots=True)
class ModelEntrant:
    """A chat model: the payload as the user message under the fixed system prompt.

    ``house`` marks the arena's own model, whose failures are the arena's.
    """

    provider: ChatProvider
    house: bool = False

    async def move(self, request: TurnRequest) -> Move:
        clock = self.provider.egress.clock
        started = clock.monotonic()
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": request.payload},
        ]
        try:
            completion = await self.provider.complete(messages, deadline=request.deadline_ms / 1000)
        except ProviderFailed as exc:
            latency = (clock.monotonic() - started) * 1000
            return Move(None, exc.message, latency, arena_fault=self.house)
        return Move(completion.content, None, (clock.monotonic() - started) * 1000)


@dataclass(frozen=True, slots=True)
class BaselineEntrant:
    """``house-baseline``: the built-in offline entrant."""

    material: Material

    async def move(self, request: TurnRequest) -> Move:
        return Move(baseline_move(self.material, request.turn), None, 0.0)


def _house_configured(settings: Settings) -> bool:
    return bool(settings.house_base_url and settings.house_model)


def executor_of(settings: Settings, fighter: Agent) -> str:
    """Who plays for ``fighter``: ``harness``, ``model:<name>``, ``house:<name>`` or baseline."""
    if fighter.entrant_type == EntrantType.HARNESS:
        return EntrantType.HARNESS.value
    if fighter.entrant_type == EntrantType.MODEL:
        return f"model:{(fighter.provider or {}).get('model', '?')}"
    if _house_configured(settings):
        return f"house:{settings.house_model}"
    return BASELINE_NAME


def entrant_for(platform: Platform, fighter: FighterFacts, material: Material) -> Entrant:
    """The adapter that plays for ``fighter``; :class:`EntrantMisconfigured` if its own
    configuration cannot play."""
    kind = fighter.entrant_type
    if kind == EntrantType.HARNESS:
        if fighter.endpoint_url is None:
            raise EntrantMisconfigured(f"fighter {fighter.id} has no proven endpoint")
        return HarnessEntrant(platform.egress, fighter.endpoint_url)
    if kind == EntrantType.MODEL:
        provider = fighter.provider or {}
        if fighter.provider_key_sealed is None or "base_url" not in provider:
            raise EntrantMisconfigured(f"fighter {fighter.id} has no model provider")
        key = platform.vault.open(fighter.provider_key_sealed)
        return ModelEntrant(
            ChatProvider(platform.egress, provider["base_url"], provider["model"], key)
        )
    if kind == EntrantType.HOUSE:
        settings = platform.settings
        if not _house_configured(settings):
            return BaselineEntrant(material)
        house_key = settings.house_api_key.get_secret_value() if settings.house_api_key else None
        house = ChatProvider(
            platform.egress, settings.house_base_url or "", settings.house_model or "", house_key
        )
        return ModelEntrant(house, house=True)
    raise EntrantMisconfigured(f"fighter {fighter.id} has an unknown entrant type {kind!r}")
