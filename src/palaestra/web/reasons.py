"""Who reads which failure reason on the pages (``rules.reasons`` says what each one sees).

Everyone reads the kind and status of a failure; the agent's owner and the
admin read the whole line, redacted and capped: a browser signed in as the owner
(or the admin) reads the owner's view, as does one that posts the token with the
form; the owner's view is never stored (``no-store``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from enum import StrEnum

from palaestra.engine.accounts import Caller
from palaestra.engine.agents.reading import EventRead
from palaestra.engine.agents.wizard import WizardProgress
from palaestra.errors import Forbidden, NotFound
from palaestra.platform import Platform
from palaestra.rules.reasons import owner_reason, public_reason
from palaestra.store.models import Agent, AgentEvent

__all__ = [
    "Audience",
    "EventRow",
    "audience_for",
    "audience_of",
    "event_rows",
    "shown",
    "shown_progress",
]


class Audience(StrEnum):
    PUBLIC = "public"
    OWNER = "owner"  # the agent's owner, or the admin


def shown(reason: str | None, audience: Audience) -> str | None:
    return owner_reason(reason) if audience is Audience.OWNER else public_reason(reason)


class EventRow(EventRead):
    """A history row as a page shows it: a failure's reason as its audience may read it."""

    @classmethod
    def of(cls, event: AgentEvent, audience: Audience) -> EventRow:
        row = cls.model_validate(event)
        if event.outcome != "failure":
            return row  # only failures carry what an agent sent; the rest are ours
        return row.model_copy(update={"reason": shown(event.reason, audience)})


def event_rows(events: Iterable[AgentEvent], audience: Audience) -> list[EventRow]:
    return [EventRow.of(event, audience) for event in events]


def shown_progress(progress: WizardProgress | None, audience: Audience) -> WizardProgress | None:
    """The wizard's checks with their reasons as ``audience`` may read them."""
    if progress is None:
        return None
    checks = tuple(replace(c, reason=shown(c.reason, audience)) for c in progress.checks)
    return replace(progress, checks=checks)


async def audience_of(platform: Platform, caller: Caller, agent_id: str) -> Audience:
    """:attr:`Audience.OWNER` for the agent's owner or the admin; otherwise
    :class:`NotFound` (no such agent) or :class:`Forbidden`."""
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    if agent is None:
        raise NotFound("No such agent.")
    if not (caller.is_admin or agent.owner_id == caller.owner_id):
        raise Forbidden("This is not the agent owner's token or session, nor the admin's.")
    return Audience.OWNER


async def audience_for(platform: Platform, caller: Caller | None, agent_id: str) -> Audience:
    """The owner's view for a browser signed in as the agent's owner or the admin; else public."""
    if caller is None:
        return Audience.PUBLIC
    try:
        return await audience_of(platform, caller, agent_id)
    except (Forbidden, NotFound):
        return Audience.PUBLIC
