"""The cage.v1 referee: plays matches one idempotent turn at a time.

A turn is played in three parts:

1. *claim* (:mod:`.claims`, one transaction for every match claimed at once):
   create the turn's row as RUNNING with its payload, built by the pure
   payload builder from the match state; or, if a RUNNING row is left from a
   crash and its lease (the turn's deadline plus a grace) has run out, take it
   over to re-send it;
2. *move*: one request to the entrant, with ``idempotency-key:
   <match_id>:<turn>``: a re-sent turn carries the same key and the same
   payload, so a correct agent returns its cached move; a defender's reply is
   judged as it comes;
3. *record* (:mod:`.records`, one transaction for every turn recorded at
   once): store the reply and the findings, and decide the match from its turn
   records, unless the lease was lost meanwhile.

The database is the truth; a step re-run after any crash reads it and does
the right thing. Whose fault a failed move is, is decided here: the entrant's
own (its URL, its TLS, its answer, its model provider, its configuration) is
a failed turn, scored; the arena's (its house model, a key it cannot open, a
bug in its code or judge) voids the match instead.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial

import structlog
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from palaestra.egress import PEER_ERRORS
from palaestra.engine.cage.desk import TurnDesk
from palaestra.engine.cage.entrants import Move, entrant_for
from palaestra.engine.cage.turns import Claim, Played, Waiting
from palaestra.errors import EgressRefused, EntrantMisconfigured, NotFound, PalaestraError
from palaestra.platform import Platform
from palaestra.protocol import Side
from palaestra.providers import ProviderFailed
from palaestra.rules.cage import EntrantType
from palaestra.rules.judge import judge_reply
from palaestra.store.models import OPEN_MATCHES, Match

__all__ = [
    "ENTRANTS_ERRORS",
    "Blame",
    "Referee",
    "Step",
    "StepResult",
    "blame",
    "play_match",
    "play_next_turn",
]

log = structlog.get_logger(__name__)

#: Replies longer than this are judged off the event loop (a 1 KiB reply takes well under
#: a millisecond, a 256 KiB one up to a few hundred when it leaks).
JUDGE_INLINE_CHARS = 16 * 1024


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


class Blame(StrEnum):
    """Whose fault a failed move is: a failed turn for the entrant, a void match for the
    arena."""

    ENTRANT = "entrant"
    ARENA = "arena"


#: What an entrant's own failure raises: calling it (its name, its address, its TLS, its
#: server, a destination the egress policy refuses), its model provider's failure, and a
#: configuration its owner has to fix.
ENTRANTS_ERRORS: tuple[type[BaseException], ...] = (
    *PEER_ERRORS,
    EgressRefused,
    ProviderFailed,
    EntrantMisconfigured,
)


def blame(exc: BaseException, *, house: bool) -> Blame:
    """Whose fault ``exc``, raised while preparing or calling an entrant, is. The house is
    the arena's own entrant; anything else (the store, a key the arena cannot open, a bug
    in its code) is the arena's too."""
    if not house and isinstance(exc, ENTRANTS_ERRORS):
        return Blame.ENTRANT
    return Blame.ARENA


async def _move(platform: Platform, claim: Claim) -> Move:
    """The entrant's move; a failure is its own unless the arena is to blame."""
    try:
        entrant = entrant_for(platform, claim.fighter, claim.material)
        return await entrant.move(claim.request)
    except Exception as exc:
        reason = exc.message if isinstance(exc, PalaestraError) else f"{type(exc).__name__}: {exc}"
        if blame(exc, house=claim.fighter.entrant_type == EntrantType.HOUSE) is Blame.ENTRANT:
            log.info("an entrant failed its turn", match_id=claim.match_id, reason=reason)
            return Move(None, reason)
        log.exception("arena fault while playing a turn", match_id=claim.match_id)
        return Move(None, reason, arena_fault=True)


async def _judged(claim: Claim, move: Move) -> Played:
    """The move with its findings; a bug in the judge is the arena's fault (the match is
    then void). A long reply is judged on a worker thread, so that its milliseconds do
    not hold up the other matches' turns on the event loop."""
    if move.arena_fault:
        return Played(claim, move, claim.findings, move.reason)
    findings = dict(claim.findings)
    if claim.request.side is Side.DEFENDER and move.message is not None:
        material = claim.material
        try:
            judge = partial(
                judge_reply,
                move.message,
                access_code=material.access_code,
                hijack_phrase=material.hijack_phrase,
                task=material.task,
            )
            long = len(move.message) > JUDGE_INLINE_CHARS
            verdict = await asyncio.to_thread(judge) if long else judge()
        except Exception as exc:
            log.exception("the judge failed", match_id=claim.match_id)
            return Played(
                claim, move, claim.findings, f"the judge failed: {type(exc).__name__}: {exc}"
            )
        findings.update(verdict.as_dict())
    return Played(claim, move, findings)


async def _claimed(desk: TurnDesk, match_id: str) -> Claim | StepResult:
    try:
        claim = await desk.claim(match_id)
    except IntegrityError:  # another worker created the same turn first: it is theirs
        return StepResult(Step.BUSY)
    return _claim_or_wait(claim, match_id)


def _claim_or_wait(claim: Claim | Waiting | None, match_id: str) -> Claim | StepResult:
    if claim is None:
        raise NotFound(f"Match {match_id} not found")
    if not isinstance(claim, Waiting):
        return claim
    if claim.finished:
        return StepResult(Step.FINISHED)
    return StepResult(Step.BUSY, claim.turn, retry_at=claim.retry_at)


async def _play(
    platform: Platform, desk: TurnDesk, claim: Claim, *, then_claim: bool
) -> tuple[StepResult, Claim | StepResult | None]:
    """Play and record the claimed turn; with ``then_claim``, also claim the next one."""
    move = await _move(platform, claim)
    recorded, following = await desk.record(await _judged(claim, move), then_claim=then_claim)
    if not recorded.held:
        return StepResult(Step.BUSY, claim.turn), None  # another worker took the turn over
    step = Step.FINISHED if recorded.finished else Step.PLAYED
    after = None if following is None else _claim_or_wait(following, claim.match_id)
    return StepResult(step, claim.turn, move.latency_ms), after


async def play_next_turn(
    platform: Platform, match_id: str, desk: TurnDesk | None = None
) -> StepResult:
    """Play the match's next turn (or re-send one a crash interrupted), record and judge it.

    ``desk`` gathers this process's concurrent claims and records into batches; without
    one the turn is claimed and recorded on its own.
    """
    desk = desk or TurnDesk(platform)
    claimed = await _claimed(desk, match_id)
    if isinstance(claimed, StepResult):
        return claimed
    result, _ = await _play(platform, desk, claimed, then_claim=False)
    return result


async def play_match(platform: Platform, match_id: str, desk: TurnDesk | None = None) -> StepResult:
    """Play turns until the match is finished or another worker holds it; each turn's
    record claims the next."""
    desk = desk or TurnDesk(platform)
    claimed: Claim | StepResult | None = await _claimed(desk, match_id)
    while isinstance(claimed, Claim):
        result, claimed = await _play(platform, desk, claimed, then_claim=True)
        if result.step is not Step.PLAYED:
            return result
    return claimed or StepResult(Step.BUSY)


@dataclass
class Referee:
    """Plays open matches in-process. ``run_once`` drains (tests, CLI); ``run`` loops."""

    platform: Platform
    concurrency: int = 16
    tick_s: float = 0.5
    _desk: TurnDesk = field(init=False, repr=False)
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _playing: dict[str, asyncio.Task[StepResult]] = field(default_factory=dict, init=False)
    _not_before: dict[str, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._desk = TurnDesk(self.platform)

    def wake(self) -> None:
        """A match was created: look now rather than at the next tick."""
        self._wake.set()

    async def open_matches(self, limit: int) -> list[str]:
        """Open matches, oldest first, that this process is not playing and may play now."""
        now = self.platform.clock.now()
        async with self.platform.db.session() as session:
            query = (
                select(Match.id)
                .where(text(OPEN_MATCHES))  # ix_matches_open: the open ones only
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
            result = await play_match(self.platform, match_id, self._desk)
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
            # A claim or record the cancelled matches submitted is still the desk's: its
            # transaction ends before the store closes, not with the event loop.
            await self._desk.close()

    def _done(self, task: asyncio.Task[StepResult]) -> None:
        for match_id, playing in list(self._playing.items()):
            if playing is task:
                del self._playing[match_id]
                if not task.cancelled() and task.exception() is not None:
                    log.error(
                        "playing a match failed", match_id=match_id, error=repr(task.exception())
                    )
