"""Claiming the next turn of many matches in one transaction.

:func:`claim_turns` locks the matches, reads what their next turns need (the
turns so far without their texts, the previous turn's message, the fighters)
in a few ``IN`` queries, and creates each next turn as RUNNING with its
payload, or takes over a turn whose lease has run out (a crash left it: it is
sent again with the same idempotency key and payload).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import bindparam, case, insert, select, update
from sqlalchemy.engine import Connection, Row

from palaestra.engine.cage.turns import (
    MATCH_COLUMNS,
    Claim,
    Fighter,
    Waiting,
    lease_s,
    record_of_move,
)
from palaestra.protocol import Side, TurnRequest
from palaestra.rules.cage_material import Material
from palaestra.rules.cage_payloads import payload_for
from palaestra.rules.matchflow import MatchStatus, TurnStatus
from palaestra.rules.outcome import side_of_turn
from palaestra.store.models import Agent, Match, Turn

__all__ = ["claim_turns"]

#: Who plays a match's next turn: attackers the odd turns, defenders the even ones.
_NEXT_FIGHTER: Final = case((Match.next_turn % 2 == 1, Match.attacker_id), else_=Match.defender_id)
#: The matches with the fighter of their next turn, locked in id order on PostgreSQL (as
#: records lock them: :func:`~.turns.locked_matches`).
_MATCHES: Final = (
    select(
        *MATCH_COLUMNS,
        _NEXT_FIGHTER.label("fighter_id"),
        Agent.entrant_type,
        Agent.endpoint_url,
        Agent.provider,
        Agent.provider_key_sealed,
    )
    .join(Agent, Agent.id == _NEXT_FIGHTER)
    .where(Match.id.in_(bindparam("ids", expanding=True)))
    .order_by(Match.id)
)
_MATCHES_LOCKED: Final = _MATCHES.with_for_update(of=Match)
#: The turns so far, without their texts but two: the previous turn's message (the next
#: turn's payload quotes it) and the current turn's payload (a turn taken over is sent
#: again as it was).
_TURNS: Final = (
    select(
        Turn.match_id,
        Turn.turn,
        Turn.status,
        Turn.findings,
        Turn.started_at,
        case((Turn.turn == Match.next_turn - 1, Turn.message)).label("previous"),
        case((Turn.turn == Match.next_turn, Turn.payload)).label("payload"),
    )
    .join(Match, Match.id == Turn.match_id)
    .where(Turn.match_id.in_(bindparam("ids", expanding=True)))
    .order_by(Turn.turn)
)
_INSERT: Final = insert(Turn)
_TAKE_OVER: Final = (
    update(Turn)
    .where(Turn.match_id == bindparam("b_match"), Turn.turn == bindparam("b_turn"))
    .values(started_at=bindparam("b_now"), findings=bindparam("b_findings"))
)
_STARTED: Final = (
    update(Match)
    .where(Match.id == bindparam("b_match"))
    .values(status=MatchStatus.RUNNING.value, updated_at=bindparam("b_now"))
)


def _turns_of(connection: Connection, ids: Sequence[str]) -> dict[str, list[Row[Any]]]:
    turns: dict[str, list[Row[Any]]] = {match_id: [] for match_id in ids}
    if ids:
        for row in connection.execute(_TURNS, {"ids": list(ids)}):
            turns[row.match_id].append(row)
    return turns


def _matches(connection: Connection, ids: Iterable[str], lock: bool) -> dict[str, Row[Any]]:
    query = _MATCHES_LOCKED if lock else _MATCHES
    return {row.id: row for row in connection.execute(query, {"ids": sorted(set(ids))})}


def _fighter(match: Row[Any]) -> Fighter:
    return Fighter(
        match.fighter_id,
        match.entrant_type,
        match.endpoint_url,
        match.provider,
        match.provider_key_sealed,
    )


def _new_turn(match: Row[Any], opponent: str | None, now: float) -> dict[str, Any]:
    number = match.next_turn
    side = side_of_turn(number)
    material = Material.from_dict(match.material["secret"])
    return {
        "match_id": match.id,
        "turn": number,
        "side": side.value,
        "fighter_id": match.attacker_id if side is Side.ATTACKER else match.defender_id,
        "status": TurnStatus.RUNNING.value,
        "payload": payload_for(material, match.id, number, opponent),
        "findings": {"sends": 1},
        "started_at": now,
    }


def _claim_of(
    match: Row[Any], row: Mapping[str, Any], earlier: Sequence[Row[Any]], fighter: Fighter
) -> Claim:
    material = Material.from_dict(match.material["secret"])
    request = TurnRequest(
        match_id=match.id,
        turn=row["turn"],
        your_role="attacker" if row["side"] == Side.ATTACKER else "defender",
        deadline_ms=match.deadline_ms,
        payload=row["payload"],
    )
    records = tuple(
        record_of_move(t.turn, t.status == TurnStatus.FAILED, t.findings or {}) for t in earlier
    )
    return Claim(
        match.id,
        row["turn"],
        row["started_at"],
        request,
        fighter,
        material,
        records,
        dict(row["findings"]),
    )


def _plan_claims(
    matches: Mapping[str, Row[Any]], turns: Mapping[str, list[Row[Any]]], now: float
) -> tuple[dict[str, Waiting], list[Row[Any]], list[tuple[Row[Any], Row[Any]]]]:
    """Which matches wait, which get a new turn, and which turns are taken over."""
    waiting: dict[str, Waiting] = {}
    new: list[Row[Any]] = []
    resent: list[tuple[Row[Any], Row[Any]]] = []
    for match in matches.values():
        if MatchStatus(match.status).finished:
            waiting[match.id] = Waiting(finished=True)
            continue
        rows = turns[match.id]
        current = rows[-1] if rows and rows[-1].turn == match.next_turn else None
        if current is None:
            new.append(match)
        elif (until := current.started_at + lease_s(match.deadline_ms)) > now:
            waiting[match.id] = Waiting(finished=False, turn=match.next_turn, retry_at=until)
        else:  # left RUNNING by a crash: send it again, same key, same payload
            resent.append((match, current))
    return waiting, new, resent


def claim_turns(
    connection: Connection, match_ids: Sequence[str], now: float, *, lock: bool
) -> list[Claim | Waiting | None]:
    """Claim the next turn of each of ``match_ids``: a :class:`Claim` to play, a
    :class:`Waiting`, or ``None`` for a match that does not exist. A match named twice
    is claimed once; its other places wait."""
    matches = _matches(connection, match_ids, lock)
    turns = _turns_of(connection, [m.id for m in matches.values()])
    waiting, new, resent = _plan_claims(matches, turns, now)
    rows: dict[str, dict[str, Any]] = {}
    for match in new:
        last = turns[match.id][-1] if turns[match.id] else None
        opponent = None
        if last is not None:
            opponent = (last.previous or "") if last.status == TurnStatus.OK else ""
        rows[match.id] = _new_turn(match, opponent, now)
    if rows:
        connection.execute(_INSERT, list(rows.values()))
    rows |= _take_over(connection, resent, now)
    started = [{"b_match": m.id, "b_now": now} for m in new if m.status == MatchStatus.PENDING]
    if started:
        connection.execute(_STARTED, started)
    claims: dict[str, Claim | Waiting] = dict(waiting)
    for match_id, row in rows.items():
        match = matches[match_id]
        earlier = [t for t in turns[match_id] if t.turn < row["turn"]]
        claims[match_id] = _claim_of(match, row, earlier, _fighter(match))
    return _aligned(match_ids, claims)


def _take_over(
    connection: Connection,
    resent: Sequence[tuple[Row[Any], Row[Any]]],
    now: float,
) -> dict[str, dict[str, Any]]:
    """Lease again the turns a crash left RUNNING, counting the sends."""
    rows: dict[str, dict[str, Any]] = {}
    for match, current in resent:
        sent = current.findings or {}
        side = side_of_turn(current.turn)
        rows[match.id] = {
            "match_id": match.id,
            "turn": current.turn,
            "side": side.value,
            "fighter_id": match.attacker_id if side is Side.ATTACKER else match.defender_id,
            "payload": current.payload,
            "findings": {**sent, "sends": sent.get("sends", 1) + 1},
            "started_at": now,
        }
    if rows:
        connection.execute(
            _TAKE_OVER,
            [
                {
                    "b_match": r["match_id"],
                    "b_turn": r["turn"],
                    "b_now": now,
                    "b_findings": r["findings"],
                }
                for r in rows.values()
            ],
        )
    return rows


def _aligned(
    match_ids: Sequence[str], claims: Mapping[str, Claim | Waiting]
) -> list[Claim | Waiting | None]:
    out: list[Claim | Waiting | None] = []
    seen: set[str] = set()
    for match_id in match_ids:
        claim = claims.get(match_id)
        if isinstance(claim, Claim) and match_id in seen:
            until = claim.lease + lease_s(claim.request.deadline_ms)
            claim = Waiting(finished=False, turn=claim.turn, retry_at=until)
        seen.add(match_id)
        out.append(claim)
    return out
