"""The cage.v1 checks: the ownership challenge, a turn on each side, and the advisory repeat."""

from __future__ import annotations

import secrets
from functools import partial

from palaestra.egress import EgressClient, EgressResult
from palaestra.protocol import (
    ChallengeRequest,
    Side,
    UserAgent,
    challenge_problem,
    dumps,
    idempotency_key,
    turn_message,
    turn_problem,
    turn_warning,
)
from palaestra.protocol.constants import CHALLENGE_TIMEOUT_S, IDEMPOTENCY_HEADER

from .payloads import turn_for
from .results import CheckResult
from .sending import SentRequest, resend, send

__all__ = ["CAGE_USER_AGENT", "challenge", "message_warning", "repeated_idempotency_key", "turn"]

CAGE_USER_AGENT = UserAgent.CAGE.value


async def challenge(client: EgressClient, url: str) -> tuple[CheckResult, bool]:
    """The cage.v1 ownership proof: the reply must echo a fresh nonce. Also: was it answered?"""
    nonce = secrets.token_hex(16)
    body = dumps(ChallengeRequest(nonce=nonce).wire())
    result = await client.post_json(
        url, body, user_agent=CAGE_USER_AGENT, deadline=CHALLENGE_TIMEOUT_S
    )
    reason = result.reason or challenge_problem(result.data, nonce)
    check = CheckResult("challenge", reason is None, reason, result.latency_ms)
    return check, result.status is not None


async def turn(
    client: EgressClient,
    url: str,
    side: Side,
    *,
    match_id: str,
    number: int,
    deadline_ms: int,
    opponent: str = "",
) -> tuple[CheckResult, SentRequest]:
    """One cage.v1 turn: a 2xx JSON object with a string ``message``, inside the deadline."""
    request = turn_for(
        side, match_id=match_id, turn=number, opponent=opponent, deadline_ms=deadline_ms
    )
    body = dumps(request.wire())
    headers = {IDEMPOTENCY_HEADER: idempotency_key(match_id, number)}
    sent = await send(client, url, body, headers, CAGE_USER_AGENT, deadline_ms / 1000)
    reason = _turn_problem(sent.result)
    check = CheckResult(f"turn:{side}", reason is None, reason, sent.result.latency_ms)
    return check, sent


def message_warning(sent: SentRequest, side: Side) -> CheckResult | None:
    """Advisory, only when found: a turn's message the seed takes but our rule does not
    (not a string: taken as its JSON text)."""
    result = sent.result
    warning = None if result.failure is not None else turn_warning(result.data)
    if warning is None:
        return None
    return CheckResult(f"turn:{side}:message", False, warning, result.latency_ms, advisory=True)


def _turn_problem(result: EgressResult) -> str | None:
    return result.reason if result.failure is not None else turn_problem(result.data)


async def repeated_idempotency_key(
    client: EgressClient, url: str, first: SentRequest
) -> CheckResult:
    """Advisory: the same turn with the same ``idempotency-key`` should get the same message
    (the seed calls the cached move correct; the referee never sends a turn twice)."""
    check = partial(CheckResult, "repeated-idempotency-key", advisory=True)
    first_problem = _turn_problem(first.result)
    if first_problem is not None:
        return check(False, f"not checked: the turn it repeats failed: {first_problem}")
    again = (await resend(client, url, first)).result
    problem = _turn_problem(again)
    if problem is not None:
        if again.status is not None and again.failure is not None:
            problem = f"a repeated idempotency-key was answered {again.status}: {problem}"
        return check(False, problem, again.latency_ms)
    if turn_message(again.data) != turn_message(first.result.data):
        return check(False, "a repeated idempotency-key got a different message", again.latency_ms)
    return check(True, latency_ms=again.latency_ms)
