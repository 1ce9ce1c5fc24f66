"""Registration from the browser, and the wizard shown live, check by check.

The owner's token is the credential: it is posted with each form (a password
field, then a hidden field on the page that shows the new key) and never put
in a cookie. With no ambient credential a forged cross-site form has nothing
to ride on; POSTs whose ``Origin`` is another site are refused as well.
Pages that carry the key or the token are sent ``Cache-Control: no-store``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated
from urllib.parse import urlsplit

import structlog
from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from palaestra.engine.accounts import authenticate
from palaestra.engine.agents.registry import register_agent
from palaestra.engine.agents.wizard import (
    WizardAttempt,
    WizardProgress,
    begin_wizard,
    run_wizard_steps,
    wizard_progress,
)
from palaestra.errors import PalaestraError
from palaestra.http.deps import PlatformDep
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.web import queries
from palaestra.web.pages import not_found
from palaestra.web.rendering import render

__all__ = ["router"]

log = structlog.get_logger(__name__)
router = APIRouter(include_in_schema=False)

ROLES = tuple(role.value for role in Role)
FormText = Annotated[str, Form(max_length=4000)]


def _same_origin(request: Request) -> bool:
    """True unless the browser says the form came from another site."""
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not sent by every client; the token is required all the same
    return urlsplit(origin).netloc == request.headers.get("host")


def _cross_site(request: Request) -> Response:
    return render(
        request,
        "error.html",
        403,
        title="Refused",
        message="This form was sent from another site. Open the page here and submit it again.",
    )


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


@router.get("/register")
async def register_form(request: Request) -> Response:
    return render(request, "register.html", roles=ROLES, form={}, private=True)


@router.post("/register")
async def register(
    request: Request,
    platform: PlatformDep,
    token: FormText = "",
    name: FormText = "",
    role: FormText = "",
    endpoint_url: FormText = "",
) -> Response:
    if not _same_origin(request):
        return _cross_site(request)
    form = {"name": name, "role": role, "endpoint_url": endpoint_url, "token": token}
    try:
        caller = await authenticate(platform, token.strip())
        done = await register_agent(platform, caller, name, role, endpoint_url)
    except PalaestraError as exc:
        return render(
            request, "register.html", 400, roles=ROLES, form=form, error=exc.message, private=True
        )
    return render(
        request,
        "registered.html",
        agent=queries.AgentRow.of(done.agent),
        api_key=done.api_key,
        token=token.strip(),
        endpoint_url=done.agent.endpoint_url,
        private=True,
    )


@router.post("/agents/{agent_id}/wizard")
async def start_wizard(
    request: Request, agent_id: str, platform: PlatformDep, token: FormText = ""
) -> Response:
    if not _same_origin(request):
        return _cross_site(request)
    try:
        caller = await authenticate(platform, token.strip())
        attempt = await begin_wizard(platform, caller, agent_id)
    except PalaestraError as exc:
        if _htmx(request):
            return render(request, "_wizard.html", 400, agent_id=agent_id, error=exc.message)
        return render(
            request, "error.html", 400, title="The wizard did not start", message=exc.message
        )
    _in_background(request, platform, attempt)
    if not _htmx(request):
        return RedirectResponse(f"/agents/{agent_id}/wizard/{attempt.attempt_id}", 303)
    progress = WizardProgress(attempt.attempt_id, platform.clock.now(), ())
    return render(request, "_wizard.html", agent_id=agent_id, progress=progress)


@router.get("/agents/{agent_id}/wizard/{attempt_id}")
async def wizard(
    request: Request, agent_id: str, attempt_id: str, platform: PlatformDep
) -> Response:
    progress = await wizard_progress(platform, agent_id, attempt_id)
    if progress is None:
        return not_found(request, "No such wizard run.")
    status = await queries.agent_status(platform, agent_id) if progress.finished else None
    if _htmx(request):
        return render(
            request, "_wizard.html", agent_id=agent_id, progress=progress, agent_status=status
        )
    agent = await queries.agent_brief(platform, agent_id)
    return render(
        request,
        "wizard.html",
        agent=agent,
        agent_id=agent_id,
        progress=progress,
        agent_status=status,
    )


def _in_background(request: Request, platform: Platform, attempt: WizardAttempt) -> None:
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
