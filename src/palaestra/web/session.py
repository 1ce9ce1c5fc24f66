"""The browser's session on the pages: its cookie, and who it stands for on each page.

The cookie holds the session id only: ``HttpOnly`` (no script reads it), ``SameSite=Lax``
(another site's form or fetch does not carry it), ``Secure`` and named with the
``__Host-`` prefix when the public URL is https, and no longer lived than the session.
The API does not read it: the API takes bearer tokens only.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request
from starlette.responses import Response

from palaestra.engine.web_sessions import IssuedSession, SignedIn, signed_in
from palaestra.http.deps import services_of
from palaestra.platform import Platform

__all__ = [
    "clear_session_cookie",
    "current",
    "load_session",
    "secure",
    "session_cookie",
    "session_id",
    "set_session_cookie",
]

_PLAIN = "palaestra_session"
_HOST_ONLY = "__Host-palaestra_session"


def secure(platform: Platform) -> bool:
    """Cookies are sent over https only when the arena's public URL is https."""
    return urlsplit(platform.settings.public_url).scheme == "https"


def session_cookie(platform: Platform) -> str:
    return _HOST_ONLY if secure(platform) else _PLAIN


def session_id(request: Request) -> str:
    platform = services_of(request).platform
    return request.cookies.get(session_cookie(platform), "")


async def load_session(request: Request) -> None:
    """Look the request's session up once, for the page and for ``base.html``'s "signed in as"."""
    if hasattr(request.state, "signed_in"):
        return
    found = session_id(request)
    platform = services_of(request).platform
    request.state.signed_in = await signed_in(platform, found) if found else None
    request.state.session_ended = bool(found) and request.state.signed_in is None


def current(request: Request) -> SignedIn | None:
    """Who the request's session stands for (after :func:`load_session`), or None."""
    found: SignedIn | None = getattr(request.state, "signed_in", None)
    return found


def set_session_cookie(response: Response, request: Request, issued: IssuedSession) -> None:
    platform = services_of(request).platform
    response.set_cookie(
        session_cookie(platform),
        issued.session_id,
        max_age=int(platform.settings.web_session_s),
        path="/",
        secure=secure(platform),
        httponly=True,
        samesite="lax",
    )


def clear_session_cookie(response: Response, request: Request) -> None:
    platform = services_of(request).platform
    response.delete_cookie(
        session_cookie(platform), path="/", secure=secure(platform), httponly=True, samesite="lax"
    )
