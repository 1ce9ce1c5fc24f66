"""The run stepper: one idempotent step per run, and the loop that drives the steps.

``advance(run_id)`` reads the run from the store and does what is due:

1. RUNNING tasks past their deadline are ended as TIMEOUT against their
   agent (a task still being awaited in this process gets a few seconds of
   grace for its own timeout to land). A RUNNING external task within its
   deadline is left alone: its reply, or its 202's callback, may still come.
   It is never sent again. A RUNNING house task that no coroutine of this
   process is serving (the process was restarted) is answered again: the
   house is the platform itself, not an endpoint.
2. Each successful SCOUT task becomes a candidate; when every SCOUT slot is
   done, the shortlist is made (near-duplicates merged, the best kept).
3. Every open slot is dispatched: the phases follow one another per
   candidate, a failed slot is re-routed under a new taskId, and after two
   re-routes a house agent serves it (``rules.runflow``).
4. When every shortlisted candidate has its critiques, the settlement
   (``rules.report``) is written: the report, contributions, reputations.

The step is safe to repeat and to run after a crash: the store is the truth.
:class:`RunDriver` runs it in-process, for every RUNNING run on a tick and at
once for a run that was kicked (created, or one of its tasks ended).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, Final

import structlog
from sqlalchemy import select, update

from palaestra.engine.runs.completion import CompletionDesk
from palaestra.engine.runs.dispatch import Opened, SlotRequest, open_slots, send
from palaestra.engine.runs.house import BASELINE, HOUSE_MODEL, HouseAgent, HouseTask
from palaestra.engine.runs.recorder import Finish, Recorder
from palaestra.engine.runs.report import settle
from palaestra.engine.runs.snapshot import Snapshot, load_snapshot
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.protocol.failures import Failure
from palaestra.rules.prompts import LAUNCHPADS, messages_for
from palaestra.rules.runflow import (
    CandidateStatus,
    RunStatus,
    SlotNeed,
    TaskStatus,
    candidate_done,
    next_needs,
    phase_done,
)
from palaestra.rules.scoring import ShortlistEntry, shortlist, shortlist_score
from palaestra.store.models import Candidate, Run

__all__ = ["IN_FLIGHT_GRACE_S", "RunDriver"]

log = structlog.get_logger(__name__)

#: A task still awaited in this process is timed out by its own call; this is the backstop.
IN_FLIGHT_GRACE_S: Final = 5.0
_PHASE_ORDER: Final = (Phase.SCOUT, Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)


class RunDriver:
    """Advances runs in this process; see the module docstring."""

    def __init__(
        self,
        platform: Platform,
        *,
        house: HouseAgent | None = None,
        recorder: Recorder | None = None,
        tick_s: float = 0.5,
    ) -> None:
        self.platform = platform
        self.house = house or HouseAgent.from_settings(platform.settings, platform.egress)
        self.recorder = recorder or Recorder(platform)
        #: Where the agents' async completions are received (the API's callback route).
        self.completions = CompletionDesk(platform, self.recorder, kick=self.kick)
        self.tick_s = tick_s
        self._locks: dict[str, asyncio.Lock] = {}
        self._work: dict[str, tuple[str, asyncio.Task[None]]] = {}  # task id -> (run id, job)
        self._kicked: set[str] = set()
        self._served: set[str] = set()  # house tasks this process has answered or is answering
        self._wake = asyncio.Event()

    # Driving.

    def kick(self, run_id: str) -> None:
        """Advance ``run_id`` soon (a run was created or one of its tasks ended)."""
        self._kicked.add(run_id)
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def in_flight(self, run_id: str | None = None) -> int:
        return sum(1 for owner, _ in self._work.values() if run_id in (None, owner))

    async def run(self, stop: asyncio.Event) -> None:
        """Advance every RUNNING run each tick, and kicked runs at once, until ``stop``."""
        loop = asyncio.get_running_loop()
        last_sweep = float("-inf")
        while not stop.is_set():
            self._wake.clear()
            due = set(self._kicked)
            self._kicked.clear()
            try:
                if loop.time() - last_sweep >= self.tick_s:
                    last_sweep = loop.time()
                    due |= set(await self._running())
                for run_id in sorted(due):
                    await self.advance(run_id)
            except Exception:
                # A database hiccup must not stop the runs; every step is idempotent.
                log.exception("run stepper tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.tick_s)

    async def drain(self, run_id: str, within_s: float = 60.0) -> None:
        """Advance ``run_id`` until it is finished and nothing of it is in flight (tests)."""
        loop = asyncio.get_running_loop()
        limit = loop.time() + within_s
        while True:
            finished = await self.advance(run_id)
            jobs = [job for owner, job in self._work.values() if owner == run_id]
            if finished and not jobs:
                return
            if loop.time() > limit:
                raise TimeoutError(f"run {run_id} did not finish within {within_s}s")
            if jobs:
                await asyncio.wait(jobs, timeout=limit - loop.time(), return_when="FIRST_COMPLETED")
            else:  # waiting for a callback or a deadline
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), 0.05)
                self._wake.clear()

    async def close(self) -> None:
        """Stop the work in flight; its tasks stay RUNNING and are handled after a restart."""
        jobs = [job for _, job in self._work.values()]
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        await self.recorder.close()

    async def _running(self) -> Sequence[str]:
        async with self.platform.db.session() as session:
            query = select(Run.id).where(Run.status == RunStatus.RUNNING.value)
            return (await session.scalars(query)).all()

    # The step.

    async def advance(self, run_id: str) -> bool:
        """Do what is due for ``run_id``; ``True`` once it is finished."""
        lock = self._locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            finished = await self._advance(run_id)
        if finished:
            self._locks.pop(run_id, None)
        return finished

    def _forget(self, snap: Snapshot) -> None:
        self._served.difference_update(t.id for t in snap.tasks)

    async def _advance(self, run_id: str) -> bool:
        snap = await load_snapshot(self.platform, run_id)
        if snap is None or snap.run.status != RunStatus.RUNNING:
            return True
        if await self._expire(snap):
            snap = await load_snapshot(self.platform, run_id)
            assert snap is not None
        self._serve_orphaned_house_tasks(snap)
        await self._make_candidates(snap)
        await self._make_shortlist(snap)
        shortlisted = snap.shortlisted()
        ids = None if shortlisted is None else [c.id for c in shortlisted]
        needs = next_needs(snap.views(), ids, snap.sizes, snap.max_reroutes)
        if needs:
            opened = await open_slots(
                self.platform,
                [self._request(snap, need) for need in needs],
                house_executor=HOUSE_MODEL if self.house.provider else BASELINE,
            )
            for item in opened:
                self._start(item, snap)
        if ids is not None and all(candidate_done(snap.views(), cid, snap.sizes) for cid in ids):
            await settle(self.platform, snap)
            self._forget(snap)
            return True
        await self._note_phase(snap)
        return False

    async def _expire(self, snap: Snapshot) -> bool:
        now = self.platform.clock.now()
        ends = []
        for task in snap.tasks:
            if task.status != TaskStatus.RUNNING or task.agent_id is None:
                continue
            grace = IN_FLIGHT_GRACE_S if task.id in self._work else 0.0
            if task.deadline_at is None or now < task.deadline_at + grace:
                continue
            deadline_ms = round(
                (task.deadline_at - (task.dispatched_at or task.deadline_at)) * 1000
            )
            ends.append(
                Finish(
                    task_id=task.id,
                    run_id=task.run_id,
                    phase=Phase(task.phase),
                    status=TaskStatus.TIMEOUT,
                    via="deadline",
                    executor=task.executor,
                    agent_id=task.agent_id,
                    reason=Failure.timeout(deadline_ms).reason,
                    latency_ms=float(deadline_ms),
                )
            )
        if ends:
            await self.recorder.finish_many(ends)
        return bool(ends)

    def _serve_orphaned_house_tasks(self, snap: Snapshot) -> None:
        for task in snap.tasks:
            if (
                task.status == TaskStatus.RUNNING
                and task.agent_id is None
                and task.id not in self._served
            ):
                messages = (task.payload or {}).get("messages", [])
                phase = Phase(task.phase)
                job = self._house(
                    task.id, snap, phase, task.candidate_id, task.slot, messages, task.executor
                )
                self._track(task.id, snap.run.id, job)

    async def _make_candidates(self, snap: Snapshot) -> None:
        known = {c.source_task_id for c in snap.candidates}
        now = self.platform.clock.now()
        scouted = sorted(
            (
                t
                for t in snap.tasks
                if t.phase == Phase.SCOUT.value
                and t.status == TaskStatus.SUCCEEDED
                and t.id not in known
                and t.output is not None
            ),
            key=lambda t: (t.completed_at or 0.0, t.slot),
        )
        if not scouted:
            return
        fresh = []
        for task in scouted:
            output = task.output or {}
            fresh.append(
                Candidate(
                    id=new_id(),
                    run_id=snap.run.id,
                    source_task_id=task.id,
                    title=str(output.get("candidate_title", "")).strip()[:500],
                    scout_output=output,
                    status=CandidateStatus.PROPOSED.value,
                    phase=Phase.SCOUT.value,
                    shortlist_score=shortlist_score(output),
                    created_at=now,
                    updated_at=now,
                )
            )
        async with self.platform.db.session() as session, session.begin():
            session.add_all(fresh)
        snap.candidates += fresh

    async def _make_shortlist(self, snap: Snapshot) -> None:
        if snap.run.phase != Phase.SCOUT.value:
            return
        if not phase_done(snap.views(), Phase.SCOUT, None, snap.sizes):
            return
        ordered = sorted(snap.candidates, key=lambda c: (c.created_at, c.id))
        entries = [ShortlistEntry(c.id, c.title, c.shortlist_score or 0.0) for c in ordered]
        result = shortlist(entries, snap.sizes.shortlist)
        now = self.platform.clock.now()
        status = dict.fromkeys(result.kept, CandidateStatus.SHORTLISTED)
        status |= dict.fromkeys(result.dropped, CandidateStatus.DROPPED)
        status |= dict.fromkeys(result.merged, CandidateStatus.MERGED)
        config = dict(snap.run.config)
        config["shortlist"] = {
            "kept": result.kept,
            "dropped": result.dropped,
            "merged": result.merged,
        }
        async with self.platform.db.session() as session, session.begin():
            moved = await session.execute(
                update(Run)
                .where(Run.id == snap.run.id, Run.phase == Phase.SCOUT.value)
                .values(phase=Phase.BUILD.value, config=config, updated_at=now)
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                return
            for candidate in snap.candidates:
                await session.execute(
                    update(Candidate)
                    .where(Candidate.id == candidate.id)
                    .values(status=status[candidate.id].value, updated_at=now)
                )
        snap.run.phase = Phase.BUILD.value
        snap.run.config = config
        for candidate in snap.candidates:
            candidate.status = status[candidate.id].value

    async def _note_phase(self, snap: Snapshot) -> None:
        """Keep ``run.phase`` at the furthest phase any task has reached."""
        reached = {t.phase for t in snap.tasks}
        furthest = next((p for p in reversed(_PHASE_ORDER) if p.value in reached), Phase.SCOUT)
        if snap.run.phase == Phase.SCOUT.value or snap.run.phase == furthest.value:
            return
        if _PHASE_ORDER.index(furthest) <= _PHASE_ORDER.index(Phase(snap.run.phase)):
            return
        async with self.platform.db.session() as session, session.begin():
            await session.execute(
                update(Run)
                .where(Run.id == snap.run.id, Run.status == RunStatus.RUNNING.value)
                .values(phase=furthest.value, updated_at=self.platform.clock.now())
            )
        snap.run.phase = furthest.value

    # Slots.

    def _request(self, snap: Snapshot, need: SlotNeed) -> SlotRequest:
        run = snap.run
        phase, candidate_id = need.key.phase, need.key.candidate_id
        launchpad = LAUNCHPADS[run.launchpad]
        scout, builds, verifications = snap.context(phase, candidate_id)
        messages = messages_for(
            phase,
            launchpad,
            run.goal,
            slot=need.key.slot,
            candidate_id=candidate_id,
            scout=scout,
            builds=builds,
            verifications=verifications,
        )
        return SlotRequest(
            run_id=run.id,
            phase=phase,
            candidate_id=candidate_id,
            slot=need.key.slot,
            attempt=need.attempt,
            goal=run.goal,
            launchpad_name=launchpad.title,
            messages=messages,
            deadline_s=snap.deadline_s(phase),
            house=need.house,
            seed=str(run.config.get("seed", run.id)),
        )

    def _start(self, item: Opened, snap: Snapshot) -> None:
        request = item.request
        if item.house:
            job = self._house(
                item.task_id,
                snap,
                request.phase,
                request.candidate_id,
                request.slot,
                request.messages,
                item.executor,
            )
        else:
            job = self._send(item)
        self._track(item.task_id, request.run_id, job)

    def _track(self, task_id: str, run_id: str, job: Any) -> None:
        self._served.add(task_id)
        task = asyncio.create_task(job)
        self._work[task_id] = (run_id, task)

        def done(_: asyncio.Task[None]) -> None:
            self._work.pop(task_id, None)
            self.kick(run_id)

        task.add_done_callback(done)

    async def _send(self, item: Opened) -> None:
        try:
            end = await send(self.platform, item)
            if end is not None:
                await self.recorder.finish(end)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("dispatch failed", task_id=item.task_id)

    async def _house(
        self,
        task_id: str,
        snap: Snapshot,
        phase: Phase,
        candidate_id: str | None,
        slot: int,
        messages: Sequence[Any],
        executor: str,
    ) -> None:
        scout, builds, _ = snap.context(phase, candidate_id)
        clock = self.platform.clock
        started = clock.monotonic()
        try:
            answer = await self.house.answer(
                HouseTask(
                    phase=phase,
                    goal=snap.run.goal,
                    messages=messages,
                    deadline_s=snap.deadline_s(phase),
                    slot=slot,
                    candidate_id=candidate_id,
                    scout=scout,
                    builds=builds,
                )
            )
            await self.recorder.finish(
                Finish(
                    task_id=task_id,
                    run_id=snap.run.id,
                    phase=phase,
                    status=TaskStatus.SUCCEEDED,
                    via="house",
                    executor=answer.executor or executor,
                    output=answer.output,
                    prompt_tokens=answer.prompt_tokens,
                    completion_tokens=answer.completion_tokens,
                    model_id=answer.model_id[:200],
                    latency_ms=(clock.monotonic() - started) * 1000,
                    reason=answer.note,
                )
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("house task failed", task_id=task_id)
