"""An owner's match from a fighter's page: one of its own fighters against this one.

The form acts for the browser's session (with its form token) or the token posted with
it, and starts the match as ``POST /api/matches`` does: the same checks (readiness, the
other owner's consent), the same quota; a friendly unless the owner asks for a rated
challenge where the arena allows it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from starlette.responses import RedirectResponse, Response

from palaestra.engine.accounts import Caller
from palaestra.engine.cage.matches import create_match
from palaestra.engine.quotas import check_match_quota
from palaestra.errors import InvalidRequest
from palaestra.http.deps import ServicesDep
from palaestra.store.models import Match
from palaestra.web.forms import FormFields, SenderDep

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


class _ChallengeFields(FormFields):
    mine: str = ""
    seat: str = "attacker"
    rated: str = ""


@router.post("/fighters/{fighter_id}/challenge")
async def challenge(
    fighter_id: str,
    sender: SenderDep,
    services: ServicesDep,
    fields: Annotated[_ChallengeFields, Form()],
) -> Response:
    """Start a match of the owner's fighter ``mine`` against this one, ``mine`` in ``seat``
    (``attacker`` or ``defender``); then follow it on its page."""

    async def start(caller: Caller) -> Match:
        mine, seat = fields.mine.strip(), fields.seat
        if seat not in ("attacker", "defender"):
            raise InvalidRequest("seat must be attacker or defender")
        if not mine:
            raise InvalidRequest("choose one of your fighters")
        await check_match_quota(sender.platform, caller)
        pair = (mine, fighter_id) if seat == "attacker" else (fighter_id, mine)
        rated = fields.rated == "yes" or None
        return await create_match(sender.platform, caller, *pair, rated=rated)

    match = await sender.act(start)
    if isinstance(match, Response):
        return match
    services.referee.wake()
    return RedirectResponse(f"/matches/{match.id}", 303)
