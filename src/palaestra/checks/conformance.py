"""``palaestra check``: every check the platform runs on an agent, and the ones only it runs.

edgearena: the probe, the health ping, the wizard (handshake, unsigned and
signed simulation), then a signed production dispatch per phase of the role
with full schema validation and its timing, and the advisory checks: a forged
signature, a stale timestamp, and a repeated taskId. cage: the nonce
challenge, a turn on each side, and the advisory repeated idempotency key.
Each check is a :class:`CheckResult` with the same names and reason lines as
on the platform; an advisory check tests what the seeds only recommend, so
its failure is a warning (binding under ``--strict``).

The deadlines are the protocol's unless a :class:`Deadlines` says otherwise.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType

from palaestra.clock import Clock
from palaestra.egress import EgressClient, EgressResult
from palaestra.ids import new_id
from palaestra.protocol import (
    ChallengeRequest,
    FailureKind,
    Phase,
    Role,
    SchemaViolation,
    Side,
    UserAgent,
    answers_later,
    challenge_problem,
    dumps,
    idempotency_key,
    signed_headers,
    turn_problem,
    validate_envelope,
)
from palaestra.protocol.constants import (
    CAGE_TURN_DEADLINE_MS,
    CHALLENGE_TIMEOUT_S,
    HANDSHAKE_TIMEOUT_S,
    HEALTH_TIMEOUT_S,
    IDEMPOTENCY_HEADER,
    PHASE_DEADLINE_MS,
    PROBE_TIMEOUT_S,
    SIMULATION_GRACE_S,
    Arena,
)
from palaestra.protocol.signing import REPLAY_WINDOW_SECONDS

from . import wizard
from .payloads import dispatch_for, turn_for
from .results import CheckResult

__all__ = [
    "CAGE_USER_AGENT",
    "CHALLENGE_TIMEOUT_S",
    "DISPATCH_USER_AGENT",
    "STALE_BY_SECONDS",
    "Arena",
    "Deadlines",
    "Progress",
    "SentRequest",
    "cage_check_names",
    "challenge",
    "check_cage",
    "check_edgearena",
    "dispatch",
    "edgearena_check_names",
    "health",
    "repeated_idempotency_key",
    "repeated_task_id",
    "run_checks",
    "stale_timestamp",
    "turn",
]

DISPATCH_USER_AGENT = UserAgent.DISPATCH.value
CAGE_USER_AGENT = UserAgent.CAGE.value
#: How old the stale-timestamp check's signature is: past the ±300 s window, with room for skew.
STALE_BY_SECONDS = REPLAY_WINDOW_SECONDS + 60
NEEDS_KEY = "not run: signed checks need the agent's key (--key)"
NOT_PROBED = "not run: the endpoint did not pass the probe"
NOT_REACHED = "not run: the endpoint did not answer the challenge"

#: Told which check is about to wait, and for how long at most (seconds).
Progress = Callable[[str, float], None]


_SIMULATION_PHASE: Mapping[Role, Phase] = MappingProxyType(
    {Role.SCOUT: Phase.SCOUT, Role.BUILDER: Phase.BUILD, Role.ANALYST: Phase.CRITIQUE}
)


@dataclass(frozen=True, slots=True)
class Deadlines:
    """The deadlines an agent is held to: the protocol's by default."""

    phase_ms: Mapping[Phase, int] = field(
        default_factory=lambda: MappingProxyType(dict(PHASE_DEADLINE_MS))
    )
    turn_ms: int = CAGE_TURN_DEADLINE_MS

    @classmethod
    def scaled(cls, factor: float) -> Deadlines:
        """Every deadline multiplied by ``factor`` (tests use a small one)."""
        phases = {phase: max(1, round(ms * factor)) for phase, ms in PHASE_DEADLINE_MS.items()}
        return cls(MappingProxyType(phases), max(1, round(CAGE_TURN_DEADLINE_MS * factor)))

    def simulation_ms(self, role: Role) -> int:
        """A simulation advertises the deadline of the production phase it mirrors."""
        return self.phase_ms[_SIMULATION_PHASE[role]]


@dataclass(frozen=True, slots=True)
class SentRequest:
    """A request exactly as sent, to send again, and what came back."""

    body: bytes
    headers: Mapping[str, str]
    result: EgressResult
    user_agent: str
    deadline_s: float
    deferred_ok: bool = False


def edgearena_check_names(role: Role) -> list[str]:
    """The edgearena checks, in the order they run."""
    names = ["probe", "health", "handshake"]
    names += [f"simulation:{name}" for name in wizard.SIMULATION_CHECKS]
    names += [f"signed-simulation:{name}" for name in wizard.SIMULATION_CHECKS]
    for phase in role.phases:
        names += [f"dispatch:{phase}", f"dispatch:{phase}:timing"]
    return [*names, "tampered-signature", "stale-timestamp", "repeated-task-id"]


def cage_check_names() -> list[str]:
    """The cage checks, in the order they run."""
    return ["challenge", "turn:attacker", "turn:defender", "repeated-idempotency-key"]


async def run_checks(
    client: EgressClient,
    url: str,
    arena: Arena,
    *,
    clock: Clock,
    role: Role | None = None,
    key: str | None = None,
    deadlines: Deadlines | None = None,
    progress: Progress | None = None,
) -> list[CheckResult]:
    """Every check for ``arena``; ``role`` is required for edgearena."""
    if arena is Arena.CAGE:
        return await check_cage(client, url, deadlines=deadlines, progress=progress)
    if role is None:
        raise ValueError("edgearena checks need the agent's role")
    return await check_edgearena(
        client, url, role, key=key, clock=clock, deadlines=deadlines, progress=progress
    )


async def check_edgearena(
    client: EgressClient,
    url: str,
    role: Role,
    *,
    key: str | None,
    clock: Clock,
    deadlines: Deadlines | None = None,
    progress: Progress | None = None,
) -> list[CheckResult]:
    """The edgearena checks of :func:`edgearena_check_names`; signed ones need ``key``."""
    deadlines = deadlines or Deadlines()
    tell = progress or _silent
    names = edgearena_check_names(role)
    simulation_ms = deadlines.simulation_ms(role)
    simulation_s = simulation_ms / 1000 + SIMULATION_GRACE_S

    tell("probe", PROBE_TIMEOUT_S)
    results = [await wizard.probe(client, url)]
    if not results[0].passed:
        return results + [CheckResult(name, False, NOT_PROBED) for name in names[1:]]
    tell("health", HEALTH_TIMEOUT_S)
    results.append(await health(client, url))
    tell("handshake", HANDSHAKE_TIMEOUT_S)
    results.append(await wizard.handshake(client, url))
    tell("simulation", simulation_s)
    results += await wizard.simulation(client, url, role, clock=clock, deadline_ms=simulation_ms)
    if key is None:
        signed = names[len(results) :]
        return results + [CheckResult(name, False, NEEDS_KEY) for name in signed]

    tell("signed-simulation", simulation_s)
    results += await wizard.simulation(
        client, url, role, key=key, clock=clock, deadline_ms=simulation_ms
    )
    first: SentRequest | None = None
    for phase in role.phases:
        tell(f"dispatch:{phase}", deadlines.phase_ms[phase] / 1000)
        checks, sent = await dispatch(
            client, url, phase, key=key, clock=clock, deadline_ms=deadlines.phase_ms[phase]
        )
        results += checks
        first = first or sent
    assert first is not None  # every role serves at least one phase
    phase = role.phases[0]
    tell("tampered-signature", deadlines.phase_ms[phase] / 1000)
    results.append(
        await wizard.tampered_signature(
            client, url, role, key=key, clock=clock, deadline_ms=deadlines.phase_ms[phase]
        )
    )
    tell("stale-timestamp", deadlines.phase_ms[phase] / 1000)
    results.append(
        await stale_timestamp(
            client, url, phase, key=key, clock=clock, deadline_ms=deadlines.phase_ms[phase]
        )
    )
    tell("repeated-task-id", first.deadline_s)
    results.append(await repeated_task_id(client, url, first))
    return results


async def check_cage(
    client: EgressClient,
    url: str,
    *,
    deadlines: Deadlines | None = None,
    progress: Progress | None = None,
) -> list[CheckResult]:
    """The cage checks of :func:`cage_check_names`."""
    deadlines = deadlines or Deadlines()
    tell = progress or _silent
    tell("challenge", CHALLENGE_TIMEOUT_S)
    proof, answered = await challenge(client, url)
    if not answered:
        return [proof] + [CheckResult(name, False, NOT_REACHED) for name in cage_check_names()[1:]]
    match_id = new_id()
    tell("turn:attacker", deadlines.turn_ms / 1000)
    attack, sent_attack = await turn(
        client, url, Side.ATTACKER, match_id=match_id, number=1, deadline_ms=deadlines.turn_ms
    )
    opponent = sent_attack.result.data.get("message", "") if attack.passed else ""
    tell("turn:defender", deadlines.turn_ms / 1000)
    defence, sent_defence = await turn(
        client,
        url,
        Side.DEFENDER,
        match_id=match_id,
        number=2,
        opponent=opponent,
        deadline_ms=deadlines.turn_ms,
    )
    tell("repeated-idempotency-key", deadlines.turn_ms / 1000)
    repeat = await repeated_idempotency_key(client, url, sent_defence)
    return [proof, attack, defence, repeat]


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
    headers = signed_headers(key, url, body, int(clock.now()), payload.task_id).as_dict()
    sent = await _send(
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
    return [valid, _timing(f"{name}:timing", result, deadline_ms)], sent


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
    stamp = int(clock.now()) - STALE_BY_SECONDS
    headers = signed_headers(key, url, body, stamp, payload.task_id).as_dict()
    sent = await _send(client, url, body, headers, DISPATCH_USER_AGENT, deadline_ms / 1000)
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
    again = (await _resend(client, url, first)).result
    if again.status is not None and 400 <= again.status < 500:
        return check(True, f"the repeat was refused with {again.status}", again.latency_ms)
    if again.failure is not None:
        return check(False, again.reason, again.latency_ms)
    if again.status == first.result.status and again.data == first.result.data:
        return check(True, "the repeat got the same answer", again.latency_ms)
    return check(False, "a repeated taskId got a different answer", again.latency_ms)


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
    sent = await _send(client, url, body, headers, CAGE_USER_AGENT, deadline_ms / 1000)
    reason = _turn_problem(sent.result)
    check = CheckResult(f"turn:{side}", reason is None, reason, sent.result.latency_ms)
    return check, sent


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
    again = (await _resend(client, url, first)).result
    problem = _turn_problem(again)
    if problem is not None:
        if again.status is not None and again.failure is not None:
            problem = f"a repeated idempotency-key was answered {again.status}: {problem}"
        return check(False, problem, again.latency_ms)
    if again.data["message"] != first.result.data["message"]:
        return check(False, "a repeated idempotency-key got a different message", again.latency_ms)
    return check(True, latency_ms=again.latency_ms)


async def _send(
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


async def _resend(client: EgressClient, url: str, sent: SentRequest) -> SentRequest:
    return await _send(
        client,
        url,
        sent.body,
        sent.headers,
        sent.user_agent,
        sent.deadline_s,
        deferred_ok=sent.deferred_ok,
    )


def _answered(result: EgressResult) -> bool:
    return result.failure is None and result.status is not None and 200 <= result.status < 300


def _why(result: EgressResult) -> str:
    return result.reason or f"answered {result.status}"


def _silent(name: str, deadline_s: float) -> None:
    pass
