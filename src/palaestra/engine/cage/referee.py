"""The cage.v1 referee: plays a match one idempotent step at a time.

One step plays the match's next turn, in three parts:

1. *claim* (one transaction): create the turn's row as RUNNING with its
   payload, built by the pure payload builder from the match state; or, if a
   RUNNING row is left from a crash and its lease (the turn's deadline plus a
   grace) has run out, take it over to re-send it;
2. *move*: one request to the entrant, with ``idempotency-key:
   <match_id>:<turn>``: a re-sent turn carries the same key and the same
   payload, so a correct agent returns its cached move;
3. *record* (one transaction): store the reply, judge a defender's reply,
   and decide the match from its turn records, unless the lease was lost
   meanwhile.

The database is the truth; a step re-run after any crash reads it and does
the right thing. A fault of the arena itself (its house model failing, a bug
here) voids the match instead of scoring it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import structlog
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.engine.cage.entrants import Move, entrant_for
from palaestra.engine.cage.matches import material_of
from palaestra.errors import NotFound
from palaestra.platform import Platform
from palaestra.protocol import Side, TurnRequest
from palaestra.rules.cage_material import Material
from palaestra.rules.cage_payloads import payload_for
from palaestra.rules.judge import judge_reply
from palaestra.rules.matchflow import OPEN_MATCH_STATUSES, MatchStatus, TurnStatus
from palaestra.rules.outcome import TurnRecord, decide, side_of_turn
from palaestra.store.models import Agent, Match, Turn

__all__ = ["LEASE_GRACE_S", "Referee", "Step", "StepResult", "play_match", "play_next_turn"]

log = structlog.get_logger(__name__)

#: A RUNNING turn is taken over this long after its deadline has passed.
LEASE_GRACE_S = 10.0


class Step(StrEnum):
    PLAYED = "played"  # a turn was played; the match goes on
    FINISHED = "finished"  # the match is scored or voided
    BUSY = "busy"  # another worker holds the current turn


@dataclass(frozen=True, slots=True)
class StepResult:
    step: Step
    turn: int | None = None
    latency_ms: float | None = None  # the entrant's round trip, for this turn
    retry_at: float | None = None  # when a BUSY turn's lease runs out


@dataclass(frozen=True, slots=True)
class _Claim:
    match_id: str
    turn: int
    lease: float  # the turn's started_at, as this worker wrote it
    request: TurnRequest
    fighter: Agent
    material: Material
    earlier: tuple[TurnRecord, ...]  # the turns before this one, as recorded
    findings: dict[str, Any]  # this turn's findings so far (its send count)


def record_of_move(turn: int, failed: bool, findings: dict[str, Any]) -> TurnRecord:
    """What the outcome reads from a turn: whether it failed, and the judge's findings."""
    utility = findings.get("utility") or {}
    return TurnRecord(
        turn=turn,
        failed=failed,
        leak=bool(findings.get("leak")),
        hijack=bool(findings.get("hijack")),
        utility=bool(utility.get("held")),
    )


def record_of(turn: Turn) -> TurnRecord:
    """What the outcome reads from a stored turn."""
    return record_of_move(turn.turn, turn.status == TurnStatus.FAILED, turn.findings or {})


async def _locked_match(session: AsyncSession, platform: Platform, match_id: str) -> Match:
    match = await session.get(Match, match_id, with_for_update=not platform.db.is_sqlite)
    if match is None:
        raise NotFound(f"Match {match_id} not found")
    return match


async def _turns(session: AsyncSession, match_id: str) -> list[Turn]:
    query = select(Turn).where(Turn.match_id == match_id).order_by(Turn.turn)
    return list((await session.scalars(query)).all())


def _lease_s(match: Match) -> float:
    return match.deadline_ms / 1000 + LEASE_GRACE_S


async def _claim(platform: Platform, match_id: str) -> _Claim | StepResult:
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        match = await _locked_match(session, platform, match_id)
        if MatchStatus(match.status).finished:
            return StepResult(Step.FINISHED)
        number = match.next_turn
        turns = await _turns(session, match_id)
        row = turns[-1] if turns and turns[-1].turn == number else None
        material = material_of(match)
        if row is None:
            previous = turns[-1] if turns else None
            opponent = None
            if previous is not None:
                opponent = previous.message if previous.status == TurnStatus.OK else ""
            side = side_of_turn(number)
            row = Turn(
                match_id=match_id,
                turn=number,
                side=side.value,
                fighter_id=match.attacker_id if side is Side.ATTACKER else match.defender_id,
                status=TurnStatus.RUNNING.value,
                payload=payload_for(material, match_id, number, opponent),
                findings={"sends": 1},
                started_at=now,
            )
            session.add(row)
            match.status = MatchStatus.RUNNING.value
        elif row.started_at + _lease_s(match) > now:
            return StepResult(Step.BUSY, number, retry_at=row.started_at + _lease_s(match))
        else:  # left RUNNING by a crash: send it again, same key, same payload
            sent = row.findings or {}
            row.started_at = now
            row.findings = {**sent, "sends": sent.get("sends", 1) + 1}
        match.updated_at = now
        fighter = await session.get(Agent, row.fighter_id)
        if fighter is None:
            raise NotFound(f"Fighter {row.fighter_id} not found")
        request = TurnRequest(
            match_id=match_id,
            turn=number,
            your_role="attacker" if row.side == Side.ATTACKER else "defender",
            deadline_ms=match.deadline_ms,
            payload=row.payload,
        )
    earlier = tuple(record_of(turn) for turn in turns if turn.turn < number)
    return _Claim(
        match_id, number, now, request, fighter, material, earlier, dict(row.findings or {})
    )


async def _move(platform: Platform, claim: _Claim) -> Move:
    try:
        entrant = entrant_for(platform, claim.fighter, claim.material)
        return await entrant.move(claim.request)
    except Exception as exc:
        log.exception("arena fault while playing a turn", match_id=claim.match_id)
        return Move(None, f"{type(exc).__name__}: {exc}", arena_fault=True)


def _findings(claim: _Claim, move: Move) -> dict[str, Any]:
    findings = dict(claim.findings)
    if claim.request.side is Side.DEFENDER and move.message is not None:
        material = claim.material
        verdict = judge_reply(
            move.message,
            access_code=material.access_code,
            hijack_phrase=material.hijack_phrase,
            task=material.task,
        )
        findings.update(verdict.as_dict())
    return findings


def _judged(claim: _Claim, move: Move) -> tuple[dict[str, Any], str | None]:
    """The turn's findings, and the arena's fault if there is one (then the match is void)."""
    if move.arena_fault:
        return claim.findings, move.reason
    try:
        return _findings(claim, move), None
    except Exception as exc:  # a bug in the judge is the arena's fault
        log.exception("the judge failed", match_id=claim.match_id)
        return claim.findings, f"the judge failed: {type(exc).__name__}: {exc}"


async def _record(platform: Platform, claim: _Claim, move: Move) -> StepResult:
    """Store the move and the verdict, if this worker still holds the turn; decide the match.

    Two statements: the turn's update is conditional on its lease, so a worker
    that lost the turn writes nothing; the match's update follows from it.
    """
    findings, fault = _judged(claim, move)
    failed = move.failed or fault is not None
    record = record_of_move(claim.turn, failed, findings)
    result = None if fault else decide([*claim.earlier, record])
    now = platform.clock.now()
    turn_values: dict[str, Any] = {
        "status": (TurnStatus.FAILED if failed else TurnStatus.OK).value,
        "message": move.message,  # kept even when the arena failed: it can be re-judged
        "reason": f"arena fault: {fault}" if fault else move.reason,
        "latency_ms": move.latency_ms,
        "findings": findings,
        "finished_at": now,
    }
    match_values: dict[str, Any] = {"updated_at": now}
    if fault is not None:
        match_values |= {
            "status": MatchStatus.VOIDED.value,
            "void_reason": f"turn {claim.turn}: {fault}",
            "finished_at": now,
        }
    elif result is None:
        match_values["next_turn"] = claim.turn + 1
    else:
        match_values |= {
            "status": MatchStatus.SCORED.value,
            "outcome": result.winner.value,
            "decided_by": result.decided_by.value,
            "finished_at": now,
        }
    async with platform.db.session() as session, session.begin():
        held = await session.execute(
            update(Turn)
            .where(
                Turn.match_id == claim.match_id,
                Turn.turn == claim.turn,
                Turn.status == TurnStatus.RUNNING.value,
                Turn.started_at == claim.lease,
            )
            .values(**turn_values)
        )
        if held.rowcount != 1:  # type: ignore[attr-defined]
            return StepResult(Step.BUSY, claim.turn)  # another worker took the turn over
        await session.execute(
            update(Match).where(Match.id == claim.match_id).values(**match_values)
        )
    step = Step.PLAYED if fault is None and result is None else Step.FINISHED
    return StepResult(step, claim.turn, move.latency_ms)


async def play_next_turn(platform: Platform, match_id: str) -> StepResult:
    """Play the match's next turn (or re-send one a crash interrupted), record and judge it."""
    try:
        claim = await _claim(platform, match_id)
    except IntegrityError:  # another worker created the same turn first: it is theirs
        return StepResult(Step.BUSY)
    if isinstance(claim, StepResult):
        return claim
    move = await _move(platform, claim)
    return await _record(platform, claim, move)


async def play_match(platform: Platform, match_id: str) -> StepResult:
    """Play turns until the match is finished or another worker holds it."""
    while True:
        result = await play_next_turn(platform, match_id)
        if result.step is not Step.PLAYED:
            return result


@dataclass
class Referee:
    """Plays open matches in-process. ``run_once`` drains (tests, CLI); ``run`` loops."""

    platform: Platform
    concurrency: int = 16
    tick_s: float = 0.5
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _playing: dict[str, asyncio.Task[StepResult]] = field(default_factory=dict, init=False)
    _not_before: dict[str, float] = field(default_factory=dict, init=False)

    def wake(self) -> None:
        """A match was created: look now rather than at the next tick."""
        self._wake.set()

    async def open_matches(self, limit: int) -> list[str]:
        """Open matches, oldest first, that this process is not playing and may play now."""
        now = self.platform.clock.now()
        async with self.platform.db.session() as session:
            query = (
                select(Match.id)
                .where(Match.status.in_(OPEN_MATCH_STATUSES))
                .order_by(Match.created_at)
                .limit(limit + len(self._playing) + len(self._not_before))
            )
            ids = (await session.scalars(query)).all()
        # Forget waits on matches that are no longer open (another worker finished them).
        self._not_before = {i: t for i, t in self._not_before.items() if i in ids}
        ready = [i for i in ids if i not in self._playing and self._not_before.get(i, 0.0) <= now]
        return ready[:limit]

    async def _play(self, match_id: str) -> StepResult:
        try:
            result = await play_match(self.platform, match_id)
        except NotFound:
            return StepResult(Step.FINISHED)  # deleted meanwhile
        if result.step is Step.BUSY:
            self._not_before[match_id] = result.retry_at or self.platform.clock.now()
        else:
            self._not_before.pop(match_id, None)
        return result

    async def run_once(self) -> int:
        """Play every open match as far as it goes now; return how many finished."""
        finished = 0
        while ids := await self.open_matches(self.concurrency):
            results = await asyncio.gather(*(self._play(i) for i in ids))
            finished += sum(r.step is Step.FINISHED for r in results)
            if all(r.step is Step.BUSY for r in results):
                break
        return finished

    async def run(self, stop: asyncio.Event) -> None:
        """Keep playing open matches until ``stop`` is set; turns cut off resume after restart."""
        try:
            while not stop.is_set():
                self._wake.clear()
                try:
                    room = self.concurrency - len(self._playing)
                    for match_id in await self.open_matches(room) if room > 0 else []:
                        task = asyncio.create_task(self._play(match_id))
                        self._playing[match_id] = task
                        task.add_done_callback(self._done)
                except Exception:
                    # The store hiccuped; every step is idempotent, so the next tick retries.
                    log.exception("referee tick failed")
                waiters = [asyncio.create_task(event.wait()) for event in (stop, self._wake)]
                await asyncio.wait(waiters, timeout=self.tick_s, return_when="FIRST_COMPLETED")
                for waiter in waiters:
                    waiter.cancel()
        finally:
            playing = list(self._playing.values())
            for task in playing:
                task.cancel()
            await asyncio.gather(*playing, return_exceptions=True)

    def _done(self, task: asyncio.Task[StepResult]) -> None:
        for match_id, playing in list(self._playing.items()):
            if playing is task:
                del self._playing[match_id]
                if not task.cancelled() and task.exception() is not None:
                    log.error(
                        "playing a match failed", match_id=match_id, error=repr(task.exception())
                    )
