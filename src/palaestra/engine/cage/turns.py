"""The turns of cage.v1 matches as the referee claims, plays and records them.

The referee plays a turn in three parts: *claim* (:mod:`.claims`), *move*
(:mod:`.entrants`) and *record* (:mod:`.records`); the two that touch the
store are written for a batch of matches, and :class:`~.desk.TurnDesk`
gathers concurrent claims and records into such batches. This module holds
what passes between the parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from palaestra.engine.cage.entrants import Move
from palaestra.protocol import Side, TurnRequest
from palaestra.rules.cage.material import Material
from palaestra.rules.cage.outcome import TurnRecord
from palaestra.store.models import Match

__all__ = [
    "LEASE_GRACE_S",
    "MATCH_COLUMNS",
    "Bout",
    "Claim",
    "Fighter",
    "Played",
    "Recorded",
    "Waiting",
    "lease_s",
    "record_of_move",
]

LEASE_GRACE_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class Fighter:
    """What playing a turn reads of a fighter."""

    id: str
    entrant_type: str | None
    endpoint_url: str | None
    provider: dict[str, Any] | None
    provider_key_sealed: str | None


@dataclass(frozen=True, slots=True)
class Bout:
    """A match as playing its turns needs it."""

    match_id: str
    material: Material
    attacker: Fighter
    defender: Fighter
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class Claim:
    """A turn this worker holds: what to send, to whom, and what came before."""

    bout: Bout
    turn: int
    lease: float  # the turn's started_at, as this worker wrote it
    request: TurnRequest
    earlier: tuple[TurnRecord, ...]  # the turns before this one, as recorded
    findings: dict[str, Any]  # this turn's findings so far (its send count)

    @property
    def match_id(self) -> str:
        return self.bout.match_id

    @property
    def material(self) -> Material:
        return self.bout.material

    @property
    def fighter(self) -> Fighter:
        """Who plays this turn."""
        return self.bout.attacker if self.request.side is Side.ATTACKER else self.bout.defender


@dataclass(frozen=True, slots=True)
class Waiting:
    """No turn to play now: the match is over (``finished``), or another worker holds its
    turn until ``retry_at``."""

    finished: bool
    turn: int | None = None
    retry_at: float | None = None


@dataclass(frozen=True, slots=True)
class Played:
    """A claimed turn's move, judged: its findings, and the arena's fault if there is one."""

    claim: Claim
    move: Move
    findings: dict[str, Any]
    fault: str | None = None


@dataclass(frozen=True, slots=True)
class Recorded:
    """What recording a turn did: ``held`` is false when another worker had taken it over."""

    held: bool
    finished: bool = False


def record_of_move(turn: int, failed: bool, findings: Mapping[str, Any]) -> TurnRecord:
    """What the outcome reads from a turn: whether it failed, and the judge's findings."""
    utility = findings.get("utility") or {}
    return TurnRecord(
        turn=turn,
        failed=failed,
        leak=bool(findings.get("leak")),
        hijack=bool(findings.get("hijack")),
        utility=bool(utility.get("held")),
    )


def lease_s(deadline_ms: int) -> float:
    """How long a claimed turn is held: its deadline and a grace."""
    return deadline_ms / 1000 + LEASE_GRACE_S


#: What claiming reads of a match.
MATCH_COLUMNS: Final = (
    Match.id,
    Match.status,
    Match.next_turn,
    Match.attacker_id,
    Match.defender_id,
    Match.deadline_ms,
    Match.material,
)
