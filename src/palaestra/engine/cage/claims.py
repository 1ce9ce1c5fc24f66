"""Claiming the next turn of many matches in one transaction, and making the turn that
follows one just recorded.

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
from sqlalchemy.orm import aliased

from palaestra.engine.cage.entrants import Move
from palaestra.engine.cage.turns import (
    MATCH_COLUMNS,
    Bout,
    Claim,
    Fighter,
    Waiting,
    lease_s,
    record_of_move,
)
from palaestra.protocol import Side, TurnRequest
from palaestra.rules.cage.matchflow import MatchStatus, TurnStatus
from palaestra.rules.cage.material import Material
from palaestra.rules.cage.outcome import TurnRecord, side_of_turn
from palaestra.rules.cage.payloads import payload_for
from palaestra.store.models import Agent, Match, Turn

__all__ = ["claim_turns", "new_turn", "next_turn"]

_ATTACKER: Final = aliased(Agent)
_DEFENDER: Final = aliased(Agent)


def _facts(agent: Any) -> tuple[Any, ...]:
    return (
        agent.id,
        agent.entrant_type,
        agent.endpoint_url,
        agent.provider,
        agent.provider_key_sealed,
    )


#: The matches with both fighters, locked in id order on PostgreSQL (as records lock
#: them: ``records._HELD``).
_MATCHES: Final = (
    select(*MATCH_COLUMNS, *_facts(_ATTACKER), *_facts(_DEFENDER))
    .join(_ATTACKER, _ATTACKER.id == Match.attacker_id)
    .join(_DEFENDER, _DEFENDER.id == Match.defender_id)
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
    .values(status=MatchStatus.RUNNING, updated_at=bindparam("b_now"))
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


def _bout(match: Row[Any]) -> Bout:
    facts = tuple(match)[len(MATCH_COLUMNS) :]
    material = Material.from_dict(match.material["secret"])
    return Bout(match.id, material, Fighter(*facts[:5]), Fighter(*facts[5:]), match.deadline_ms)


def new_turn(
    bout: Bout,
    number: int,
    earlier: tuple[TurnRecord, ...],
    now: float,
    *,
    payload: str,
    findings: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], Claim]:
    """Turn ``number``'s row and claim, leased from ``now``: a new turn, or (given its
    ``findings`` so far) one taken over to be sent again."""
    side = side_of_turn(number)
    fighter = bout.attacker if side is Side.ATTACKER else bout.defender
    findings = findings or {"sends": 1}
    row = {
        "match_id": bout.match_id,
        "turn": number,
        "side": side.value,
        "fighter_id": fighter.id,
        "status": TurnStatus.RUNNING.value,
        "payload": payload,
        "findings": findings,
        "started_at": now,
    }
    request = TurnRequest(
        match_id=bout.match_id,
        turn=number,
        your_role=side.value,
        deadline_ms=bout.deadline_ms,
        payload=payload,
    )
    return row, Claim(bout, number, now, request, earlier, dict(findings))


def next_turn(
    claim: Claim, move: Move, findings: Mapping[str, Any], now: float
) -> tuple[dict[str, Any], Claim]:
    """The row and the claim of the turn after ``claim``'s, once its ``move`` is recorded
    with ``findings``, made from what the claim holds: nothing more to read."""
    earlier = (*claim.earlier, record_of_move(claim.turn, move.failed, findings))
    number = claim.turn + 1
    payload = payload_for(claim.material, claim.match_id, number, move.message or "")
    return new_turn(claim.bout, number, earlier, now, payload=payload)


def _stored_turn(
    match: Row[Any], rows: Sequence[Row[Any]], now: float
) -> tuple[dict[str, Any], Claim]:
    """A match's next turn from what is stored: a new one, or the one a crash left."""
    bout = _bout(match)
    number = match.next_turn
    earlier = tuple(
        record_of_move(t.turn, t.status == TurnStatus.FAILED, t.findings or {})
        for t in rows
        if t.turn < number
    )
    current = rows[-1] if rows and rows[-1].turn == number else None
    if current is not None:  # left RUNNING by a crash: send it again, same key, same payload
        sent = current.findings or {}
        findings = {**sent, "sends": sent.get("sends", 1) + 1}
        return new_turn(bout, number, earlier, now, payload=current.payload, findings=findings)
    opponent = None
    if rows:
        opponent = (rows[-1].previous or "") if rows[-1].status == TurnStatus.OK else ""
    payload = payload_for(bout.material, bout.match_id, number, opponent)
    return new_turn(bout, number, earlier, now, payload=payload)


def _plan_claims(
    matches: Mapping[str, Row[Any]], turns: Mapping[str, list[Row[Any]]], now: float
) -> tuple[dict[str, Waiting], list[Row[Any]], list[Row[Any]]]:
    """Which matches wait, which get a new turn, and which have their turn taken over."""
    waiting: dict[str, Waiting] = {}
    new: list[Row[Any]] = []
    resent: list[Row[Any]] = []
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
            resent.append(match)
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
    claims: dict[str, Claim | Waiting] = dict(waiting)
    inserted, taken = [], []
    for match in new:
        row, claims[match.id] = _stored_turn(match, turns[match.id], now)
        inserted.append(row)
    for match in resent:
        row, claims[match.id] = _stored_turn(match, turns[match.id], now)
        taken.append(
            {
                "b_match": match.id,
                "b_turn": row["turn"],
                "b_now": now,
                "b_findings": row["findings"],
            }
        )
    if inserted:
        connection.execute(_INSERT, inserted)
    if taken:
        connection.execute(_TAKE_OVER, taken)
    started = [{"b_match": m.id, "b_now": now} for m in new if m.status == MatchStatus.PENDING]
    if started:
        connection.execute(_STARTED, started)
    return _aligned(match_ids, claims)


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
