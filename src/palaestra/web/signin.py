"""Sign in once with an owner's or the admin's token, and sign out.

The sign-in form is guarded against another site signing the browser in as someone else
(login CSRF): the page sets a short-lived random cookie, ``HttpOnly`` and ``SameSite=Strict``,
and the form must post its value back. A wrong token counts against the guessing throttle.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.web_sessions import form_token_matches, sign_in, sign_out
from palaestra.errors import PalaestraError, TooManyRequests
from palaestra.http.deps import PlatformDep, guarded
from palaestra.platform import Platform
from palaestra.web.charts import duration
from palaestra.web.forms import FormText, cross_site, refused, same_origin, wrong_form_token
from palaestra.web.rendering import render
from palaestra.web.session import (
    clear_session_cookie,
    current,
    secure,
    session_id,
    set_session_cookie,
)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_SIGN_IN_COOKIE = "palaestra_signin"
_SIGN_IN_PATH = "/signin"


@router.get(_SIGN_IN_PATH)
async def sign_in_page(request: Request, platform: PlatformDep, then: str = "") -> Response:
    return _form(request, platform, 200, then=_local(then))


@router.post(_SIGN_IN_PATH)
async def sign_in_form(
    request: Request,
    platform: PlatformDep,
    token: FormText = "",
    csrf_token: FormText = "",
    then: FormText = "",
) -> Response:
    """Exchange the token for a session; then go back to the page the browser came from."""
    if not same_origin(request):
        return cross_site(request)
    expected = request.cookies.get(_SIGN_IN_COOKIE, "")
    if not expected or not hmac.compare_digest(expected.encode(), csrf_token.encode()):
        return _form(
            request,
            platform,
            403,
            then=_local(then),
            error="The sign-in form was not sent from this page (or it is too old). "
            "Send it again from here.",
        )
    try:
        async with guarded(request):
            issued = await sign_in(platform, token)
        if session_id(request):
            await sign_out(platform, session_id(request))  # the session it replaces ends
    except TooManyRequests as exc:
        return refused(request, exc)
    except PalaestraError as exc:
        return _form(request, platform, 401, then=_local(then), error=exc.message)
    response = RedirectResponse(_local(then) or "/", 303)
    set_session_cookie(response, request, issued)
    response.delete_cookie(_SIGN_IN_COOKIE, path=_SIGN_IN_PATH)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/signout")
async def sign_out_form(
    request: Request, platform: PlatformDep, csrf_token: FormText = ""
) -> Response:
    """End the browser's session, here and on every server of the arena."""
    if not same_origin(request):
        return cross_site(request)
    found = session_id(request)
    if found and current(request) is not None:
        if not form_token_matches(found, csrf_token):
            return wrong_form_token(request, "sign out again")
        await sign_out(platform, found)
    response = RedirectResponse("/", 303)
    clear_session_cookie(response, request)
    return response


def _form(
    request: Request, platform: Platform, status: int, *, then: str, error: str | None = None
) -> Response:
    """The sign-in page, with a fresh value for its cookie and its hidden field."""
    guard = secrets.token_urlsafe(32)
    page = render(
        request,
        "signin.html",
        status,
        private=True,
        then=then,
        guard=guard,
        error=error,
        session_hours=duration(platform.settings.web_session_s).replace(".0 ", " "),
    )
    page.set_cookie(
        _SIGN_IN_COOKIE,
        guard,
        max_age=3600,
        path=_SIGN_IN_PATH,
        secure=secure(platform),
        httponly=True,
        samesite="strict",
    )
    return page


def _local(path: str) -> str:
    """A path on this site to return to, or "": never another site's address."""
    path = path.strip()
    unsafe = any(char.isspace() or not char.isprintable() for char in path)
    if unsafe or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return ""
    return path[:500]
