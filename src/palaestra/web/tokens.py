"""An owner's token from the browser: rotated (the new one shown once) or revoked.

Each form acts for the browser's session (with its form token) or for the token posted
with it; a form from another site is refused, wrong tokens count against the guessing
throttle, and the page that shows a new token is sent ``Cache-Control: no-store``. The
admin may act on any owner by naming it; an owner acts on its own token. Either change
signs out every browser signed in as the owner, this one included.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from palaestra.engine.accounts import Caller, RevokedToken, revoke_owner_token, rotate_owner_token
from palaestra.engine.web_sessions import signed_in
from palaestra.errors import InvalidRequest
from palaestra.web.forms import FormSender, FormText, SenderDep
from palaestra.web.rendering import render
from palaestra.web.session import clear_session_cookie, session_id

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/owner/token")
async def token_page(request: Request) -> Response:
    return render(request, "owner_token.html", private=True)


@router.post("/owner/token/rotate")
async def rotate_token(sender: SenderDep, owner_id: FormText = "") -> Response:
    """A new token for the caller (the admin: for the owner named), shown once."""
    issued = await sender.act(
        lambda caller: rotate_owner_token(sender.platform, caller, _owner_of(caller, owner_id))
    )
    if isinstance(issued, Response):
        return issued
    return await _after_change(sender, issued=issued)


@router.post("/owner/token/revoke")
async def revoke_token(
    sender: SenderDep, owner_id: FormText = "", confirm: FormText = ""
) -> Response:
    """Revoke the caller's token (the admin: the named owner's)."""

    async def revoke(caller: Caller) -> RevokedToken:
        if confirm != "yes":
            raise InvalidRequest("tick the box to confirm: nothing opens the owner afterwards")
        return await revoke_owner_token(sender.platform, caller, _owner_of(caller, owner_id))

    revoked = await sender.act(revoke)
    if isinstance(revoked, Response):
        return revoked
    return await _after_change(sender, revoked=revoked)


async def _after_change(sender: FormSender, **shown: Any) -> Response:
    """The page after a change, as the browser now stands: signed out if its session ended."""
    request = sender.request
    found = session_id(request)
    still = await signed_in(sender.platform, found) if found else None
    request.state.signed_in = still
    page = render(request, "owner_token.html", private=True, **shown)
    if found and still is None:
        clear_session_cookie(page, request)
    return page


def _owner_of(caller: Caller, owner_id: str) -> str:
    """The owner acted on: the one named (the admin must name one), else the caller."""
    named = owner_id.strip()
    if named:
        return named
    if caller.owner_id is None:
        raise InvalidRequest("the admin names the owner whose token to change")
    return caller.owner_id
