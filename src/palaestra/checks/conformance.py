"""``palaestra check``: the plan and the runner of every check, in order, under the deadlines.

edgearena: the probe, the health ping, the wizard (handshake, unsigned and
signed simulation), then a signed production dispatch per phase of the role
with full schema validation and its timing, and the advisory checks: a forged
signature, a stale timestamp, and a repeated taskId. cage: the nonce
challenge, a turn on each side, and the advisory repeated idempotency key.
Each check is a :class:`CheckResult` with the same names and reason lines as
on the platform; an advisory check tests what the seeds only recommend, so
its failure is a warning (binding under ``--strict``).

The deadlines are the protocol's unless a :class:`Deadlines` says otherwise.
The checks themselves are in ``wizard`` (shared with the platform's
registration wizard), ``edgearena`` and ``cage``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from palaestra.clock import Clock
from palaestra.egress import EgressClient
from palaestra.ids import new_id
from palaestra.protocol import Phase, Role, Side, turn_message
from palaestra.protocol.constants import (
    CAGE_TURN_DEADLINE_MS,
    CHALLENGE_TIMEOUT_S,
    HANDSHAKE_TIMEOUT_S,
    HEALTH_TIMEOUT_S,
    PHASE_DEADLINE_MS,
    PROBE_TIMEOUT_S,
    SIMULATION_GRACE_S,
    Arena,
)

from . import wizard
from .cage import challenge, message_warning, repeated_idempotency_key, turn
from .edgearena import dispatch, health, repeated_task_id, stale_timestamp
from .results import CheckResult
from .sending import SentRequest

__all__ = [
    "Deadlines",
    "Progress",
    "cage_check_names",
    "check_cage",
    "check_edgearena",
    "edgearena_check_names",
    "run_checks",
]

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
    opponent = turn_message(sent_attack.result.data) if attack.passed else ""
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
    warned = [
        message_warning(sent_attack, Side.ATTACKER),
        message_warning(sent_defence, Side.DEFENDER),
    ]
    return [proof, attack, defence, repeat, *(check for check in warned if check is not None)]


def _silent(name: str, deadline_s: float) -> None:
    pass
