"""cage.v1 fighters."""

from __future__ import annotations

from fastapi import APIRouter, Request

from palaestra.api.contract import errors
from palaestra.api.schemas import (
    FighterChange,
    FighterCreate,
    FighterCreated,
    FighterEndpoint,
    FighterOut,
)
from palaestra.engine.cage import fighters as service
from palaestra.engine.ratings.live import live_ratings
from palaestra.http.deps import AnyCaller, PlatformDep, guarded
from palaestra.platform import Platform
from palaestra.store.models import Agent

router = APIRouter(prefix="/api", tags=["fighters"])


@router.post(
    "/fighters", status_code=201, response_model=FighterCreated, responses=errors(400, 403, 409)
)
async def create(body: FighterCreate, platform: PlatformDep, caller: AnyCaller) -> FighterCreated:
    """Create a fighter; the one-time claim code registers a harness endpoint."""
    model = None
    if body.model is not None:
        model = service.ModelConfig(body.model.base_url, body.model.model, body.model.api_key)
    created = await service.create_fighter(
        platform,
        caller,
        body.name,
        body.entrant_type,
        body.class_,
        model,
        rated_challenges=body.rated_challenges,
        friendly_challenges=body.friendly_challenges,
    )
    return FighterCreated(fighter_id=created.fighter.id, claim_code=created.claim_code)


@router.post("/fighters/endpoint", response_model=FighterOut, responses=errors(400, 403, 404, 429))
async def endpoint(body: FighterEndpoint, request: Request, platform: PlatformDep) -> FighterOut:
    """Seed: register a harness URL; accepted only once it echoes the nonce challenge."""
    async with guarded(request, target=f"fighter:{body.fighter_id}"):
        fighter = await service.claim_endpoint(
            platform,
            body.fighter_id,
            body.claim_code,
            body.url,
            body.harness_name,
            body.sandbox_attested,
        )
    return FighterOut.of(fighter)


@router.get("/fighters/{fighter_id}", response_model=FighterOut, response_model_by_alias=True)
async def profile(fighter_id: str, platform: PlatformDep) -> FighterOut:
    """A fighter's public profile and its live attack and defence ratings."""
    return await _with_ratings(platform, await service.get_fighter(platform, fighter_id))


@router.patch(
    "/fighters/{fighter_id}",
    response_model=FighterOut,
    response_model_by_alias=True,
    responses=errors(400, 403, 404),
)
async def change(
    fighter_id: str, body: FighterChange, platform: PlatformDep, caller: AnyCaller
) -> FighterOut:
    """Owner: accept rated challenges or friendly matches from other owners, or stop; the
    next match started against the fighter reads it. Owner or admin: a model fighter's new
    model (`model`), checked as at creation; a `base_url` the egress policy refuses is
    answered 400 with the reason."""
    fighter = None
    if body.model is not None:
        model = service.ModelConfig(body.model.base_url, body.model.model, body.model.api_key)
        fighter = await service.change_model(platform, caller, fighter_id, model)
    if body.rated_challenges is not None or body.friendly_challenges is not None:
        fighter = await service.set_challenges(
            platform,
            caller,
            fighter_id,
            rated=body.rated_challenges,
            friendly=body.friendly_challenges,
        )
    if fighter is None:  # every field given was null: nothing to change
        fighter = await service.get_fighter(platform, fighter_id)
    return await _with_ratings(platform, fighter)


async def _with_ratings(platform: Platform, fighter: Agent) -> FighterOut:
    ratings = (await live_ratings(platform, [fighter.id])).get(fighter.id)
    return FighterOut.of(fighter, ratings)
