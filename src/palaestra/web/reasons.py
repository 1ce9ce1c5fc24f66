"""Who reads which failure reason on the pages (``rules.reasons`` says what each one sees).

Everyone reads the kind and status of a failure; the agent's owner and the
admin read the whole line, redacted and capped. The pages hold no session:
the owner's (or the admin's) token is posted with a form, as for the wizard,
and the page it answers is the owner's view, never stored (``no-store``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from palaestra.engine.accounts import authenticate
from palaestra.engine.agents.wizard import WizardProgress
from palaestra.errors import Forbidden, NotFound
from palaestra.platform import Platform
from palaestra.rules.reasons import owner_reason, public_reason
from palaestra.store.models import Agent, AgentEvent

__all__ = ["Audience", "EventRow", "audience_of", "event_rows", "shown", "shown_progress"]


class Audience(StrEnum):
    PUBLIC = "public"
    OWNER = "owner"  # the agent's owner, or the admin


def shown(reason: str | None, audience: Audience) -> str | None:
    return owner_reason(reason) if audience is Audience.OWNER else public_reason(reason)


@dataclass(frozen=True, slots=True)
class EventRow:
    """A history row as a page shows it: a failure's reason as its audience may read it."""

    at: float
    kind: str
    outcome: str
    latency_ms: float | None
    reason: str | None
    detail: dict[str, Any] | None

    @classmethod
    def of(cls, event: AgentEvent, audience: Audience) -> EventRow:
        # Only failures carry what an agent sent; status changes and the rest are ours.
        reason = shown(event.reason, audience) if event.outcome == "failure" else event.reason
        return cls(event.at, event.kind, event.outcome, event.latency_ms, reason, event.detail)


def event_rows(events: Iterable[AgentEvent], audience: Audience) -> list[EventRow]:
    return [EventRow.of(event, audience) for event in events]


def shown_progress(progress: WizardProgress | None, audience: Audience) -> WizardProgress | None:
    """The wizard's checks with their reasons as ``audience`` may read them."""
    if progress is None:
        return None
    checks = tuple(replace(c, reason=shown(c.reason, audience)) for c in progress.checks)
    return replace(progress, checks=checks)


async def audience_of(platform: Platform, token: str, agent_id: str) -> Audience:
    """:attr:`Audience.OWNER` for the agent's owner's token or the admin's; otherwise
    :class:`~palaestra.errors.Unauthorized` (no such token) or :class:`Forbidden`."""
    caller = await authenticate(platform, token.strip())
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    if agent is None:
        raise NotFound("No such agent.")
    if not (caller.is_admin or agent.owner_id == caller.owner_id):
        raise Forbidden("This token is not the agent owner's or the admin's.")
    return Audience.OWNER
