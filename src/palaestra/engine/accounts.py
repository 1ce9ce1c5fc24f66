"""Owners, the admin and their tokens.

An owner's token is remembered by its hash once seen (:class:`~palaestra.security.OwnerTokens`),
so that its requests authenticate without a query, for a few seconds
(``owner_token_cache_s``). The admin's token is checked against the store on every
request, since another process may set a new one (at its start). Whatever changes
which owner or admin a token stands for (setting the admin token, rotating or revoking
an owner's) is written first and then forgets the owners remembered, so that the old
token is refused at once in this process, and within ``owner_token_cache_s`` in any other.
The same transaction ends the browser sessions the old token opened
(:mod:`~palaestra.engine.web_sessions`), everywhere at once.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from functools import partial

import structlog
from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.errors import (
    Forbidden,
    InvalidCredential,
    InvalidRequest,
    NotFound,
    Unauthorized,
)
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.security import hash_token, new_token
from palaestra.store.models import Meta, Owner, WebSession

__all__ = [
    "Caller",
    "IssuedToken",
    "RevokedToken",
    "authenticate",
    "bootstrap_admin",
    "create_owner",
    "revoke_owner_token",
    "rotate_owner_token",
]

log = structlog.get_logger(__name__)

_ADMIN_KEY = "admin_token_hash"
#: The admin token's hash, and the owner whose token hashes to ``hash``.
_CALLER = select(
    select(Meta.value).where(Meta.key == _ADMIN_KEY).scalar_subquery(),
    select(Owner.id)
    .where(Owner.token_hash == bindparam("hash"), Owner.token_revoked_at.is_(None))
    .scalar_subquery(),
)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: the admin, or one owner."""

    owner_id: str | None
    is_admin: bool = False


async def bootstrap_admin(platform: Platform) -> str | None:
    """Make sure an admin token exists; return it if it was generated now (to print once)."""
    try:
        return await _bootstrap_admin(platform)
    finally:
        platform.owner_tokens.forget()  # a token remembered for an owner may now be the admin's


async def _bootstrap_admin(platform: Platform) -> str | None:
    configured = platform.settings.admin_token
    async with platform.db.session() as session, session.begin():
        row = await session.get(Meta, _ADMIN_KEY)
        if configured is not None:
            wanted = hash_token(configured.get_secret_value())
            if row is None:
                session.add(Meta(key=_ADMIN_KEY, value=wanted))
            elif not hmac.compare_digest(row.value, wanted):
                row.value = wanted
                # Browsers signed in with the old admin token are signed out.
                await session.execute(delete(WebSession).where(WebSession.owner_id.is_(None)))
            return None
        if row is not None:
            return None
        token = new_token("pa_admin")
        session.add(Meta(key=_ADMIN_KEY, value=hash_token(token)))
        return token


async def authenticate(platform: Platform, token: str | None) -> Caller:
    """Resolve a bearer token to a caller, or raise :class:`Unauthorized`."""
    if not token:
        raise Unauthorized("Missing bearer token")
    hashed = hash_token(token)
    tokens = platform.owner_tokens
    owner_id = tokens.owner(hashed, platform.clock.monotonic())
    if owner_id is not None:
        return Caller(owner_id=owner_id)
    generation = tokens.generation
    admin, owner_id = await tokens.looked_up(hashed, partial(_admin_and_owner, platform, hashed))
    if admin is not None and hmac.compare_digest(hashed, admin):
        return Caller(owner_id=None, is_admin=True)
    if owner_id is None:
        raise InvalidCredential("Invalid bearer token")
    tokens.remember(hashed, owner_id, platform.clock.monotonic(), generation)
    return Caller(owner_id=owner_id)


async def _admin_and_owner(platform: Platform, hashed: str) -> tuple[str | None, str | None]:
    """The admin token's hash, and the owner of the token hashed ``hashed`` (one Core query
    for both: every API request not remembered comes through here)."""
    async with platform.db.read() as connection:
        result = await connection.execute(_CALLER, {"hash": hashed})
        admin, owner_id = result.one()
    return admin, owner_id


async def create_owner(platform: Platform, name: str) -> tuple[Owner, str]:
    """A new owner and its token (returned once; only the hash is stored)."""
    name = name.strip()
    if not name:
        raise InvalidRequest("name must not be empty")
    token = new_token("pa_owner")
    owner = Owner(
        id=new_id(), name=name, token_hash=hash_token(token), created_at=platform.clock.now()
    )
    async with platform.db.session() as session, session.begin():
        session.add(owner)
    return owner, token


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """An owner's new token (shown once) and when it was issued."""

    owner_id: str
    token: str
    rotated_at: float


@dataclass(frozen=True, slots=True)
class RevokedToken:
    owner_id: str
    revoked_at: float


async def rotate_owner_token(platform: Platform, caller: Caller, owner_id: str) -> IssuedToken:
    """A new token for the owner (returned once; only its hash is stored): the old one, or
    none if it was revoked, stops working. The admin for any owner, an owner for itself."""
    token = new_token("pa_owner")
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        owner = await _owner_for(session, caller, owner_id, "rotates")
        owner.token_hash = hash_token(token)
        owner.token_rotated_at = now
        owner.token_revoked_at = None
        await _end_sessions(session, owner_id)
    platform.owner_tokens.forget()  # after the commit: a lookup from now on reads the new hash
    log.info("owner token rotated", owner_id=owner_id, by=_who(caller))
    return IssuedToken(owner_id, token, now)


async def revoke_owner_token(platform: Platform, caller: Caller, owner_id: str) -> RevokedToken:
    """Revoke the owner's token: no token opens the owner until the admin issues a new one
    (:func:`rotate_owner_token`). The admin for any owner, an owner for itself. Revoking a
    revoked token changes nothing."""
    async with platform.db.session() as session, session.begin():
        owner = await _owner_for(session, caller, owner_id, "revokes")
        if owner.token_revoked_at is None:
            owner.token_revoked_at = platform.clock.now()
        revoked_at = owner.token_revoked_at
        await _end_sessions(session, owner_id)
    platform.owner_tokens.forget()
    log.info("owner token revoked", owner_id=owner_id, by=_who(caller))
    return RevokedToken(owner_id, revoked_at)


async def _owner_for(session: AsyncSession, caller: Caller, owner_id: str, verb: str) -> Owner:
    """The owner whose token ``caller`` may change; another owner learns nothing of it."""
    if not caller.is_admin and caller.owner_id != owner_id:
        raise Forbidden(f"an owner {verb} only its own token")
    owner = await session.get(Owner, owner_id, with_for_update=True)
    if owner is None:
        raise NotFound(f"Owner {owner_id} not found")
    return owner


async def _end_sessions(session: AsyncSession, owner_id: str) -> None:
    """Sign out every browser signed in as the owner: a session outlives no token change."""
    await session.execute(delete(WebSession).where(WebSession.owner_id == owner_id))


def _who(caller: Caller) -> str:
    return "admin" if caller.is_admin else "owner"
