"""History pages: the tasks an agent served, and one task as it was sent and answered.

Who reads what is :mod:`palaestra.web.task_queries`'s; an agent's list shows each failure's
reason as the agent's page does (the whole reason to its owner and the admin signed in).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from palaestra.http.deps import PlatformDep
from palaestra.web import list_queries, queries, task_queries
from palaestra.web.pages import not_found, private_runs
from palaestra.web.reasons import Audience, audience_for
from palaestra.web.rendering import render
from palaestra.web.session import current

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/agents/{agent_id}/tasks")
async def agent_tasks(
    request: Request,
    agent_id: str,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """The tasks sent to the agent, newest first, a page at a time. Where runs are private
    they are read as runs are: by the agent's owner and the admin all of them, by another
    owner signed in the tasks of its own runs, by a browser not signed in none."""
    agent = await queries.agent_brief(platform, agent_id)
    if agent is None or agent.role is None:
        return not_found(request, "No such agent.")
    signed = current(request)
    audience = await audience_for(platform, signed.caller if signed else None, agent_id)
    run_owner = None
    if not platform.settings.public_runs:
        if signed is None:
            return private_runs(request)
        if audience is not Audience.OWNER:  # neither the agent's owner nor the admin
            run_owner = signed.caller.owner_id
    page = await list_queries.agent_tasks_page(
        platform, agent_id, cursor, audience, run_owner=run_owner
    )
    return render(
        request,
        "agent_tasks.html",
        agent=agent,
        tasks=page,
        cursor=cursor,
        only_own_runs=run_owner is not None,
        private=audience is Audience.OWNER or run_owner is not None,
    )


@router.get("/tasks/{task_id}")
async def task(request: Request, task_id: str, platform: PlatformDep) -> Response:
    """One task: the signed request as it was sent, and the reply or callback that came back."""
    signed = current(request)
    page = await task_queries.task_page(platform, task_id, signed.caller if signed else None)
    if page is None:
        if signed is None and not platform.settings.public_runs:
            return private_runs(request)
        return not_found(request, "No such task among those you may read.")
    whole = page.access is task_queries.Access.WHOLE
    return render(request, "task.html", page=page, private=whole)
