"""The owner's work from the browser: start a run; pause, resume or rename an agent or a
fighter; rotate an agent's key.

Each form acts for the browser's session (with its form token) or for the token posted
with it (see :mod:`palaestra.web.forms`), and calls the same services as the API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.accounts import Caller
from palaestra.engine.agents.registry import change, rename, rotate_key
from palaestra.engine.quotas import check_run_quota, quota_use
from palaestra.engine.runs.service import MAX_GOAL_CHARS, SIZE_LIMITS, start_run
from palaestra.errors import InvalidRequest
from palaestra.http.deps import ServicesDep, services_of
from palaestra.protocol.constants import Arena
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS
from palaestra.store.models import Agent, Run
from palaestra.web import queries
from palaestra.web.forms import FormFields, FormSender, FormText, SenderDep
from palaestra.web.pages import not_found
from palaestra.web.rendering import render
from palaestra.web.session import current

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_NEW_RUN = "/runs/new"


@router.get(_NEW_RUN)
async def new_run_form(request: Request) -> Response:
    return await _run_form(request, 200, {"launchpad": DEFAULT_LAUNCHPAD})


class _RunFields(FormFields):
    goal: str = ""
    launchpad: str = ""
    scouts: str = ""
    shortlist: str = ""
    builds: str = ""
    verifies: str = ""
    critiques: str = ""


@router.post(_NEW_RUN)
async def new_run(
    sender: SenderDep, services: ServicesDep, fields: Annotated[_RunFields, Form()]
) -> Response:
    """Start a run as ``POST /api/runs`` does (the same quota), then follow it on its page."""
    form = fields.model_dump()
    given = {name: form[name] for name in SIZE_LIMITS}

    async def start(caller: Caller) -> Run:
        sizes = _sizes(given)
        await check_run_quota(sender.platform, caller)
        launchpad = fields.launchpad or None
        return await start_run(sender.platform, caller, fields.goal, launchpad, sizes)

    run = await sender.act(
        start, invalid=lambda message: _run_form(sender.request, 400, form, error=message)
    )
    if isinstance(run, Response):
        return run
    services.runs.kick(run.id)
    return RedirectResponse(f"/runs/{run.id}", 303)


def _sizes(given: dict[str, str]) -> dict[str, int]:
    """The sizes filled in (an empty field: the launchpad's); the service checks their bounds."""
    sizes = {}
    for name, text in given.items():
        if not text.strip():
            continue
        try:
            sizes[name] = int(text.strip())
        except ValueError:
            raise InvalidRequest(f"{name} must be a whole number") from None
    return sizes


async def _run_form(
    request: Request, status: int, form: dict[str, Any], error: str | None = None
) -> Response:
    signed = current(request)
    owner_id = signed.caller.owner_id if signed else None
    platform = services_of(request).platform
    return render(
        request,
        "run_new.html",
        status,
        private=True,
        form=form,
        error=error,
        launchpads=LAUNCHPADS.values(),
        limits=SIZE_LIMITS,
        max_goal=MAX_GOAL_CHARS,
        quotas=[] if owner_id is None else await quota_use(platform, owner_id),
    )


@router.post("/agents/{agent_id}/pause")
async def pause_agent(agent_id: str, sender: SenderDep) -> Response:
    """Pause the agent (its owner): no pings or dispatches until it is resumed."""
    return await _change(sender, lambda caller: change(sender.platform, caller, agent_id, "pause"))


@router.post("/agents/{agent_id}/resume")
async def resume_agent(agent_id: str, sender: SenderDep) -> Response:
    """Resume the agent (its owner): back to the status it held before the pause."""
    return await _change(sender, lambda caller: change(sender.platform, caller, agent_id, "resume"))


@router.post("/agents/{agent_id}/rename")
async def rename_agent(agent_id: str, sender: SenderDep, name: FormText = "") -> Response:
    """A new name for the agent or fighter (its owner); not one another of its own has."""
    return await _change(sender, lambda caller: rename(sender.platform, caller, agent_id, name))


async def _change(sender: FormSender, act: Callable[[Caller], Awaitable[Agent]]) -> Response:
    """Act on the agent for the form's sender, then show its owner's controls."""
    agent = await sender.act(act)
    if isinstance(agent, Response):
        return agent
    page = "fighters" if agent.arena == Arena.CAGE else "agents"
    return RedirectResponse(f"/{page}/{agent.id}#owner-controls", 303)


@router.post("/agents/{agent_id}/rotate-key")
async def rotate_agent_key(agent_id: str, sender: SenderDep, confirm: FormText = "") -> Response:
    """A new key for the agent (its owner), shown once; the old one stops working at once."""

    async def rotate(caller: Caller) -> str:
        if confirm != "yes":
            raise InvalidRequest("tick the box to confirm: the agent's old key stops working")
        return await rotate_key(sender.platform, caller, agent_id)

    key = await sender.act(rotate)
    if isinstance(key, Response):
        return key
    agent = await queries.agent_brief(sender.platform, agent_id)
    if agent is None:
        return not_found(sender.request, "No such agent.")
    return render(sender.request, "agent_key.html", private=True, agent=agent, api_key=key)
