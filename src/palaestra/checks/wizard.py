"""The edgearena-v1 registration checks, shared by the platform's wizard and ``palaestra check``.

Each step returns named :class:`CheckResult` values; the names and reason
lines are the same wherever they are shown.
"""

from __future__ import annotations

from palaestra.clock import Clock
from palaestra.egress import EgressClient, EgressResult
from palaestra.ids import new_id
from palaestra.protocol import (
    SIGNATURE_HEADER,
    HandshakeRequest,
    Role,
    SchemaViolation,
    UserAgent,
    check_required_keys,
    dumps,
    hmac_signer,
)
from palaestra.protocol.constants import (
    HANDSHAKE_TIMEOUT_S,
    PHASE_DEADLINE_MS,
    PROBE_TIMEOUT_S,
    RESPONSE_CAP_BYTES,
    SIMULATION_GRACE_S,
)
from palaestra.protocol.edgearena import SimulationRequest
from palaestra.protocol.violations import json_type

from .payloads import dispatch_for
from .results import CheckResult
from .samples import simulation_for

__all__ = [
    "ACCEPTS_FORGED",
    "REJECTS_FORGED",
    "SIMULATION_CAP_BYTES",
    "SIMULATION_CHECKS",
    "TAMPERED",
    "handshake",
    "probe",
    "run_wizard",
    "simulation",
    "tampered_signature",
]

SIMULATION_CHECKS = ("reachable", "accepts-post", "returns-json", "required-fields", "timing")
#: How much of a simulation's reply is read. The seed's five checks set no size, so a reply
#: past the production cap (262,144 bytes) is still judged by them, and the cap is a warning
#: (``simulation:size``); past this one, the reply is not read: it fails ``returns-json``.
SIMULATION_CAP_BYTES = 4 * RESPONSE_CAP_BYTES
#: The advisory forged-signature check, and what it finds either way.
TAMPERED = "tampered-signature"
REJECTS_FORGED = "rejects forged signatures"
ACCEPTS_FORGED = "accepts forged signatures"


async def probe(client: EgressClient, url: str) -> CheckResult:
    """Pre-registration probe: ``GET`` with ``EdgeArena-Ping/1.0``; any status below 500 passes."""
    result = await client.get(url, user_agent=UserAgent.PING, deadline=PROBE_TIMEOUT_S)
    if result.status is not None and result.status < 500:
        return CheckResult("probe", True, latency_ms=result.latency_ms)
    return CheckResult("probe", False, result.reason, result.latency_ms)


async def handshake(client: EgressClient, url: str) -> CheckResult:
    """Handshake: a 2xx reply whose body is a JSON object."""
    body = dumps(HandshakeRequest(request_id=new_id()).wire())
    result = await client.post_json(
        url, body, user_agent=UserAgent.HANDSHAKE, deadline=HANDSHAKE_TIMEOUT_S
    )
    if result.failure is not None:
        code = result.failure.handshake_error_code
        return CheckResult("handshake", False, result.reason, result.latency_ms, code)
    if not isinstance(result.data, dict):
        reason = f"Validation failed: body: expected an object, got {json_type(result.data)}"
        return CheckResult("handshake", False, reason, result.latency_ms, "non-json")
    return CheckResult("handshake", True, latency_ms=result.latency_ms)


async def simulation(
    client: EgressClient,
    url: str,
    role: Role,
    *,
    key: str | None = None,
    clock: Clock,
    deadline_ms: int | None = None,
) -> list[CheckResult]:
    """The role's simulation, unsigned or (with ``key``) signed: five named checks.

    ``deadline_ms`` replaces the role's advertised deadline (tests shorten it).
    """
    deadline = role.deadline_ms if deadline_ms is None else deadline_ms
    payload = _simulation_payload(role, deadline_ms)
    body = dumps(payload.wire())
    signed = key is not None
    result = await client.post_json(
        url,
        body,
        user_agent=UserAgent.VERIFY_DISPATCH if signed else UserAgent.VERIFY_PAYLOAD,
        deadline=deadline / 1000 + SIMULATION_GRACE_S,
        signer=hmac_signer(key, clock, payload.task_id) if key is not None else None,
        cap_bytes=SIMULATION_CAP_BYTES,
    )
    prefix = "signed-simulation" if signed else "simulation"
    checks = [
        CheckResult(f"{prefix}:{name}", passed, reason, result.latency_ms)
        for name, (passed, reason) in zip(
            SIMULATION_CHECKS, _judge_simulation(result, role, deadline), strict=True
        )
    ]
    if result.failure is None and len(result.body) > RESPONSE_CAP_BYTES:
        # Our cap, stricter than the seed's checks: a production reply this size fails.
        oversized = (
            f"the reply is {len(result.body)} bytes; a production reply over "
            f"{RESPONSE_CAP_BYTES} bytes fails (External agent response exceeded "
            f"{RESPONSE_CAP_BYTES} bytes)"
        )
        checks.append(CheckResult(f"{prefix}:size", False, oversized, advisory=True))
    return checks


def _simulation_payload(role: Role, deadline_ms: int | None) -> SimulationRequest:
    payload = simulation_for(role)
    if deadline_ms is None:
        return payload
    return payload.model_copy(update={"deadline_ms": deadline_ms})


def _judge_simulation(
    result: EgressResult, role: Role, deadline_ms: int
) -> list[tuple[bool, str | None]]:
    reachable = result.status is not None
    if not reachable:
        why = f"not reached: {result.reason}"
        return [(False, result.reason)] + [(False, why)] * 4
    accepts_post = result.status is not None and 200 <= result.status < 300
    checks: list[tuple[bool, str | None]] = [(True, None)]
    checks.append((accepts_post, None if accepts_post else result.reason))
    if not accepts_post:
        checks.append((False, f"not checked: {result.reason}"))
        checks.append((False, f"not checked: {result.reason}"))
    elif result.failure is not None:
        checks.append((False, result.reason))
        checks.append((False, f"not checked: {result.reason}"))
    elif not isinstance(result.data, dict):
        reason = f"Validation failed: body: expected an object, got {json_type(result.data)}"
        checks.append((False, reason))
        checks.append((False, f"not checked: {reason}"))
    else:
        checks.append((True, None))
        try:
            check_required_keys(role, result.data)
        except SchemaViolation as exc:
            checks.append((False, exc.message))
        else:
            checks.append((True, None))
    on_time = result.latency_ms <= deadline_ms
    late = f"answered after {result.latency_ms:.0f}ms, the deadline is {deadline_ms}ms"
    checks.append((on_time, None if on_time else late))
    return checks


async def tampered_signature(
    client: EgressClient,
    url: str,
    role: Role,
    *,
    key: str,
    clock: Clock,
    deadline_ms: int | None = None,
) -> CheckResult:
    """Advisory: a production dispatch with a forged signature should be refused with a 4xx.

    The request is what an agent really verifies: a dispatch of the role's first
    phase, with a fresh taskId, the production user agent and the three signed
    headers, its signature corrupted in one hex digit. The seed asks agents to
    verify signatures but does not make it an admission check, so anything but
    a 4xx is a warning ("accepts forged signatures"), not a failure.
    """
    phase = role.phases[0]
    deadline = PHASE_DEADLINE_MS[phase] if deadline_ms is None else deadline_ms
    payload = dispatch_for(phase)
    body = dumps(payload.wire())
    headers = hmac_signer(key, clock, payload.task_id)(url, body)
    headers[SIGNATURE_HEADER] = _corrupted(headers[SIGNATURE_HEADER])
    result = await client.post_json(
        url,
        body,
        user_agent=UserAgent.DISPATCH,
        deadline=deadline / 1000,
        headers=headers,
        deferred_ok=True,
    )
    if result.status is not None and 400 <= result.status < 500:
        return CheckResult(TAMPERED, True, REJECTS_FORGED, result.latency_ms, advisory=True)
    if result.status is None:
        answer = f"not refused: {result.reason}"
    else:
        answer = f"answered {result.status}, expected a 4xx"
    reason = f"{ACCEPTS_FORGED}: a dispatch with a corrupted signature was {answer}"
    return CheckResult(TAMPERED, False, reason, result.latency_ms, advisory=True)


def _corrupted(signature: str) -> str:
    """``signature`` with its last hex digit changed: well-formed, and wrong."""
    return signature[:-1] + ("0" if signature[-1] != "0" else "1")


async def run_wizard(
    client: EgressClient, url: str, role: Role, *, key: str, clock: Clock
) -> list[CheckResult]:
    """Wizard steps 3 to 5: handshake, unsigned and signed simulation, then the advisory
    forged-signature dispatch."""
    results = [await handshake(client, url)]
    results += await simulation(client, url, role, clock=clock)
    results += await simulation(client, url, role, key=key, clock=clock)
    results.append(await tampered_signature(client, url, role, key=key, clock=clock))
    return results
