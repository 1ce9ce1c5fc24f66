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

from sqlalchemy import and_, bindparam, insert, select, tuple_, update
from sqlalchemy.engine import Connection

from palaestra.engine.cage.claims import next_turn
from palaestra.engine.cage.turn_writes import write_turns
from palaestra.engine.cage.turns import Claim, Played, Recorded, record_of_move
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


#: The leases of the turns recorded, on SQLite (whose writer's transactions are serial).
_LEASES: Final = select(Turn.match_id, Turn.turn, Turn.started_at).where(
    tuple_(Turn.match_id, Turn.turn).in_(bindparam("pairs", expanding=True)),
    Turn.status == TurnStatus.RUNNING.value,
)
#: On PostgreSQL, the same read locks each match and its current turn, in match id order as
#: claims lock matches (so the two never deadlock); a turn another worker recorded or took
#: over meanwhile is read as it is now, once that worker commits.
_HELD: Final = (
    select(Turn.match_id, Turn.turn, Turn.started_at)
    .join(Match, and_(Match.id == Turn.match_id, Match.next_turn == Turn.turn))
    .where(Match.id.in_(bindparam("ids", expanding=True)))
    .where(Turn.status == TurnStatus.RUNNING.value)
    .order_by(Match.id)
    .with_for_update(of=(Match, Turn))
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


def _leases(
    connection: Connection, played: Sequence[Played], lock: bool
) -> dict[tuple[str, int], float]:
    if lock:
        rows = connection.execute(_HELD, {"ids": sorted({p.claim.match_id for p in played})})
    else:
        pairs = [(p.claim.match_id, p.claim.turn) for p in played]
        rows = connection.execute(_LEASES, {"pairs": pairs})
    return {(row.match_id, row.turn): row.started_at for row in rows}


def _recorded(
    connection: Connection, played: Sequence[Played], now: float, lock: bool
) -> tuple[list[Recorded], list[dict[str, Any]], list[dict[str, Any]]]:
    """Which played turns this worker still holds, and the values of those turns and their
    matches."""
    leases = _leases(connection, played, lock)
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
    return results, turns, matches


def _write(
    connection: Connection,
    turns: list[dict[str, Any]],
    matches: list[dict[str, Any]],
    following: list[dict[str, Any]],
    now: float,
) -> None:
    """Store the recorded turns, their matches and the turns that follow: one statement on
    PostgreSQL (:mod:`.turn_writes`), three on SQLite."""
    if connection.dialect.name == "postgresql":
        write_turns(connection, turns, matches, following, now)
        return
    if turns:
        connection.execute(_RECORD_TURN, turns)
        connection.execute(_MOVE_MATCH, matches)
    if following:
        connection.execute(_NEXT_TURNS, following)


def record_turns(
    connection: Connection, played: Sequence[Played], now: float, *, lock: bool
) -> list[Recorded]:
    """Store each played turn this worker still holds and move its match on; a turn taken
    over meanwhile (its lease is another worker's now) writes nothing."""
    results, turns, matches = _recorded(connection, played, now, lock)
    _write(connection, turns, matches, [], now)
    return results


def record_then_claim(
    connection: Connection, played: Sequence[tuple[Played, bool]], now: float, *, lock: bool
) -> list[tuple[Recorded, Claim | None]]:
    """:func:`record_turns`, then, for each turn marked so whose match goes on, create and
    claim the next turn in the same transaction, from what the claim holds (a match
    played through costs one transaction a turn: on PostgreSQL four round trips, the
    transaction's two included)."""
    recorded, turns, matches = _recorded(connection, [item for item, _ in played], now, lock)
    following: dict[str, Claim] = {}
    rows = []
    for (item, then_claim), done in zip(played, recorded, strict=True):
        if then_claim and done.held and not done.finished:
            row, following[item.claim.match_id] = next_turn(
                item.claim, item.move, item.findings, now
            )
            rows.append(row)
    _write(connection, turns, matches, rows, now)
    return [
        (done, following.get(item.claim.match_id))
        for (item, _), done in zip(played, recorded, strict=True)
    ]
