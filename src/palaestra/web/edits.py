"""An agent's endpoint and a model fighter's model, changed from the browser.

Each form acts for the browser's session (with its form token) or for the token posted with
it (:mod:`palaestra.web.forms`), for the owner or the admin, and calls the services
``PATCH /api/agents/{id}`` and ``PATCH /api/fighters/{id}`` call. A refused change shows the
form again with the reason and what was typed (a provider key is never sent back). A new
endpoint is followed to its wizard, which runs on the new URL at once.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.agents.endpoints import change_endpoint
from palaestra.engine.cage.fighters import change_model
from palaestra.errors import Forbidden, NotFound, TooManyRequests
from palaestra.http.deps import PlatformDep
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage import EntrantType
from palaestra.store.models import Agent
from palaestra.web.fighters import ModelFields
from palaestra.web.forms import FormText, SenderDep
from palaestra.web.pages import not_found
from palaestra.web.register import in_background
from palaestra.web.rendering import render
from palaestra.web.session import current

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

#: What a change refuses rather than showing the form again: no form fixes it.
_REFUSED = (TooManyRequests, NotFound, Forbidden)
_ENDPOINT = "agent_endpoint.html"
_MODEL = "fighter_model.html"


@router.get("/agents/{agent_id}/endpoint")
async def endpoint_form(request: Request, agent_id: str, platform: PlatformDep) -> Response:
    """The form; its owner (or the admin) signed in finds the URL it has filled in."""
    agent = await _entrant(platform, agent_id, Arena.EDGEARENA)
    if agent is None:
        return not_found(request, "No such agent.")
    url = agent.endpoint_url if _reads_settings(request, agent) else ""
    return await _edit_page(request, _ENDPOINT, 200, {"endpoint_url": url or ""}, agent=agent)


@router.post("/agents/{agent_id}/endpoint")
async def change_agent_endpoint(
    agent_id: str, sender: SenderDep, endpoint_url: FormText = ""
) -> Response:
    """Check the new URL as ``PATCH /api/agents/{id}`` does, then follow its wizard."""
    request, platform = sender.request, sender.platform
    agent = await _entrant(platform, agent_id, Arena.EDGEARENA)
    if agent is None:
        return not_found(request, "No such agent.")
    done = await sender.act(
        lambda caller: change_endpoint(platform, caller, agent_id, endpoint_url),
        invalid=lambda message: _edit_page(
            request, _ENDPOINT, 400, {"endpoint_url": endpoint_url}, message, agent=agent
        ),
        refuse=_REFUSED,  # another's agent, or too many wrong tokens
    )
    if isinstance(done, Response):
        return done
    if done.attempt is None:  # the URL it had: nothing to run
        return RedirectResponse(f"/agents/{agent_id}#owner-controls", 303)
    in_background(request, platform, done.attempt)
    return RedirectResponse(f"/agents/{agent_id}/wizard/{done.attempt.attempt_id}", 303)


@router.get("/fighters/{fighter_id}/model")
async def model_form(request: Request, fighter_id: str, platform: PlatformDep) -> Response:
    fighter = await _entrant(platform, fighter_id, Arena.CAGE)
    if fighter is None or fighter.entrant_type != EntrantType.MODEL.value:
        return not_found(request, "No such model fighter.")
    provider = fighter.provider or {}
    form = {"model": provider.get("model", ""), "base_url": provider.get("base_url", "")}
    if not _reads_settings(request, fighter):
        form["base_url"] = ""  # its provider's address is its owner's business
    return await _edit_page(request, _MODEL, 200, form, fighter=fighter)


@router.post("/fighters/{fighter_id}/model")
async def change_fighter_model(
    fighter_id: str, sender: SenderDep, fields: Annotated[ModelFields, Form()]
) -> Response:
    """Check the new model as ``PATCH /api/fighters/{id}`` does, then show the fighter."""
    request, platform = sender.request, sender.platform
    fighter = await _entrant(platform, fighter_id, Arena.CAGE)
    if fighter is None or fighter.entrant_type != EntrantType.MODEL.value:
        return not_found(request, "No such model fighter.")
    done = await sender.act(
        lambda caller: change_model(platform, caller, fighter_id, fields.config()),
        invalid=lambda message: _edit_page(
            request, _MODEL, 400, fields.typed(), message, fighter=fighter
        ),
        refuse=_REFUSED,
    )
    if isinstance(done, Response):
        return done
    return RedirectResponse(f"/fighters/{fighter_id}#model", 303)


async def _edit_page(
    request: Request,
    name: str,
    status: int,
    form: dict[str, str],
    error: str | None = None,
    **entrant: Agent,
) -> Response:
    """The form ``name`` for the entrant, with what it holds or what was typed."""
    return render(request, name, status, private=True, form=form, error=error, **entrant)


async def _entrant(platform: Platform, entrant_id: str, arena: Arena) -> Agent | None:
    async with platform.db.session() as session:
        found = await session.get(Agent, entrant_id)
    return found if found is not None and found.arena == arena else None


def _reads_settings(request: Request, agent: Agent) -> bool:
    """Whether the browser is signed in as the agent's owner or the admin."""
    signed = current(request)
    return signed is not None and (
        signed.caller.is_admin or signed.caller.owner_id == agent.owner_id
    )
