"""An owner's token from the browser: rotated (the new one shown once) or revoked.

The token is the credential, posted with the form and never put in a cookie; a form
from another site is refused, wrong tokens count against the guessing throttle, and
the page that shows a new token is sent ``Cache-Control: no-store``. The admin may act
on any owner by naming it; an owner acts on its own token.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from palaestra.engine.accounts import Caller, authenticate, revoke_owner_token, rotate_owner_token
from palaestra.errors import InvalidRequest, PalaestraError
from palaestra.http.deps import PlatformDep, guarded
from palaestra.platform import Platform
from palaestra.web.forms import FormText, cross_site, refused, same_origin
from palaestra.web.rendering import render

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/owner/token")
async def token_page(request: Request) -> Response:
    return render(request, "owner_token.html", private=True)


@router.post("/owner/token/rotate")
async def rotate_token(
    request: Request, platform: PlatformDep, token: FormText = "", owner_id: FormText = ""
) -> Response:
    """A new token for the caller (the admin: for the owner named), shown once."""
    if not same_origin(request):
        return cross_site(request)
    try:
        caller = await _caller(request, platform, token)
        issued = await rotate_owner_token(platform, caller, _owner_of(caller, owner_id))
    except PalaestraError as exc:
        return refused(request, exc)
    return render(request, "owner_token.html", issued=issued, private=True)


@router.post("/owner/token/revoke")
async def revoke_token(
    request: Request,
    platform: PlatformDep,
    token: FormText = "",
    owner_id: FormText = "",
    confirm: FormText = "",
) -> Response:
    """Revoke the caller's token (the admin: the named owner's)."""
    if not same_origin(request):
        return cross_site(request)
    try:
        caller = await _caller(request, platform, token)
        if confirm != "yes":
            raise InvalidRequest("tick the box to confirm: nothing opens the owner afterwards")
        revoked = await revoke_owner_token(platform, caller, _owner_of(caller, owner_id))
    except PalaestraError as exc:
        return refused(request, exc)
    return render(request, "owner_token.html", revoked=revoked, private=True)


async def _caller(request: Request, platform: Platform, token: str) -> Caller:
    async with guarded(request):
        return await authenticate(platform, token.strip())


def _owner_of(caller: Caller, owner_id: str) -> str:
    """The owner acted on: the one named (the admin must name one), else the caller."""
    named = owner_id.strip()
    if named:
        return named
    if caller.owner_id is None:
        raise InvalidRequest("the admin names the owner whose token to change")
    return caller.owner_id
