"""Owners, the admin and their tokens.

An owner's token names its owner for good: once seen, the owner is remembered by the
token's hash (:class:`~palaestra.security.OwnerTokens`) and its requests authenticate
without a query. The admin's token is checked against the store on every request, since
another process may set a new one (at its start); setting it here forgets the owners
remembered, so that a token that now stands for the admin is taken for the admin.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from functools import partial

from sqlalchemy import bindparam, select

from palaestra.errors import InvalidCredential, InvalidRequest, Unauthorized
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.security import hash_token, new_token
from palaestra.store.models import Meta, Owner

__all__ = ["Caller", "authenticate", "bootstrap_admin", "create_owner"]

_ADMIN_KEY = "admin_token_hash"
#: The admin token's hash, and the owner whose token hashes to ``hash``.
_CALLER = select(
    select(Meta.value).where(Meta.key == _ADMIN_KEY).scalar_subquery(),
    select(Owner.id).where(Owner.token_hash == bindparam("hash")).scalar_subquery(),
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
            else:
                row.value = wanted
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
    owner_id = platform.owner_tokens.owner(hashed)
    if owner_id is not None:
        return Caller(owner_id=owner_id)
    admin, owner_id = await platform.owner_tokens.looked_up(
        hashed, partial(_admin_and_owner, platform, hashed)
    )
    if admin is not None and hmac.compare_digest(hashed, admin):
        return Caller(owner_id=None, is_admin=True)
    if owner_id is None:
        raise InvalidCredential("Invalid bearer token")
    platform.owner_tokens.remember(hashed, owner_id)
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
