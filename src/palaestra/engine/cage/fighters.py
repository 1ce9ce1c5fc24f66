"""cage.v1 fighters: creation with a one-time claim code, and the endpoint's nonce challenge."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import update

from palaestra.engine.accounts import Caller
from palaestra.engine.agents.lifecycle import history
from palaestra.engine.agents.names import choice, ensure_unused, new_entrant, valid_name
from palaestra.errors import EgressRefused, Forbidden, InvalidClaimCode, InvalidRequest, NotFound
from palaestra.platform import Platform
from palaestra.protocol import ChallengeRequest, UserAgent, challenge_problem, dumps
from palaestra.protocol.constants import CHALLENGE_TIMEOUT_S, Arena
from palaestra.protocol.urls import require_url
from palaestra.providers.local import LOCAL_MODEL
from palaestra.rules.cage import EntrantType, accepts_friendlies_by_default
from palaestra.rules.status import Status
from palaestra.security import hash_token, new_token, token_matches
from palaestra.store.models import Agent

__all__ = [
    "ModelConfig",
    "NewFighter",
    "change_model",
    "claim_endpoint",
    "create_fighter",
    "get_fighter",
    "set_challenges",
]


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """A remote model, or ``model="local"`` (no URL, no key) for the local model."""

    base_url: str | None
    model: str
    api_key: str | None


@dataclass(frozen=True, slots=True)
class NewFighter:
    fighter: Agent
    claim_code: str


async def create_fighter(
    platform: Platform,
    caller: Caller,
    name: str,
    entrant_type: str,
    fighter_class: str,
    model: ModelConfig | None = None,
    *,
    rated_challenges: bool = False,
    friendly_challenges: bool | None = None,
) -> NewFighter:
    """A new fighter. Harnesses stay PENDING until their endpoint passes the nonce challenge.

    ``rated_challenges``, ``friendly_challenges``: other owners' rated, friendly matches
    it takes (:mod:`palaestra.rules.cage.challenges`; None: by what its turns spend)."""
    if caller.owner_id is None:
        raise Forbidden("fighters are created by an owner")
    name = valid_name(name)
    kind = choice(EntrantType, entrant_type, "entrant_type")
    if fighter_class not in platform.settings.fighter_classes:
        allowed = ", ".join(platform.settings.fighter_classes)
        raise InvalidRequest(f"class must be one of {allowed}")
    if (kind is EntrantType.MODEL) != (model is not None):
        raise InvalidRequest(
            "model (base_url, model, api_key; or model local alone) is required for, and only "
            "for, entrant type model"
        )
    provider, provider_key = _model_provider(platform, model)
    if friendly_challenges is None:
        friendly_challenges = accepts_friendlies_by_default(provider_key is not None)
    claim_code = new_token("claim")
    now = platform.clock.now()
    fighter = new_entrant(
        caller.owner_id,
        name,
        Arena.CAGE,
        now,
        entrant_type=kind.value,
        fighter_class=fighter_class,
        rated_challenges=rated_challenges,
        friendly_challenges=friendly_challenges,
        provider=provider,
        provider_key_sealed=provider_key,
        claim_code_hash=hash_token(claim_code),
        status=Status.PENDING if kind is EntrantType.HARNESS else Status.ACTIVE,
    )
    async with platform.db.session() as session, session.begin():
        await ensure_unused(session, caller.owner_id, Arena.CAGE, name)
        session.add(fighter)
    return NewFighter(fighter, claim_code)


def _model_provider(
    platform: Platform, model: ModelConfig | None
) -> tuple[dict[str, str] | None, str | None]:
    """The stored provider of a ``model`` entrant and its sealed key."""
    if model is None:
        return None, None
    if not model.model.strip():
        raise InvalidRequest("model.model must not be empty")
    if model.model == LOCAL_MODEL:
        if model.base_url or model.api_key:
            raise InvalidRequest("model local runs in the arena: give no base_url or api_key")
        return {"model": LOCAL_MODEL}, None
    if not model.base_url or not model.api_key:
        raise InvalidRequest("model.base_url and model.api_key are required for a remote model")
    base_url = require_url("model.base_url", model.base_url)
    try:
        platform.settings.egress_policy.target(base_url)
    except EgressRefused as exc:
        raise InvalidRequest(f"model.base_url is refused by the egress policy: {exc}") from None
    return {"base_url": base_url.rstrip("/"), "model": model.model}, platform.vault.seal(
        model.api_key
    )


async def change_model(
    platform: Platform, caller: Caller, fighter_id: str, model: ModelConfig
) -> Agent:
    """A model fighter's new model (its owner, or the admin), checked as at creation; the
    turns it plays from then on use it.

    The provider key may be left out only to keep the stored one for the same ``base_url``:
    a stored key is never sent to a host its owner did not give it for. A fighter that
    starts spending a key stops taking other owners' friendlies until its owner accepts."""
    async with platform.db.session() as session:
        fighter = _model_fighter(await session.get(Agent, fighter_id), caller, fighter_id)
    stored = fighter.provider or {}
    keep_key = (
        model.api_key is None
        and model.base_url is not None
        and fighter.provider_key_sealed is not None
        and model.base_url.strip().rstrip("/") == stored.get("base_url")
    )
    if keep_key:
        model = ModelConfig(
            model.base_url, model.model, platform.vault.open(fighter.provider_key_sealed or "")
        )
    provider, sealed = _model_provider(platform, model)
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        fighter = _model_fighter(await session.get(Agent, fighter_id), caller, fighter_id)
        if sealed is not None and fighter.provider_key_sealed is None:
            # From now on its turns spend its owner's key: other owners' friendlies stop
            # until the owner accepts them again (as a new fighter on a key starts).
            fighter.friendly_challenges = accepts_friendlies_by_default(True)
        fighter.provider = provider
        fighter.provider_key_sealed = sealed
        fighter.updated_at = now
        shown = {k: v for k, v in (provider or {}).items() if k in ("base_url", "model")}
        who = "admin" if caller.is_admin else "owner"
        session.add(history(fighter_id, now, "model", "changed", detail={**shown, "by": who}))
    return fighter


def _model_fighter(fighter: Agent | None, caller: Caller, fighter_id: str) -> Agent:
    if fighter is None or fighter.arena != Arena.CAGE:
        raise NotFound(f"Fighter {fighter_id} not found")
    if not (caller.is_admin or fighter.owner_id == caller.owner_id):
        raise Forbidden("only the fighter's owner (or the admin) changes its model")
    if fighter.entrant_type != EntrantType.MODEL:
        raise InvalidRequest("only a model fighter has a model to change")
    return fighter


async def get_fighter(platform: Platform, fighter_id: str) -> Agent:
    async with platform.db.session() as session:
        fighter = await session.get(Agent, fighter_id)
    if fighter is None or fighter.arena != Arena.CAGE:
        raise NotFound(f"Fighter {fighter_id} not found")
    return fighter


async def set_challenges(
    platform: Platform,
    caller: Caller,
    fighter_id: str,
    *,
    rated: bool | None = None,
    friendly: bool | None = None,
) -> Agent:
    """The owner's consent to other owners' rated challenges and friendly matches (None:
    unchanged), read by the next match started against it.

    A fighter's profile is public, so another caller is told it may not, not that it is
    missing; the consent is the owner's alone (the admin's matches need none)."""
    async with platform.db.session() as session, session.begin():
        fighter = await session.get(Agent, fighter_id)
        if fighter is None or fighter.arena != Arena.CAGE:
            raise NotFound(f"Fighter {fighter_id} not found")
        if caller.owner_id is None or fighter.owner_id != caller.owner_id:
            raise Forbidden("only the fighter's owner changes which challenges it accepts")
        changed = False
        if rated is not None and fighter.rated_challenges != rated:
            fighter.rated_challenges = rated
            changed = True
        if friendly is not None and fighter.friendly_challenges != friendly:
            fighter.friendly_challenges = friendly
            changed = True
        if changed:
            fighter.updated_at = platform.clock.now()
    return fighter


async def claim_endpoint(
    platform: Platform,
    fighter_id: str,
    claim_code: str,
    url: str,
    harness_name: str,
    sandbox_attested: bool,
) -> Agent:
    """The seed's registration: the endpoint must echo a fresh nonce before it gets any turn."""
    fighter = await get_fighter(platform, fighter_id)
    if fighter.claim_code_hash is None or not token_matches(claim_code, fighter.claim_code_hash):
        raise InvalidClaimCode("Invalid or already used claim code")
    if fighter.entrant_type != EntrantType.HARNESS:
        raise InvalidRequest("only harness fighters register an endpoint")
    url = require_url("url", url)
    nonce = secrets.token_hex(16)
    result = await platform.egress.post_json(
        url,
        dumps(ChallengeRequest(nonce=nonce).wire()),
        user_agent=UserAgent.CAGE,
        deadline=CHALLENGE_TIMEOUT_S,
    )
    reason = result.reason or challenge_problem(result.data, nonce)
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        if reason is None:
            # Consume the claim code with a conditional update: of two concurrent
            # claims with the same code, exactly one sees its row change.
            claimed = await session.execute(
                update(Agent)
                .where(Agent.id == fighter_id, Agent.claim_code_hash == fighter.claim_code_hash)
                .values(
                    endpoint_url=url,
                    harness_name=harness_name.strip()[:200] or None,
                    sandbox_attested=sandbox_attested,
                    claim_code_hash=None,
                    status=Status.ACTIVE,
                    updated_at=now,
                )
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                raise InvalidClaimCode("Invalid or already used claim code")
        session.add(
            history(
                fighter_id,
                now,
                "challenge",
                "failure" if reason else "success",
                latency_ms=result.latency_ms,
                reason=reason,
                detail={"url": url},
            )
        )
    if reason is not None:
        raise InvalidRequest(reason)
    return await get_fighter(platform, fighter_id)
