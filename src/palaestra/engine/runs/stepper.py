"""The run stepper: one idempotent step per run, the same in this process and on workers.

``RunStepper.advance(run_id)`` reads the run from the store and does what is due:

1. RUNNING tasks past their deadline are ended as TIMEOUT against their
   agent; which ones is the mode's to say (a task still being awaited in
   this process gets a few seconds of grace for its own timeout to land; on
   workers, a task whose send was never claimed is not the agent's fault). A
   RUNNING external task within its deadline is left alone: its reply, or
   its 202's callback, may still come. It is never sent again. A RUNNING
   house task that nothing is serving is the mode's to take up again: the
   house is the platform itself, not an endpoint.
2. Each successful SCOUT task becomes a candidate; when every SCOUT slot is
   done, the shortlist is made (near-duplicates merged, the best kept).
3. Every open slot is opened (``rules.runflow``: the phases follow one
   another per candidate, a failed slot is re-routed under a new taskId, and
   after two re-routes a house agent serves it), and the mode carries each
   new task out.
4. When every shortlisted candidate has its critiques, the settlement
   (``rules.report``) is written: the report, contributions, reputations.

The step is safe to repeat and to run after a crash: the store is the truth.
What differs between modes is a :class:`RunMode`: ``engine.runs.driver``
runs the work as coroutines of this process, ``jobs.runs`` as jobs.
"""

from __future__ import annotations

import asyncio
from typing import Final, Protocol

from palaestra.engine.runs.completion import CompletionDesk
from palaestra.engine.runs.dispatch import Opened, SlotRequest, open_slots
from palaestra.engine.runs.progress import make_candidates, make_shortlist, note_phase, timeouts
from palaestra.engine.runs.recorder import Recorder
from palaestra.engine.runs.report import settle
from palaestra.engine.runs.snapshot import Snapshot, load_snapshot
from palaestra.platform import Platform
from palaestra.rules.prompts import LAUNCHPADS, messages_for
from palaestra.rules.runflow import RunStatus, SlotNeed, candidate_done, next_needs
from palaestra.store.models import Task

__all__ = ["IN_FLIGHT_GRACE_S", "RunMode", "RunStepper", "Runs"]

#: A task still awaited is timed out by its own call; this is the backstop.
IN_FLIGHT_GRACE_S: Final = 5.0


class RunMode(Protocol):
    """The part of stepping runs that differs between this process and workers."""

    def start(self, item: Opened, snap: Snapshot) -> None:
        """Carry out a task the step has just opened: send it, or have the house answer it."""
        ...

    def overdue(self, snap: Snapshot, now: float) -> list[Task]:
        """The run's RUNNING tasks sent to agents that end as TIMEOUT at ``now``."""
        ...

    def resume(self, snap: Snapshot) -> None:
        """Take up the run's house tasks that nothing is answering (after a restart)."""
        ...

    def forget(self, snap: Snapshot) -> None:
        """The run is finished: let go of what is kept about it."""
        ...


class Runs(Protocol):
    """What the API needs of whichever drives the runs, in this process or as jobs."""

    #: Where the agents' async completions are received (the API's callback route).
    completions: CompletionDesk

    def kick(self, run_id: str) -> None:
        """Advance ``run_id`` soon (a run was created or one of its tasks ended)."""
        ...


class RunStepper:
    """Advances runs one step at a time; ``mode`` carries out their work."""

    def __init__(
        self, platform: Platform, mode: RunMode, *, recorder: Recorder, house_executor: str
    ) -> None:
        self.platform = platform
        self.mode = mode
        self.recorder = recorder
        self.house_executor = house_executor
        self._locks: dict[str, asyncio.Lock] = {}

    async def advance(self, run_id: str) -> bool:
        """Do what is due for ``run_id``; ``True`` once it is finished."""
        lock = self._locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            finished = await self._advance(run_id)
        if finished:
            self._locks.pop(run_id, None)
        return finished

    async def _advance(self, run_id: str) -> bool:
        snap = await load_snapshot(self.platform, run_id)
        if snap is None or snap.run.status != RunStatus.RUNNING:
            return True
        if await self._expire(snap):
            snap = await load_snapshot(self.platform, run_id)
            assert snap is not None
        self.mode.resume(snap)
        await make_candidates(self.platform, snap)
        await make_shortlist(self.platform, snap)
        shortlisted = snap.shortlisted()
        ids = None if shortlisted is None else [c.id for c in shortlisted]
        await self._open(snap, ids)
        if ids is not None and all(candidate_done(snap.views(), cid, snap.sizes) for cid in ids):
            await settle(self.platform, snap)
            self.mode.forget(snap)
            return True
        await note_phase(self.platform, snap)
        return False

    async def _expire(self, snap: Snapshot) -> bool:
        ends = timeouts(self.mode.overdue(snap, self.platform.clock.now()))
        if ends:
            await self.recorder.finish_many(ends)
        return bool(ends)

    async def _open(self, snap: Snapshot, shortlisted: list[str] | None) -> None:
        needs = next_needs(snap.views(), shortlisted, snap.sizes, snap.max_reroutes)
        if not needs:
            return
        opened = await open_slots(
            self.platform,
            [_request(snap, need) for need in needs],
            house_executor=self.house_executor,
        )
        for item in opened:
            self.mode.start(item, snap)


def _request(snap: Snapshot, need: SlotNeed) -> SlotRequest:
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
