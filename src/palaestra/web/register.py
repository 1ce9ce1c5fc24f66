"""Registration from the browser, and the wizard shown live, check by check.

A browser signed in sends each form with its session's form token; one not signed in
posts the owner's token with each form (a password field, then a hidden field on the
page that shows the new key). POSTs whose ``Origin`` is another site are refused (see
:mod:`palaestra.web.forms`). Pages that carry the key or the token are sent
``Cache-Control: no-store``.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import structlog
from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.agents.registry import register_agent
from palaestra.engine.agents.wizard import (
    WizardAttempt,
    WizardProgress,
    begin_wizard,
    run_wizard_steps,
    wizard_progress,
)
from palaestra.http.deps import PlatformDep
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.web import queries
from palaestra.web.forms import FormText, SenderDep, htmx
from palaestra.web.pages import not_found
from palaestra.web.reasons import Audience, audience_for, shown_progress
from palaestra.web.rendering import render
from palaestra.web.session import current

__all__ = ["in_background", "router"]

log = structlog.get_logger(__name__)
router = APIRouter(include_in_schema=False)

ROLES = tuple(role.value for role in Role)


@router.get("/register")
async def register_form(request: Request) -> Response:
    return render(request, "register.html", roles=ROLES, form={}, private=True)


@router.post("/register")
async def register(
    sender: SenderDep, name: FormText = "", role: FormText = "", endpoint_url: FormText = ""
) -> Response:
    request = sender.request
    form = {"name": name, "role": role, "endpoint_url": endpoint_url, "token": sender.token}

    async def invalid(message: str) -> Response:
        return render(
            request, "register.html", 400, roles=ROLES, form=form, error=message, private=True
        )

    done = await sender.act(
        lambda caller: register_agent(sender.platform, caller, name, role, endpoint_url),
        invalid=invalid,
    )
    if isinstance(done, Response):
        return done
    return render(
        request,
        "registered.html",
        agent=queries.AgentView.of(done.agent),
        api_key=done.api_key,
        token=sender.token.strip(),
        endpoint_url=done.agent.endpoint_url,
        serve_port=_serve_port(done.agent.endpoint_url),
        private=True,
    )


def _serve_port(endpoint_url: str | None) -> int:
    """The port the agent's own server must listen on: the one its registered URL names."""
    url = urlsplit(endpoint_url or "")
    return url.port or (443 if url.scheme == "https" else 80)


@router.post("/agents/{agent_id}/wizard")
async def start_wizard(agent_id: str, sender: SenderDep) -> Response:
    request, platform = sender.request, sender.platform

    async def invalid(message: str) -> Response:
        if htmx(request):
            return render(request, "_wizard.html", 400, agent_id=agent_id, error=message)
        return render(request, "error.html", 400, title="The wizard did not start", message=message)

    attempt = await sender.act(
        lambda caller: begin_wizard(platform, caller, agent_id), invalid=invalid
    )
    if isinstance(attempt, Response):
        return attempt
    in_background(request, platform, attempt)
    if not htmx(request):
        return RedirectResponse(f"/agents/{agent_id}/wizard/{attempt.attempt_id}", 303)
    progress = WizardProgress(attempt.attempt_id, platform.clock.now(), ())
    # The owner started it: the panel polls with the token (or the session), for the checks'
    # whole reasons.
    return render(
        request,
        "_wizard.html",
        agent_id=agent_id,
        progress=progress,
        token=sender.shown_token,
        private=True,
    )


@router.get("/agents/{agent_id}/wizard/{attempt_id}")
async def wizard(
    request: Request, agent_id: str, attempt_id: str, platform: PlatformDep
) -> Response:
    """The wizard's checks for anyone: a failed check's kind and status only; for a browser
    signed in as the agent's owner or the admin, every check's whole reason."""
    signed = current(request)
    audience = await audience_for(platform, signed.caller if signed else None, agent_id)
    return await _wizard_page(request, platform, agent_id, attempt_id, audience)


@router.post("/agents/{agent_id}/wizard/{attempt_id}")
async def wizard_for_owner(agent_id: str, attempt_id: str, sender: SenderDep) -> Response:
    """The same for the agent's owner or the admin, with every check's whole reason."""
    audience = await sender.owner_view(agent_id)
    if isinstance(audience, Response):
        return audience
    # The panel polls with the token; a session needs none.
    return await _wizard_page(
        sender.request, sender.platform, agent_id, attempt_id, audience, sender.shown_token
    )


async def _wizard_page(
    request: Request,
    platform: Platform,
    agent_id: str,
    attempt_id: str,
    audience: Audience,
    token: str | None = None,
) -> Response:
    progress = shown_progress(await wizard_progress(platform, agent_id, attempt_id), audience)
    if progress is None:
        return not_found(request, "No such wizard run.")
    status = await queries.agent_status(platform, agent_id) if progress.finished else None
    shared: dict[str, Any] = {
        "agent_id": agent_id,
        "progress": progress,
        "agent_status": status,
        "token": token,
    }
    private = audience is Audience.OWNER
    if htmx(request):
        return render(request, "_wizard.html", private=private, **shared)
    agent = await queries.agent_brief(platform, agent_id)
    return render(request, "wizard.html", private=private, agent=agent, **shared)


def in_background(request: Request, platform: Platform, attempt: WizardAttempt) -> None:
    """Run the wizard attempt's steps after the answer is sent; its page follows them."""
    jobs: set[asyncio.Task[None]] = request.app.state.web_jobs

    async def run() -> None:
        try:
            await run_wizard_steps(platform, attempt)
        except Exception:
            # The page shows the attempt as interrupted once it stays quiet too long.
            log.exception("wizard run failed", agent_id=attempt.agent_id)

    task = asyncio.create_task(run())
    jobs.add(task)
    task.add_done_callback(jobs.discard)
