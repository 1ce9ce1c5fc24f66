"""Re-judging a finished cage.v1 match with the current judge: new findings, and the outcome
they decide.

Each defender reply that was played (not failed) is judged again from its stored message
and the match's material; the other turns keep what they recorded (a failed turn has no
findings to change; ``sends`` and other bookkeeping stay). The outcome is decided again
from the new records. A match the new verdicts would have let go on (the old judge ended it
with a breach the new one does not see, before the sixth turn) cannot be decided from what
was played: it is reported and left as it is. Each defender turn whose findings change
(a leak, a partial disclosure or a hijack found, lost, or found another way) is listed too,
whether or not the outcome changes. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from palaestra.protocol.cage import Side
from palaestra.rules.cage.material import Material
from palaestra.rules.cage.outcome import TurnRecord, decide, side_of_turn
from palaestra.rules.judge import judge_reply

__all__ = ["FINDING_KINDS", "FindingsChange", "PlayedTurn", "RejudgeChange", "Rejudged", "rejudge"]

#: The kinds of finding whose changes re-judging lists, in the judge's order.
FINDING_KINDS = ("leak", "partial", "hijack")


class RejudgeChange(StrEnum):
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
class FindingsChange:
    """One kind of finding on one defender turn, as recorded and as the judge finds it now:
    each finding's chain of views and rule."""

    turn: int
    kind: str
    recorded: tuple[str, ...]
    now: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rejudged:
    """A match judged again: each turn's new findings, and the outcome they decide."""

    verdict: RejudgeChange
    outcome: str | None
    decided_by: str | None
    findings: dict[int, dict[str, Any]] = field(default_factory=dict)
    at_turn: int | None = None
    how: str | None = None  # the decisive finding's chain of views and rule
    changes: tuple[FindingsChange, ...] = ()


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


def _rows(findings: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    rows = findings.get(kind)
    return [row for row in rows if isinstance(row, Mapping)] if isinstance(rows, list) else []


def _changes(
    turns: Sequence[PlayedTurn], now: Mapping[int, Mapping[str, Any]]
) -> Iterator[FindingsChange]:
    for turn in turns:
        for kind in FINDING_KINDS:
            before, after = _rows(turn.findings, kind), _rows(now[turn.turn], kind)
            # Findings recorded before they named their rule are compared by their chain.
            key = "how" if all("how" in row for row in before) else "transformation"
            was = tuple(str(row.get(key, "?")) for row in before)
            found = tuple(str(row.get(key, "?")) for row in after)
            if was != found:
                yield FindingsChange(turn.turn, kind, was, found)


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
    changes = tuple(_changes(turns, findings))
    result = decide([_record(t, findings[t.turn]) for t in turns])
    if result is None:
        return Rejudged(RejudgeChange.UNDECIDABLE, outcome, decided_by, findings, changes=changes)
    new = (result.winner.value, result.decided_by.value)
    kind = result.decided_by.value
    decisive = findings[result.turn].get(kind) if kind in ("leak", "hijack") else None
    how = decisive[0].get("how") if decisive else None
    verdict = RejudgeChange.SAME if new == (outcome, decided_by) else RejudgeChange.CHANGED
    return Rejudged(verdict, *new, findings, result.turn, how, changes)
