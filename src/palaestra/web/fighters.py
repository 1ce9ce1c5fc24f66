"""A fighter from the browser: registered (a harness, or a model with its provider), and the
owner's controls on its page: whether other owners may challenge it, rated and to friendlies.

Like the wizard's form, each acts for the browser's session (with its form token) or for
the owner's token posted with it, and refuses a form sent from another site; wrong tokens
count against the guessing throttle. The form calls the service ``POST /api/fighters``
calls, so it checks what the API checks; a harness's claim code is shown once, on a page
no browser or proxy keeps.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.accounts import Caller
from palaestra.engine.cage.fighters import ModelConfig, create_fighter, set_challenges
from palaestra.http.deps import services_of
from palaestra.rules.cage import EntrantType
from palaestra.store.models import Agent
from palaestra.web.forms import FormFields, FormSender, FormText, SenderDep
from palaestra.web.rendering import render

__all__ = ["ModelFields", "router"]

router = APIRouter(include_in_schema=False)

_NEW = "/fighters/new"
#: The friendly-challenges choice: left to the arena's default, or said.
_FRIENDLY = {"": None, "yes": True, "no": False}


@router.get(_NEW)
async def new_fighter_form(request: Request) -> Response:
    return await _fighter_form(request, 200, {"entrant_type": EntrantType.HARNESS.value})


class ModelFields(FormFields):
    """A model fighter's model: its id, and its provider's URL and key."""

    model: str = ""
    base_url: str = ""
    api_key: str = ""

    def config(self) -> ModelConfig:
        return ModelConfig(
            self.base_url.strip() or None, self.model.strip(), self.api_key.strip() or None
        )

    def typed(self) -> dict[str, str]:
        """What was typed, to show again: all but the provider's key, never sent back."""
        return self.model_dump(exclude={"api_key"})


class _FighterFields(ModelFields):
    name: str = ""
    entrant_type: str = ""
    fighter_class: str = ""
    rated_challenges: str = ""
    friendly_challenges: str = ""


@router.post(_NEW)
async def new_fighter(sender: SenderDep, fields: Annotated[_FighterFields, Form()]) -> Response:
    """Create a fighter as ``POST /api/fighters`` does: a harness gets its claim code (shown
    once), a model fighter its page."""
    # A model's fields count for a model fighter only: a harness's form may keep them filled.
    wants_model = fields.entrant_type == EntrantType.MODEL.value
    created = await sender.act(
        lambda caller: create_fighter(
            sender.platform,
            caller,
            fields.name,
            fields.entrant_type,
            fields.fighter_class,
            fields.config() if wants_model else None,
            rated_challenges=fields.rated_challenges == "yes",
            friendly_challenges=_FRIENDLY.get(fields.friendly_challenges),
        ),
        invalid=lambda message: _fighter_form(sender.request, 400, fields.typed(), error=message),
    )
    if isinstance(created, Response):
        return created
    fighter = created.fighter
    if fighter.entrant_type != EntrantType.HARNESS.value:
        return RedirectResponse(f"/fighters/{fighter.id}", 303)
    return render(
        sender.request,
        "fighter_created.html",
        private=True,
        fighter=fighter,
        claim_code=created.claim_code,
        base=sender.platform.settings.public_url.rstrip("/"),
    )


async def _fighter_form(
    request: Request, status: int, form: dict[str, Any], error: str | None = None
) -> Response:
    platform = services_of(request).platform
    return render(
        request,
        "fighter_new.html",
        status,
        private=True,
        form=form,
        error=error,
        entrant_types=[kind.value for kind in EntrantType],
        classes=platform.settings.fighter_classes,
    )


@router.post("/fighters/{fighter_id}/rated-challenges")
async def rated_challenges(fighter_id: str, sender: SenderDep, accepts: FormText = "") -> Response:
    """Turn rated challenges on (``accepts=yes``) or off, then show the fighter's page."""
    return await _consent(sender, fighter_id, "rated-challenges", accepts)


@router.post("/fighters/{fighter_id}/friendly-challenges")
async def friendly_challenges(
    fighter_id: str, sender: SenderDep, accepts: FormText = ""
) -> Response:
    """Turn other owners' friendly matches on (``accepts=yes``) or off, then show the page."""
    return await _consent(sender, fighter_id, "friendly-challenges", accepts)


async def _consent(sender: FormSender, fighter_id: str, which: str, accepts: str) -> Response:
    given = accepts == "yes"

    async def consent(caller: Caller) -> Agent:
        if which == "rated-challenges":
            return await set_challenges(sender.platform, caller, fighter_id, rated=given)
        return await set_challenges(sender.platform, caller, fighter_id, friendly=given)

    done = await sender.act(consent)
    if isinstance(done, Response):
        return done
    return RedirectResponse(f"/fighters/{fighter_id}#{which}", 303)
