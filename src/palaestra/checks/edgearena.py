"""The edgearena checks only ``palaestra check`` runs, after the wizard's.

The health ping; a signed production dispatch per phase of the role, with
full schema validation (``dispatch:<PHASE>``) and its timing against the
phase's deadline; and two advisory checks of what the seed only recommends:
a correctly signed dispatch past the replay window (``stale-timestamp``) and
the same dispatch sent twice (``repeated-task-id``).
"""

from __future__ import annotations

from functools import partial

from palaestra.clock import Clock, FrozenClock
from palaestra.egress import EgressClient, EgressResult
from palaestra.protocol import (
    FailureKind,
    Phase,
    SchemaViolation,
    UserAgent,
    answers_later,
    dumps,
    hmac_signer,
    token_count_warnings,
    validate_envelope,
)
from palaestra.protocol.constants import HEALTH_TIMEOUT_S
from palaestra.protocol.signing import REPLAY_WINDOW_SECONDS

from .payloads import dispatch_for
from .results import CheckResult
from .sending import SentRequest, resend, send

__all__ = [
    "DISPATCH_USER_AGENT",
    "STALE_BY_SECONDS",
    "dispatch",
    "health",
    "repeated_task_id",
    "stale_timestamp",
]

DISPATCH_USER_AGENT = UserAgent.DISPATCH.value
#: How old the stale-timestamp check's signature is: past the ±300 s window, with room for skew.
STALE_BY_SECONDS = REPLAY_WINDOW_SECONDS + 60


async def health(client: EgressClient, url: str) -> CheckResult:
    """The periodic health ping: ``GET`` with ``EdgeArena-Health/1.0``, 4 s, 2xx required."""
    result = await client.get(url, user_agent=UserAgent.HEALTH, deadline=HEALTH_TIMEOUT_S)
    return CheckResult("health", result.ok, result.reason, result.latency_ms)


async def dispatch(
    client: EgressClient, url: str, phase: Phase, *, key: str, clock: Clock, deadline_ms: int
) -> tuple[list[CheckResult], SentRequest]:
    """A signed production dispatch: ``dispatch:<PHASE>`` (envelope and full schema) and timing."""
    payload = dispatch_for(phase)
    body = dumps(payload.wire())
    headers = hmac_signer(key, clock, payload.task_id)(url, body)
    sent = await send(
        client, url, body, headers, DISPATCH_USER_AGENT, deadline_ms / 1000, deferred_ok=True
    )
    result = sent.result
    name = f"dispatch:{phase}"
    if result.failure is not None:
        valid = CheckResult(name, False, result.reason, result.latency_ms)
    elif answers_later(result.status, result.data):
        why = (
            "answered 202 (async completion), which palaestra check cannot follow: "
            "answer synchronously to be checked"
        )
        valid = CheckResult(name, False, why, result.latency_ms)
    else:
        try:
            validate_envelope(result.data, phase, payload.candidate_id)
        except SchemaViolation as exc:
            valid = CheckResult(name, False, exc.message, result.latency_ms)
        else:
            valid = CheckResult(name, True, latency_ms=result.latency_ms)
    checks = [valid, _timing(f"{name}:timing", result, deadline_ms)]
    counts = token_count_warnings(result.data) if valid.passed else []
    if counts:  # the seed types the counts as numbers: our stricter rule only warns
        warning = CheckResult(f"{name}:token-counts", False, "; ".join(counts), advisory=True)
        checks.append(warning)
    return checks, sent


def _timing(name: str, result: EgressResult, deadline_ms: int) -> CheckResult:
    failure = result.failure
    if result.status is None or (failure is not None and failure.kind is FailureKind.TIMEOUT):
        return CheckResult(name, False, f"not reached: {result.reason}", result.latency_ms)
    if result.latency_ms <= deadline_ms:
        return CheckResult(name, True, latency_ms=result.latency_ms)
    late = f"answered after {result.latency_ms:.0f}ms, the deadline is {deadline_ms}ms"
    return CheckResult(name, False, late, result.latency_ms)


async def stale_timestamp(
    client: EgressClient, url: str, phase: Phase, *, key: str, clock: Clock, deadline_ms: int
) -> CheckResult:
    """Advisory: a correctly signed dispatch past the replay window should get a 4xx."""
    payload = dispatch_for(phase)
    body = dumps(payload.wire())
    earlier = FrozenClock(clock.now() - STALE_BY_SECONDS)
    headers = hmac_signer(key, earlier, payload.task_id)(url, body)
    sent = await send(client, url, body, headers, DISPATCH_USER_AGENT, deadline_ms / 1000)
    result = sent.result
    check = partial(CheckResult, "stale-timestamp", advisory=True)
    if result.status is not None and 400 <= result.status < 500:
        return check(True, latency_ms=result.latency_ms)
    if result.status is None:
        return check(False, result.reason, result.latency_ms)
    reason = f"a timestamp {STALE_BY_SECONDS}s old was answered {result.status}, expected a 4xx"
    return check(False, reason, result.latency_ms)


async def repeated_task_id(client: EgressClient, url: str, first: SentRequest) -> CheckResult:
    """Advisory: the same signed dispatch again should get the same answer, or a 4xx."""
    check = partial(CheckResult, "repeated-task-id", advisory=True)
    if not _answered(first.result):
        return check(False, f"not checked: the dispatch it repeats failed: {_why(first.result)}")
    again = (await resend(client, url, first)).result
    if again.status is not None and 400 <= again.status < 500:
        return check(True, f"the repeat was refused with {again.status}", again.latency_ms)
    if again.failure is not None:
        return check(False, again.reason, again.latency_ms)
    if again.status == first.result.status and again.data == first.result.data:
        return check(True, "the repeat got the same answer", again.latency_ms)
    return check(False, "a repeated taskId got a different answer", again.latency_ms)


def _answered(result: EgressResult) -> bool:
    return result.failure is None and result.status is not None and 200 <= result.status < 300


def _why(result: EgressResult) -> str:
    return result.reason or f"answered {result.status}"
