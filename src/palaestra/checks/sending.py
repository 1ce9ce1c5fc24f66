"""Requests sent as the platform sends them, kept so that an advisory check can send them again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from palaestra.egress import EgressClient, EgressResult

__all__ = ["SentRequest", "resend", "send"]


@dataclass(frozen=True, slots=True)
class SentRequest:
    """A request exactly as sent, to send again, and what came back."""

    body: bytes
    headers: Mapping[str, str]
    result: EgressResult
    user_agent: str
    deadline_s: float
    deferred_ok: bool = False


async def send(
    client: EgressClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    user_agent: str,
    deadline_s: float,
    *,
    deferred_ok: bool = False,
) -> SentRequest:
    """Send as the platform does: only a dispatch may be answered by a bare 202."""
    result = await client.post_json(
        url,
        body,
        user_agent=user_agent,
        deadline=deadline_s,
        headers=headers,
        deferred_ok=deferred_ok,
    )
    return SentRequest(body, dict(headers), result, user_agent, deadline_s, deferred_ok)


async def resend(client: EgressClient, url: str, sent: SentRequest) -> SentRequest:
    """``sent`` again, exactly as it was sent."""
    return await send(
        client,
        url,
        sent.body,
        sent.headers,
        sent.user_agent,
        sent.deadline_s,
        deferred_ok=sent.deferred_ok,
    )
