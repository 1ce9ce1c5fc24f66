"""Owners' tokens: rotated (a new one, shown once) and revoked."""

from __future__ import annotations

from fastapi import APIRouter

from palaestra.api.contract import errors
from palaestra.api.owner_schemas import OwnerTokenIssued, OwnerTokenRevoked
from palaestra.engine import accounts
from palaestra.http.deps import AnyCaller, PlatformDep

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["owners"])


@router.post(
    "/owners/{owner_id}/rotate-token",
    response_model=OwnerTokenIssued,
    responses=errors(403),
    summary="Rotate an owner's token",
    description="Issue the owner a new bearer token, shown in this answer only; the old "
    "one (or none, if it was revoked) stops working at once on this server, and on every "
    "other API process within `PALAESTRA_OWNER_TOKEN_CACHE_S`. The admin rotates any "
    "owner's token, an owner its own (403 for another's).",
)
async def rotate_owner_token(
    owner_id: str, platform: PlatformDep, caller: AnyCaller
) -> OwnerTokenIssued:
    issued = await accounts.rotate_owner_token(platform, caller, owner_id)
    return OwnerTokenIssued(
        owner_id=issued.owner_id, token=issued.token, rotated_at=issued.rotated_at
    )


@router.post(
    "/owners/{owner_id}/revoke-token",
    response_model=OwnerTokenRevoked,
    responses=errors(403),
    summary="Revoke an owner's token",
    description="The owner's token stops working at once on this server, and on every "
    "other API process within `PALAESTRA_OWNER_TOKEN_CACHE_S`; no token opens the owner "
    "until the admin rotates it (which issues a new one). Its agents, fighters, runs and "
    "matches are left as they are. The admin revokes any owner's token, an owner its own "
    "(403 for another's); revoking twice changes nothing.",
)
async def revoke_owner_token(
    owner_id: str, platform: PlatformDep, caller: AnyCaller
) -> OwnerTokenRevoked:
    revoked = await accounts.revoke_owner_token(platform, caller, owner_id)
    return OwnerTokenRevoked(owner_id=revoked.owner_id, revoked_at=revoked.revoked_at)
