"""Browser sessions: an owner's (or the admin's) token exchanged once for a session.

The session id is random (256 bits from :mod:`secrets`) and lives only in the browser's
cookie; the store keeps its SHA-256, so a copy of the database opens no session. A
session ends when it expires (``web_session_s`` after sign-in), when its browser signs
out, and when the owner's token is rotated or revoked (in the same transaction, by
:mod:`~palaestra.engine.accounts`), or, for the admin's sessions, when the admin token
changes. Each page looks its session up, so an ended session is refused at once by
every process.

Each session has a form token (CSRF), derived from its id with HMAC: a form posted with
the session must carry it, and a page from another site cannot read it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

import structlog
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.accounts import Caller, authenticate
from palaestra.platform import Platform
from palaestra.security import hash_token
from palaestra.store.models import Owner, WebSession

__all__ = [
    "IssuedSession",
    "SignedIn",
    "form_token",
    "form_token_matches",
    "sign_in",
    "sign_out",
    "signed_in",
]

log = structlog.get_logger(__name__)

_FORM_TOKEN_LABEL = b"palaestra form token v1"


@dataclass(frozen=True, slots=True)
class SignedIn:
    """Who a live session stands for, and until when."""

    caller: Caller
    name: str  # the owner's name, or "admin"
    expires_at: float
    form_token: str


@dataclass(frozen=True, slots=True)
class IssuedSession:
    """A new session: its id (for the cookie only, never stored or logged) and who it is."""

    session_id: str
    signed_in: SignedIn


def form_token(session_id: str) -> str:
    """The session's form token: an HMAC of a fixed label under the session id."""
    return hmac.new(session_id.encode(), _FORM_TOKEN_LABEL, hashlib.sha256).hexdigest()


def form_token_matches(session_id: str, posted: str) -> bool:
    return hmac.compare_digest(form_token(session_id).encode(), posted.encode())


async def sign_in(platform: Platform, token: str) -> IssuedSession:
    """A session for the owner or the admin ``token`` opens; raises as
    :func:`~palaestra.engine.accounts.authenticate` does for a token that opens none."""
    caller = await authenticate(platform, token.strip())
    session_id = secrets.token_urlsafe(32)
    now = platform.clock.now()
    expires_at = now + platform.settings.web_session_s
    row = WebSession(
        id_hash=hash_token(session_id),
        owner_id=caller.owner_id,
        created_at=now,
        expires_at=expires_at,
    )
    async with platform.db.session() as session, session.begin():
        name = "admin" if caller.is_admin else await _owner_name(session, caller.owner_id)
        await session.execute(delete(WebSession).where(WebSession.expires_at <= now))
        session.add(row)
    log.info("signed in", owner_id=caller.owner_id, admin=caller.is_admin)
    signed = SignedIn(caller, name, expires_at, form_token(session_id))
    return IssuedSession(session_id, signed)


async def signed_in(platform: Platform, session_id: str) -> SignedIn | None:
    """Who the session stands for, or None when there is no such session or it has ended."""
    if not session_id:
        return None
    query = (
        select(WebSession.owner_id, WebSession.expires_at, Owner.name, Owner.token_revoked_at)
        .outerjoin(Owner, Owner.id == WebSession.owner_id)
        .where(WebSession.id_hash == hash_token(session_id))
    )
    async with platform.db.read() as connection:
        found = (await connection.execute(query)).one_or_none()
    if found is None:
        return None
    owner_id, expires_at, name, revoked_at = found
    if expires_at <= platform.clock.now() or revoked_at is not None:
        return None
    caller = Caller(owner_id=owner_id, is_admin=owner_id is None)
    return SignedIn(caller, name or "admin", expires_at, form_token(session_id))


async def sign_out(platform: Platform, session_id: str) -> None:
    """End the session (and any that have expired meanwhile)."""
    async with platform.db.session() as session, session.begin():
        await session.execute(
            delete(WebSession).where(
                (WebSession.id_hash == hash_token(session_id))
                | (WebSession.expires_at <= platform.clock.now())
            )
        )
    log.info("signed out")


async def _owner_name(session: AsyncSession, owner_id: str | None) -> str:
    name = await session.scalar(select(Owner.name).where(Owner.id == owner_id))
    return name or "owner"
