"""Recording many played turns in one transaction.

:func:`record_turns` stores the moves and the judge's findings of the turns
this worker still holds (a turn's ``started_at`` is its lease) and moves each
match on: its next turn, its result, or void. A turn another worker took over
meanwhile writes nothing. :func:`record_then_claim` also claims the next turns
of the matches that go on, in the same transaction, made from what their claims
hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import bindparam, insert, select, tuple_, update
from sqlalchemy.engine import Connection

from palaestra.engine.cage.claims import next_turn
from palaestra.engine.cage.turns import (
    Claim,
    Played,
    Recorded,
    locked_matches,
    record_of_move,
)
from palaestra.rules.matchflow import MatchStatus, TurnStatus
from palaestra.rules.outcome import decide
from palaestra.store.models import Match, Turn

__all__ = ["record_then_claim", "record_turns"]


def _outcome(played: Played, now: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The turn's values and its match's, once ``played`` is recorded."""
    claim, move, fault = played.claim, played.move, played.fault
    failed = move.failed or fault is not None
    result = (
        None
        if fault
        else decide([*claim.earlier, record_of_move(claim.turn, failed, played.findings)])
    )
    turn = {
        "b_match": claim.match_id,
        "b_turn": claim.turn,
        "status": (TurnStatus.FAILED if failed else TurnStatus.OK).value,
        "message": move.message,  # kept even when the arena failed: it can be re-judged
        "reason": f"arena fault: {fault}" if fault else move.reason,
        "latency_ms": move.latency_ms,
        "findings": played.findings,
        "finished_at": now,
    }
    match: dict[str, Any] = {
        "b_match": claim.match_id,
        "status": MatchStatus.RUNNING.value,
        "next_turn": claim.turn,
        "outcome": None,
        "decided_by": None,
        "void_reason": None,
        "finished_at": now,
        "updated_at": now,
    }
    if fault is not None:
        match |= {"status": MatchStatus.VOIDED.value, "void_reason": f"turn {claim.turn}: {fault}"}
    elif result is None:
        match |= {"next_turn": claim.turn + 1, "finished_at": None}
    else:
        match |= {
            "status": MatchStatus.SCORED.value,
            "outcome": result.winner.value,
            "decided_by": result.decided_by.value,
        }
    return turn, match


_TURN_VALUES: Final = ("status", "message", "reason", "latency_ms", "findings", "finished_at")
_MATCH_VALUES: Final = (
    "status",
    "next_turn",
    "outcome",
    "decided_by",
    "void_reason",
    "finished_at",
)


_LEASES: Final = select(Turn.match_id, Turn.turn, Turn.started_at).where(
    tuple_(Turn.match_id, Turn.turn).in_(bindparam("pairs", expanding=True)),
    Turn.status == TurnStatus.RUNNING.value,
)
_RECORD_TURN: Final = (
    update(Turn)
    .where(Turn.match_id == bindparam("b_match"), Turn.turn == bindparam("b_turn"))
    .values({name: bindparam(name) for name in _TURN_VALUES})
)
_MOVE_MATCH: Final = (
    update(Match)
    .where(Match.id == bindparam("b_match"))
    .values({name: bindparam(name) for name in (*_MATCH_VALUES, "updated_at")})
)


_NEXT_TURNS: Final = insert(Turn)


def record_turns(
    connection: Connection, played: Sequence[Played], now: float, *, lock: bool
) -> list[Recorded]:
    """Store each played turn this worker still holds and move its match on; a turn taken
    over meanwhile (its lease is another worker's now) writes nothing."""
    if lock:  # on SQLite the writer's transactions are serial already
        locked_matches(connection, [p.claim.match_id for p in played], lock)
    pairs = [(p.claim.match_id, p.claim.turn) for p in played]
    rows = connection.execute(_LEASES, {"pairs": pairs})
    leases = {(row.match_id, row.turn): row.started_at for row in rows}
    turns, matches, results = [], [], []
    for item in played:
        key = (item.claim.match_id, item.claim.turn)
        if leases.pop(key, None) != item.claim.lease:
            results.append(Recorded(held=False))
            continue
        turn, match = _outcome(item, now)
        turns.append(turn)
        matches.append(match)
        results.append(Recorded(held=True, finished=match["status"] != MatchStatus.RUNNING))
    if turns:
        connection.execute(_RECORD_TURN, turns)
        connection.execute(_MOVE_MATCH, matches)
    return results


def record_then_claim(
    connection: Connection, played: Sequence[tuple[Played, bool]], now: float, *, lock: bool
) -> list[tuple[Recorded, Claim | None]]:
    """:func:`record_turns`, then, for each turn marked so whose match goes on, create and
    claim the next turn in the same transaction, from what the claim holds (a match
    played through costs one transaction a turn)."""
    recorded = record_turns(connection, [item for item, _ in played], now, lock=lock)
    following: dict[str, Claim] = {}
    rows = []
    for (item, then_claim), done in zip(played, recorded, strict=True):
        if then_claim and done.held and not done.finished:
            row, following[item.claim.match_id] = next_turn(
                item.claim, item.move, item.findings, now
            )
            rows.append(row)
    if rows:
        connection.execute(_NEXT_TURNS, rows)
    return [
        (done, following.get(item.claim.match_id))
        for (item, _), done in zip(played, recorded, strict=True)
    ]
