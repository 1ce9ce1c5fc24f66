"""The owner's controls on a fighter's page: whether other owners may challenge it, rated
and to friendlies.

Like the wizard's form, each acts for the browser's session (with its form token) or for
the owner's token posted with it, and refuses a form sent from another site; wrong tokens
count against the guessing throttle.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.cage.fighters import set_challenges
from palaestra.errors import PalaestraError
from palaestra.http.deps import PlatformDep
from palaestra.platform import Platform
from palaestra.web.forms import FormText, form_caller, refused

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.post("/fighters/{fighter_id}/rated-challenges")
async def rated_challenges(
    request: Request,
    fighter_id: str,
    platform: PlatformDep,
    token: FormText = "",
    csrf_token: FormText = "",
    accepts: FormText = "",
) -> Response:
    """Turn rated challenges on (``accepts=yes``) or off, then show the fighter's page."""
    return await _consent(
        request, platform, fighter_id, (token, csrf_token), "rated-challenges", accepts
    )


@router.post("/fighters/{fighter_id}/friendly-challenges")
async def friendly_challenges(
    request: Request,
    fighter_id: str,
    platform: PlatformDep,
    token: FormText = "",
    csrf_token: FormText = "",
    accepts: FormText = "",
) -> Response:
    """Turn other owners' friendly matches on (``accepts=yes``) or off, then show the page."""
    return await _consent(
        request, platform, fighter_id, (token, csrf_token), "friendly-challenges", accepts
    )


async def _consent(
    request: Request,
    platform: Platform,
    fighter_id: str,
    credential: tuple[str, str],
    which: str,
    accepts: str,
) -> Response:
    given = accepts == "yes"
    try:
        caller = await form_caller(request, platform, *credential)
        if isinstance(caller, Response):
            return caller
        if which == "rated-challenges":
            await set_challenges(platform, caller, fighter_id, rated=given)
        else:
            await set_challenges(platform, caller, fighter_id, friendly=given)
    except PalaestraError as exc:
        return refused(request, exc)
    return RedirectResponse(f"/fighters/{fighter_id}#{which}", 303)
