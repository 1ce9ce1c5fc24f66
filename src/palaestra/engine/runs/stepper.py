"""The run stepper: many runs a step, the same code in this process and on workers.

:meth:`RunStepper.step` moves a batch of runs on:

1. *claim* (one statement): up to :attr:`~RunStepper.batch` RUNNING runs that
   are due (``runs.due_at``: a task of theirs ended, one comes due, or the run
   is new) or named, whose lease is free, are leased to this stepper; and in
   the same transaction their facts are read (:mod:`.facts`: a few bulk
   queries, never a payload);
2. *plan*, pure (:func:`palaestra.rules.runs.runplan.plan`), per run: ends (whose
   fault), new candidates, shortlist, slots to open, phase, finished;
3. *read* what the opened tasks are told, and a finished run's records;
4. *write* (one transaction for the batch, :mod:`.writes`): only for the runs
   still leased to this stepper; the lease is released with the run's next
   due time;
5. *send*: the opened tasks are claimed for sending (``tasks.sent_at``, the
   deadline from now) in one statement, and each claimed task is sent or
   answered by the house, as coroutines :class:`~.work.InFlight` tracks. A
   task the claim misses (voided meanwhile, or too late to send) is never
   sent.

The step does not wait for the sends: the next batch is planned while they
are in flight. A stepper killed anywhere loses nothing: its leases lapse, its
unsent tasks and its sent but unrecorded ones end as the platform's faults,
voided (charged to no agent), and their slots open again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Final

import structlog
from sqlalchemy import Row, select, update
from sqlalchemy.engine import Connection

from palaestra.engine.runs.dispatch import Body, Opened, SlotRequest
from palaestra.engine.runs.facts import (
    ClaimedRun,
    Context,
    Scouted,
    read_context,
    read_facts,
    read_records,
)
from palaestra.engine.runs.recorder import Finish, Recorder
from palaestra.engine.runs.work import HouseJob, InFlight, Reservation, Reserved, TaskWork
from palaestra.engine.runs.writes import BatchWrite, RunWrite, claim_sends, write_batch
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.protocol.failures import CallFailure
from palaestra.rules.runs.prompts import LAUNCHPADS, messages_for
from palaestra.rules.runs.report import RunRecord, settlement
from palaestra.rules.runs.runflow import CandidateStatus, RunStatus, TaskStatus
from palaestra.rules.runs.runplan import EndKind, Plan, RunFacts, plan
from palaestra.store.models import Run

__all__ = ["BATCH", "LEASE_S", "RunStepper", "Stepped"]

log = structlog.get_logger(__name__)

#: Runs one step claims at most.
BATCH: Final = 256
#: How long a claim holds: far more than a step takes (a step that outlasts it finds its
#: runs taken and writes nothing of theirs); a stepper killed mid-step holds its runs
#: this long.
LEASE_S: Final = 10.0
#: The sends a run's step opens, as :meth:`RunStepper.room` counts them: a new run's scouts.
_SENDS_PER_RUN: Final = 5


@dataclass(frozen=True, slots=True)
class Stepped:
    """What one step did."""

    claimed: tuple[str, ...] = ()
    finished: tuple[str, ...] = ()
    opened: int = 0
    sent: int = 0
    voided: int = 0
    #: Runs an event made due while this step held them: due again at once.
    again: tuple[str, ...] = ()
    #: A step of this process found the room held by steps under way (this one among
    #: them) and claimed nothing: one more is due.
    owed: bool = False


@dataclass(slots=True)
class _Planned:
    """One claimed run and what its plan makes of it, before the write."""

    run: ClaimedRun
    facts: RunFacts
    plan: Plan
    requests: list[SlotRequest] = field(default_factory=list)
    bodies: list[Body] = field(default_factory=list)


class RunStepper:
    """Steps batches of runs; see the module docstring. ``work`` sends and answers tasks,
    ``in_flight`` tracks those coroutines."""

    def __init__(
        self,
        platform: Platform,
        work: TaskWork,
        *,
        in_flight: InFlight | None = None,
        batch: int = BATCH,
        lease_s: float = LEASE_S,
    ) -> None:
        self.platform = platform
        self.work = work
        self.recorder: Recorder = work.recorder
        self.in_flight = in_flight if in_flight is not None else InFlight()
        self.batch = batch
        self.lease_s = lease_s
        #: This stepper's name on the runs it leases.
        self.owner = f"{os.getpid()}-{new_id()}"
        self._full = False  # reached the bound on sends in flight, not yet half free
        self._refused = False  # a step found the room held by others, none ended well since
        self._reserved = Reserved()  # sends the steps under way may still open

    async def step(self, run_ids: Sequence[str] | None = None) -> Stepped:
        """One step of the runs ``run_ids`` (whether due or not), or of the due runs: as many
        as the room left for sends in flight allows (:meth:`room`). The sends a step may open
        are reserved while it is under way, so that steps run at once in one process share
        the room rather than each taking all of it; the reservation shrinks to what the step
        claimed, then to what it opens, as soon as each is known. A step that finds no room
        claims nothing. Where sends in flight fill it, their ends kick; where steps under way
        hold it, the next of them to end says another is ``owed`` (a run made due after its
        claim has no other step coming). One that fails leaves that to the sweeper, as it
        does its own runs: kicking again at once would only fail again."""
        if run_ids is not None:
            return await self._step(run_ids, self.batch, self._reserved.hold(0))
        limit = self.room()
        if not limit:
            self._refused = self._refused or self._reserved.total > 0
            return Stepped()
        reserved = self._reserved.hold(limit * _SENDS_PER_RUN)
        try:
            stepped = await self._step(None, limit, reserved)
        finally:
            reserved.shrink(0)
        owed, self._refused = self._refused, False
        return replace(stepped, owed=True) if owed else stepped

    async def _step(
        self, run_ids: Sequence[str] | None, limit: int, reserved: Reservation
    ) -> Stepped:
        now = self.platform.clock.now()
        claim = partial(self._claim_and_read, run_ids, now, limit)
        claimed, facts, scouted = await self.platform.db.transact(claim)
        if not claimed:
            return Stepped()
        new_ids: Iterator[str] = iter(new_id, "")
        planned, broken = [], []
        for run in claimed:
            try:
                planned.append(_Planned(run, facts[run.id], plan(facts[run.id], now, new_ids)))
            except Exception as exc:  # one run's bad state must not stop the batch
                broken.append(_broken(run, exc))
        reserved.shrink(sum(len(item.plan.opens) for item in planned))
        context, records = await self._read_context(planned, scouted)
        writes = []
        for item in planned:
            try:
                self._requests(item, context)
                writes.append(self._run_write(item, scouted, records))
            except Exception as exc:
                broken.append(_broken(item.run, exc))
        batch = BatchWrite(owner=self.owner, now=now, runs=writes + broken)
        written = await self.platform.db.transact(
            partial(write_batch, self.platform, self.recorder, self.work.house_executor, batch)
        )
        voided = self._count_faults(planned, written.held)
        sent = await self._send(written.opened, context)
        return Stepped(
            claimed=tuple(run.id for run in claimed),
            finished=tuple(written.finished),
            opened=len(written.opened),
            sent=sent,
            voided=voided,
            again=tuple(written.again),
        )

    def room(self) -> int:
        """How many due runs a step may claim: the batch, fewer near the process's bound on
        sends in flight (``dispatch_in_flight``; a run step opens a few sends). Once at the
        bound, none until half of it is free again, so that steps stay batches rather than a
        run each as single sends end. What is held per send in flight (its body, request,
        connection and coroutine) is then bounded per process, not per run started."""
        bound = self.platform.settings.dispatch_in_flight
        free = bound - len(self.in_flight) - self._reserved.total
        if free <= 0 or (self._full and free < bound / 2):
            self._full = True
            return 0
        self._full = False
        return min(self.batch, -(-free // _SENDS_PER_RUN))

    # 1. Claim and read.

    def _claim_and_read(
        self, run_ids: Sequence[str] | None, now: float, limit: int, connection: Connection
    ) -> tuple[list[ClaimedRun], dict[str, RunFacts], dict[str, Scouted]]:
        claim = self._claim(run_ids, now, limit)
        claimed = [_claimed(row) for row in connection.execute(claim)]
        if not claimed:
            return [], {}, {}
        facts, scouted = read_facts(connection, claimed)
        return claimed, facts, scouted

    def _claim(self, run_ids: Sequence[str] | None, now: float, limit: int) -> Any:
        free = (Run.lease_until.is_(None)) | (Run.lease_until <= now)
        pick = select(Run.id).where(Run.status == RunStatus.RUNNING, free)
        if run_ids is None:
            pick = pick.where(Run.due_at <= now).order_by(Run.due_at)
        else:
            pick = pick.where(Run.id.in_(list(run_ids)))
        pick = pick.limit(limit)
        if not self.platform.db.is_sqlite:
            pick = pick.with_for_update(skip_locked=True)
        # Picked once: PostgreSQL may run an IN subquery again for each row it joins (a
        # nested loop, whichever plan its statistics favour), and with SKIP LOCKED each run
        # takes other rows, so a step claimed more runs than its limit (or none). A
        # materialised CTE is evaluated once.
        picked = pick.cte("picked").prefix_with("MATERIALIZED", dialect="postgresql")
        return (
            update(Run)
            .where(Run.id.in_(select(picked.c.id)), free)
            .values(lease_owner=self.owner, lease_until=now + self.lease_s)
            .returning(Run.id, Run.goal, Run.launchpad, Run.phase, Run.config, Run.kicks)
        )

    # 3. What the opened tasks are told, and the finished runs' records.

    async def _read_context(
        self, planned: Sequence[_Planned], scouted: Mapping[str, Scouted]
    ) -> tuple[Context, dict[str, Any]]:
        context = Context()
        fresh = {c.id: c for item in planned for c in item.plan.candidates}
        for cid, candidate in fresh.items():
            context.scout[cid] = scouted[candidate.source_task_id].output
        later = {  # candidate: its run
            need.key.candidate_id: item.run.id
            for item in planned
            for need in item.plan.opens
            if need.key.candidate_id is not None and need.key.candidate_id not in fresh
        }
        finished = [item.run.id for item in planned if item.plan.finished]
        if not later and not finished:
            return context, {}
        runs = set(later.values())

        def read(connection: Connection) -> tuple[Context, dict[str, Any]]:
            read_context(connection, runs, later.keys(), context)
            return context, read_records(connection, finished)

        return await self.platform.db.query(read)

    def _requests(self, item: _Planned, context: Context) -> None:
        run = item.run
        launchpad = LAUNCHPADS[run.launchpad]
        for need in item.plan.opens:
            phase, candidate_id, slot = need.key.phase, need.key.candidate_id, need.key.slot
            scout, builds, verifications = context.of(phase, candidate_id)
            messages = messages_for(
                phase,
                launchpad,
                run.goal,
                slot=slot,
                candidate_id=candidate_id,
                scout=scout,
                builds=builds,
                verifications=verifications,
            )
            request = SlotRequest(
                run_id=run.id,
                phase=phase,
                candidate_id=candidate_id,
                slot=slot,
                attempt=need.attempt,
                goal=run.goal,
                launchpad_name=launchpad.title,
                messages=messages,
                deadline_s=run.deadline_s(phase),
                house=need.house,
                seed=run.seed,
            )
            item.requests.append(request)
            item.bodies.append(Body.of(request))

    def _run_write(
        self, item: _Planned, scouted: Mapping[str, Scouted], records: Mapping[str, Any]
    ) -> RunWrite:
        run, result = item.run, item.plan
        settled = None
        if result.finished and run.id in records:
            tasks, candidates = records[run.id]
            record = RunRecord(
                goal=run.goal,
                launchpad=run.launchpad,
                merged=run.config.get("shortlist", {}).get("merged", {}),
            )
            settled = settlement(record, tasks, candidates, _shortlisted(item.facts))
        wake = result.wake_at
        if item.requests:
            soonest = self.platform.clock.now() + min(r.deadline_s for r in item.requests)
            wake = soonest if wake is None else min(wake, soonest)
        return RunWrite(
            run=run,
            ends=[_finish(item.facts, end) for end in result.ends],
            candidates=[(c, scouted[c.source_task_id].output) for c in result.candidates],
            shortlist=result.shortlist,
            phase=result.phase or run.phase,
            requests=item.requests,
            bodies=item.bodies,
            settlement=settled,
            wake_at=wake,
        )

    def _count_faults(self, planned: Sequence[_Planned], held: set[str]) -> int:
        voided = 0
        for item in planned:
            if item.run.id not in held:
                continue
            for end in item.plan.ends:
                self.platform.metrics.call_failures.labels(CallFailure.of(end.reason)).inc()
                if end.fault is not None:
                    voided += 1
                    self.platform.metrics.platform_faults.labels(end.fault.value).inc()
        if voided:
            log.warning("tasks voided as platform faults", tasks=voided)
        return voided

    # 5. Send.

    async def _send(self, opened: Sequence[Opened], context: Context) -> int:
        if not opened:
            return 0
        now = self.platform.clock.now()
        ids = [item.task_id for item in opened]
        claim = partial(claim_sends, ids, now)  # one statement: on PostgreSQL no BEGIN, COMMIT
        claimed = set(await self.platform.db.transact(claim, single=True))
        for item in opened:
            if item.task_id not in claimed:
                continue
            request = item.request
            if item.house:
                job = HouseJob.of(item, context)
                self.in_flight.start(item.task_id, request.run_id, self.work.answer(job))
            else:
                self.in_flight.start(item.task_id, request.run_id, self.work.send(item))
        return len(claimed)


def _broken(run: ClaimedRun, exc: Exception) -> RunWrite:
    """A run the step could not plan: a fault of the platform's own, which fails the run
    (its tasks still running are voided) rather than every step of every batch it is in."""
    log.exception("run step failed; the run is failed", run_id=run.id)
    return RunWrite(run=run, phase=run.phase, failed=f"platform fault: {type(exc).__name__}")


def _claimed(row: Row[Any]) -> ClaimedRun:
    run_id, goal, launchpad, phase, config, kicks = tuple(row)
    # A run's phase reads REPORT only once settled, and settled runs are never claimed.
    return ClaimedRun(run_id, goal, launchpad, _PHASES[phase], config or {}, kicks or 0)


_PHASES: Final = {phase.value: phase for phase in Phase}  # a dict lookup, not an Enum call
_KEPT: Final = {CandidateStatus.SHORTLISTED, CandidateStatus.RANKED, CandidateStatus.ELIMINATED}


def _shortlisted(facts: RunFacts) -> list[str]:
    """The shortlist's candidate ids in shortlist order."""
    chosen = [c for c in facts.candidates if c.status in _KEPT]
    return [c.id for c in sorted(chosen, key=lambda c: (-c.shortlist_score, c.created_at, c.id))]


def _finish(facts: RunFacts, end: Any) -> Finish:
    task = next(t for t in facts.tasks if t.task_id == end.task_id)
    timed_out = end.kind is EndKind.TIMEOUT
    deadline_ms = float(round(task.deadline_s * 1000))
    return Finish(
        task_id=task.task_id,
        run_id=facts.run_id,
        phase=task.phase,
        status=TaskStatus.TIMEOUT if timed_out else TaskStatus.VOIDED,
        via="deadline",
        executor=task.executor,
        # Only the agent's own timeout is charged to it; a void is charged to no one.
        agent_id=task.agent_id if timed_out else None,
        reason=end.reason,
        latency_ms=deadline_ms if timed_out else None,
    )
