"""Entrant adapters: one cage.v1 move from a harness, a model, or the house.

Every adapter turns one :class:`~palaestra.protocol.TurnRequest` into a
:class:`Move` and never raises for the entrant's misbehaviour. A failure that
is the entrant's (a harness timing out, a ``model`` entrant's provider
failing) is a failed turn; a failure that is the arena's own (its house model
failing, a key it cannot decrypt) is marked ``arena_fault`` and voids the
match instead of scoring it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from palaestra.clock import Clock
from palaestra.egress import EgressClient
from palaestra.errors import EntrantMisconfigured
from palaestra.platform import Platform
from palaestra.protocol import (
    Side,
    TurnRequest,
    UserAgent,
    dumps,
    idempotency_key,
    turn_message,
    turn_problem,
    turn_warning,
)
from palaestra.protocol.constants import IDEMPOTENCY_HEADER
from palaestra.providers import ChatProvider, Completion, ProviderFailed
from palaestra.providers.local import (
    LOCAL_MODEL,
    Lane,
    LocalChat,
    LocalModel,
    LocalModelFile,
    find_local_model,
    shared_local_model,
)
from palaestra.rules.cage import EntrantType
from palaestra.rules.cage.baseline import BASELINE_NAME, baseline_move
from palaestra.rules.cage.house import DEFENDER_GRAMMAR, HOUSE_SYSTEM_PROMPTS, attacker_grammar
from palaestra.rules.cage.material import Material
from palaestra.rules.cage.payloads import SYSTEM_PROMPT
from palaestra.rules.producers import Producer
from palaestra.settings import Settings
from palaestra.store.models import Agent

__all__ = [
    "BaselineEntrant",
    "ChatModel",
    "Entrant",
    "FighterSetup",
    "HarnessEntrant",
    "ModelEntrant",
    "Move",
    "SidedEntrant",
    "entrant_for",
    "executor_of",
    "house_plays_baseline",
    "local_house_entrant",
]


@dataclass(frozen=True, slots=True)
class Move:
    """One turn's outcome: the message, or why there is none."""

    message: str | None
    reason: str | None = None
    latency_ms: float | None = None
    arena_fault: bool = False
    #: Who wrote the message (or failed to): the entrant, the house model or the baseline.
    producer: Producer | None = None
    model_id: str | None = None  # the model's id, when a model wrote it

    @property
    def failed(self) -> bool:
        return self.message is None


class FighterSetup(Protocol):
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
            return Move(None, problem, result.latency_ms, producer=Producer.AGENT)
        # A message the seed accepts but our rule does not (not a string) is kept with a note.
        warning = turn_warning(result.data)
        note = None if warning is None else f"warning: {warning}"
        return Move(turn_message(result.data), note, result.latency_ms, producer=Producer.AGENT)


class ChatModel(Protocol):
    """A model that answers a conversation: a remote provider or the local model."""

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, deadline: float
    ) -> Completion: ...


@dataclass(frozen=True, slots=True)
class ModelEntrant:
    """A chat model: the payload as the user message under a system prompt.

    A ``model`` entrant plays under the fixed, minimal prompt; the house under its own
    defence and attack prompts (``system_prompts``). ``house`` marks the arena's own
    model, whose failures are the arena's.
    """

    provider: ChatModel
    clock: Clock
    house: bool = False
    system_prompts: Mapping[Side, str] | None = None

    async def move(self, request: TurnRequest) -> Move:
        started = self.clock.monotonic()
        prompts = self.system_prompts or {}
        messages = [
            {"role": "system", "content": prompts.get(request.side, SYSTEM_PROMPT)},
            {"role": "user", "content": request.payload},
        ]
        producer = Producer.HOUSE_MODEL if self.house else Producer.AGENT
        try:
            completion = await self.provider.complete(messages, deadline=request.deadline_ms / 1000)
        except ProviderFailed as exc:
            latency = (self.clock.monotonic() - started) * 1000
            return Move(None, exc.message, latency, arena_fault=self.house, producer=producer)
        latency = (self.clock.monotonic() - started) * 1000
        return Move(completion.content, None, latency, producer=producer, model_id=completion.model)


@dataclass(frozen=True, slots=True)
class BaselineEntrant:
    """``house-baseline``: the built-in offline entrant."""

    material: Material

    async def move(self, request: TurnRequest) -> Move:
        move = baseline_move(self.material, request.turn)
        return Move(move, None, 0.0, producer=Producer.HOUSE_BASELINE)


@dataclass(frozen=True, slots=True)
class SidedEntrant:
    """One entrant for each side: the local house, whose moves differ in grammar by side."""

    sides: Mapping[Side, Entrant]

    async def move(self, request: TurnRequest) -> Move:
        return await self.sides[request.side].move(request)


def _house_configured(settings: Settings) -> bool:
    return bool(settings.house_base_url and settings.house_model)


def _local(settings: Settings) -> LocalModelFile:
    if not settings.local_model_enabled:
        return LocalModelFile(None, "", "the local model is turned off")
    return find_local_model(settings.local_model_path)


def house_plays_baseline(settings: Settings) -> bool:
    """Whether a ``house`` fighter is played by the canned baseline here: no house model is
    set up and no local model is there to play."""
    return not _house_configured(settings) and _local(settings).path is None


def executor_of(settings: Settings, fighter: Agent) -> str:
    """Who plays for ``fighter``: ``harness``, ``model:<name>``, ``house:<name>`` or baseline."""
    if fighter.entrant_type == EntrantType.HARNESS:
        return EntrantType.HARNESS.value
    if fighter.entrant_type == EntrantType.MODEL:
        model = (fighter.provider or {}).get("model", "?")
        if model == LOCAL_MODEL:
            return f"model:{_local(settings).model_id or LOCAL_MODEL}"
        return f"model:{model}"
    if _house_configured(settings):
        return f"house:{settings.house_model}"
    if (local := _local(settings)).path is not None:
        return f"house:{local.model_id}"
    return BASELINE_NAME


def _local_model_entrant(platform: Platform, fighter: FighterSetup) -> ModelEntrant:
    local = _local(platform.settings)
    if local.path is None:
        raise EntrantMisconfigured(f"fighter {fighter.id} plays the local model: {local.problem}")
    return ModelEntrant(LocalChat(shared_local_model(local.path, Lane.CAGE)), platform.clock)


def entrant_for(platform: Platform, fighter: FighterSetup, material: Material) -> Entrant:
    """The adapter that plays for ``fighter``; :class:`EntrantMisconfigured` if its own
    configuration cannot play."""
    kind = fighter.entrant_type
    if kind == EntrantType.HARNESS:
        if fighter.endpoint_url is None:
            raise EntrantMisconfigured(f"fighter {fighter.id} has no proven endpoint")
        return HarnessEntrant(platform.egress, fighter.endpoint_url)
    if kind == EntrantType.MODEL:
        provider = fighter.provider or {}
        if provider.get("model") == LOCAL_MODEL:
            return _local_model_entrant(platform, fighter)
        if fighter.provider_key_sealed is None or "base_url" not in provider:
            raise EntrantMisconfigured(f"fighter {fighter.id} has no model provider")
        key = platform.vault.open(fighter.provider_key_sealed)
        return ModelEntrant(
            ChatProvider(platform.egress, provider["base_url"], provider["model"], key),
            platform.clock,
        )
    if kind == EntrantType.HOUSE:
        return _house_entrant(platform, material)
    raise EntrantMisconfigured(f"fighter {fighter.id} has an unknown entrant type {kind!r}")


def _house_entrant(platform: Platform, material: Material) -> Entrant:
    """The operator's house model, else the local model under the house prompts and
    grammars, else the baseline."""
    settings = platform.settings
    if _house_configured(settings):
        key = settings.house_api_key.get_secret_value() if settings.house_api_key else None
        house = ChatProvider(
            platform.egress, settings.house_base_url or "", settings.house_model or "", key
        )
        return ModelEntrant(house, platform.clock, house=True)
    local = _local(settings)
    if local.path is None:
        return BaselineEntrant(material)
    return local_house_entrant(shared_local_model(local.path, Lane.CAGE), material, platform.clock)


def local_house_entrant(model: LocalModel, material: Material, clock: Clock) -> Entrant:
    """The house played by the local ``model`` in a match with ``material``: each side under
    its short prompt and its grammar."""
    grammars = {
        Side.ATTACKER: attacker_grammar(material.hijack_phrase),
        Side.DEFENDER: DEFENDER_GRAMMAR,
    }
    return SidedEntrant(
        {
            side: ModelEntrant(
                LocalChat(model, grammar=grammar),
                clock,
                house=True,
                system_prompts=HOUSE_SYSTEM_PROMPTS,
            )
            for side, grammar in grammars.items()
        }
    )
