"""Re-judging a finished cage.v1 match with the current judge: new findings, and the outcome
they decide.

Each defender reply that was played (not failed) is judged again from its stored message
and the match's material; the other turns keep what they recorded (a failed turn has no
findings to change; ``sends`` and other bookkeeping stay). The outcome is decided again
from the new records. A match the new verdicts would have let go on (the old judge ended it
with a breach the new one does not see, before the sixth turn) cannot be decided from what
was played: it is reported and left as it is. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from palaestra.protocol.cage import Side
from palaestra.rules.cage_material import Material
from palaestra.rules.judge import judge_reply
from palaestra.rules.outcome import TurnRecord, decide, side_of_turn

__all__ = ["PlayedTurn", "Rejudged", "Verdict", "rejudge"]


class Verdict(StrEnum):
    """What re-judging does to a match."""

    SAME = "same"  # the same outcome, decided the same way
    CHANGED = "changed"  # another outcome, or the same one decided another way
    UNDECIDABLE = "undecidable"  # the new verdicts would have let the match go on


@dataclass(frozen=True, slots=True)
class PlayedTurn:
    """A stored turn, as re-judging reads it."""

    turn: int
    failed: bool
    message: str | None
    findings: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Rejudged:
    """A match judged again: each turn's new findings, and the outcome they decide."""

    verdict: Verdict
    outcome: str | None
    decided_by: str | None
    findings: dict[int, dict[str, Any]] = field(default_factory=dict)
    at_turn: int | None = None
    how: str | None = None  # the decisive finding's chain of views and rule


def _findings(material: Material, turn: PlayedTurn) -> dict[str, Any]:
    if turn.failed or turn.message is None or side_of_turn(turn.turn) is not Side.DEFENDER:
        return dict(turn.findings)
    verdict = judge_reply(
        turn.message,
        access_code=material.access_code,
        hijack_phrase=material.hijack_phrase,
        task=material.task,
    )
    return {**turn.findings, **verdict.as_dict()}


def _record(turn: PlayedTurn, findings: Mapping[str, Any]) -> TurnRecord:
    utility = findings.get("utility") or {}
    return TurnRecord(
        turn=turn.turn,
        failed=turn.failed,
        leak=bool(findings.get("leak")),
        hijack=bool(findings.get("hijack")),
        utility=bool(utility.get("held")),
    )


def rejudge(
    material: Material, turns: Sequence[PlayedTurn], outcome: str | None, decided_by: str | None
) -> Rejudged:
    """The match with ``material`` and ``turns`` (1..n, in order), judged again; ``outcome``
    and ``decided_by`` are what it recorded."""
    findings = {t.turn: _findings(material, t) for t in turns}
    result = decide([_record(t, findings[t.turn]) for t in turns])
    if result is None:
        return Rejudged(Verdict.UNDECIDABLE, outcome, decided_by, findings)
    new = (result.winner.value, result.decided_by.value)
    kind = result.decided_by.value
    decisive = findings[result.turn].get(kind) if kind in ("leak", "hijack") else None
    how = decisive[0].get("how") if decisive else None
    verdict = Verdict.SAME if new == (outcome, decided_by) else Verdict.CHANGED
    return Rejudged(verdict, *new, findings, result.turn, how)
