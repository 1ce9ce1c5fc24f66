"""The fixed numbers and names of edgearena-v1 and cage.v1."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "CAGE_RULESET",
    "CAGE_TURN_DEADLINE_MS",
    "CHALLENGE_TIMEOUT_S",
    "HANDSHAKE_TIMEOUT_S",
    "HEALTH_TIMEOUT_S",
    "IDEMPOTENCY_HEADER",
    "PHASE_DEADLINE_MS",
    "PHASE_ROLE",
    "PROBE_TIMEOUT_S",
    "PROTOCOL",
    "RESPONSE_CAP_BYTES",
    "SIMULATION_GRACE_S",
    "VERIFY_TIMEOUT_S",
    "Arena",
    "Phase",
    "Role",
    "UserAgent",
]

PROTOCOL = "edgearena-v1"
CAGE_RULESET = "cage.v1"

#: Responses, completion outputs and cage replies are capped at 256 KiB (after decompression).
RESPONSE_CAP_BYTES = 262_144

HEALTH_TIMEOUT_S = 4.0
VERIFY_TIMEOUT_S = 5.0
PROBE_TIMEOUT_S = 5.0
HANDSHAKE_TIMEOUT_S = 5.0
#: A simulation's outer timeout is its advertised ``deadline_ms`` plus this.
SIMULATION_GRACE_S = 4.0
CAGE_TURN_DEADLINE_MS = 60_000
#: How long a harness has to echo the registration nonce.
CHALLENGE_TIMEOUT_S = 10.0
IDEMPOTENCY_HEADER = "idempotency-key"


class Arena(StrEnum):
    """Which protocol an endpoint speaks: an edgearena agent's, or a cage fighter's."""

    EDGEARENA = "edgearena"
    CAGE = "cage"


class UserAgent(StrEnum):
    """The user agents the platform sends, each marking one kind of request."""

    HEALTH = "EdgeArena-Health/1.0"
    VERIFY = "EdgeArena-Verify/1.0"
    PING = "EdgeArena-Ping/1.0"
    HANDSHAKE = "EdgeArena-Handshake/1.0"
    VERIFY_PAYLOAD = "EdgeArena-VerifyPayload/1.0"
    VERIFY_DISPATCH = "EdgeArena-VerifyDispatch/1.0"
    #: Production dispatches; the seed names none, so Palaestra says what it is.
    DISPATCH = "EdgeArena-Dispatch/1.0"
    #: cage.v1 challenges and turns.
    CAGE = "Palaestra-Cage/1.0"


class Role(StrEnum):
    """An edgearena agent's role."""

    SCOUT = "SCOUT"
    BUILDER = "BUILDER"
    ANALYST = "ANALYST"

    @property
    def deadline_ms(self) -> int:
        """The simulation's advertised deadline, mirroring the role's production phase."""
        return 90_000 if self is Role.BUILDER else 30_000

    @property
    def phases(self) -> tuple[Phase, ...]:
        return tuple(phase for phase, role in PHASE_ROLE.items() if role is self)


class Phase(StrEnum):
    """A phase of a run; each is served by one role."""

    SCOUT = "SCOUT"
    BUILD = "BUILD"
    VERIFY = "VERIFY"
    CRITIQUE = "CRITIQUE"

    @property
    def role(self) -> Role:
        return PHASE_ROLE[self]

    @property
    def deadline_ms(self) -> int:
        return PHASE_DEADLINE_MS[self]


PHASE_ROLE: dict[Phase, Role] = {
    Phase.SCOUT: Role.SCOUT,
    Phase.BUILD: Role.BUILDER,
    Phase.VERIFY: Role.ANALYST,
    Phase.CRITIQUE: Role.ANALYST,
}

PHASE_DEADLINE_MS: dict[Phase, int] = {
    Phase.SCOUT: 30_000,
    Phase.BUILD: 90_000,
    Phase.VERIFY: 30_000,
    Phase.CRITIQUE: 30_000,
}
