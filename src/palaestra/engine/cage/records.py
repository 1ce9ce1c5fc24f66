"""Recording many played turns at once.

:func:`record_then_claim` stores the moves and the judge's findings of the
turns this worker still holds (a turn's ``started_at`` is its lease) and moves
each match on: its next turn, its result, or void; and it claims the next turns
of the matches that go on, made from what their claims hold. A turn another
worker took over meanwhile writes nothing. On PostgreSQL all of it is one
statement (:mod:`.turn_writes`), on SQLite one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import bindparam, insert, select, tuple_, update
from sqlalchemy.engine import Connection

from palaestra.engine.cage.claims import next_turn
from palaestra.engine.cage.turn_writes import record_held
from palaestra.engine.cage.turns import Claim, Played, Recorded, record_of_move
from palaestra.rules.cage.matchflow import MatchStatus, TurnStatus
from palaestra.rules.cage.outcome import decide
from palaestra.store.models import Match, Turn

__all__ = ["record_then_claim"]


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
        "producer": move.producer.value if move.producer is not None else None,
        "model_id": move.model_id[:200] if move.model_id else None,
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


_TURN_VALUES: Final = (
    "status",
    "message",
    "reason",
    "latency_ms",
    "findings",
    "producer",
    "model_id",
    "finished_at",
)
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
    Turn.status == TurnStatus.RUNNING,
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


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What recording one played turn writes, if its lease holds."""

    turn: dict[str, Any]
    match: dict[str, Any]
    following: tuple[dict[str, Any], Claim] | None  # the next turn's row and claim

    @property
    def finished(self) -> bool:
        return bool(self.match["status"] != MatchStatus.RUNNING)


def _outcomes(
    played: Sequence[tuple[Played, bool]], now: float
) -> list[tuple[tuple[str, int], _Outcome | None]]:
    """Each played turn's key and what recording it writes (``None`` for a turn named twice:
    only its first place can hold the lease)."""
    seen: set[tuple[str, int]] = set()
    out: list[tuple[tuple[str, int], _Outcome | None]] = []
    for item, then_claim in played:
        key = (item.claim.match_id, item.claim.turn)
        if key in seen:
            out.append((key, None))
            continue
        seen.add(key)
        turn, match = _outcome(item, now)
        turn["lease"] = item.claim.lease
        following = None
        if then_claim and match["status"] == MatchStatus.RUNNING:
            following = next_turn(item.claim, item.move, item.findings, now)
        out.append((key, _Outcome(turn, match, following)))
    return out


def _held_on_sqlite(connection: Connection, outcomes: Sequence[_Outcome]) -> set[tuple[str, int]]:
    """Write the outcomes whose lease holds, on SQLite (the writer's transaction is serial:
    what it reads cannot change before it writes); return their turns."""
    pairs = [(o.turn["b_match"], o.turn["b_turn"]) for o in outcomes]
    leases = {
        (r.match_id, r.turn): r.started_at for r in connection.execute(_LEASES, {"pairs": pairs})
    }
    held = [
        o for o in outcomes if leases.get((o.turn["b_match"], o.turn["b_turn"])) == o.turn["lease"]
    ]
    if held:
        connection.execute(_RECORD_TURN, [o.turn for o in held])
        connection.execute(_MOVE_MATCH, [o.match for o in held])
    if rows := [o.following[0] for o in held if o.following is not None]:
        connection.execute(_NEXT_TURNS, rows)
    return {(o.turn["b_match"], o.turn["b_turn"]) for o in held}


def record_then_claim(
    connection: Connection, played: Sequence[tuple[Played, bool]], now: float, *, lock: bool
) -> list[tuple[Recorded, Claim | None]]:
    """Store each played turn this worker still holds and move its match on; for each turn
    marked so whose match goes on, create and claim the next turn at once, from what the
    claim holds (a match played through costs one transaction a turn). A turn taken over
    meanwhile (its lease is another worker's now) writes nothing.

    On PostgreSQL (``lock``) this is one statement (:mod:`.turn_writes`), which may run as
    its own transaction; on SQLite a transaction of a few."""
    outcomes = _outcomes(played, now)
    writes = [o for _, o in outcomes if o is not None]
    if lock:
        rows = [o.following[0] for o in writes if o.following is not None]
        matches = [o.match for o in writes]
        held = record_held(connection, [o.turn for o in writes], matches, rows, now)
    else:
        held = _held_on_sqlite(connection, writes)
    results: list[tuple[Recorded, Claim | None]] = []
    for key, outcome in outcomes:
        if outcome is None or key not in held:
            results.append((Recorded(held=False), None))
            continue
        following = outcome.following[1] if outcome.following is not None else None
        results.append((Recorded(held=True, finished=outcome.finished), following))
        held.discard(key)
    return results
