"""The owner's control on a fighter's page: whether other owners may challenge it rated.

Like the wizard's form, it carries the owner's token in the post and refuses a
form sent from another site; wrong tokens count against the guessing throttle.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.accounts import authenticate
from palaestra.engine.cage.fighters import set_rated_challenges
from palaestra.errors import PalaestraError
from palaestra.http.deps import PlatformDep, guarded
from palaestra.web.forms import FormText, cross_site, refused, same_origin

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.post("/fighters/{fighter_id}/rated-challenges")
async def rated_challenges(
    request: Request,
    fighter_id: str,
    platform: PlatformDep,
    token: FormText = "",
    accepts: FormText = "",
) -> Response:
    """Turn rated challenges on (``accepts=yes``) or off, then show the fighter's page."""
    if not same_origin(request):
        return cross_site(request)
    try:
        async with guarded(request):  # a token opens an owner, not this fighter
            caller = await authenticate(platform, token.strip())
        await set_rated_challenges(platform, caller, fighter_id, accepts == "yes")
    except PalaestraError as exc:
        return refused(request, exc)
    return RedirectResponse(f"/fighters/{fighter_id}#rated-challenges", 303)
