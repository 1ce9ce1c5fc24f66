"""edgearena runs as jobs: ``advance_run`` steps a run, ``dispatch`` sends one task.

:class:`QueuedRuns` takes the engine's run step (``RunStepper``) with the
:class:`Queued` mode, in which a run's work is carried out by jobs that it
kicks through a :class:`~palaestra.jobs.kicks.Kicks`:

- ``advance`` is the same step as in one process, serialized per run
  across the cluster by a PostgreSQL advisory lock held for the step's
  length (two workers stepping one run at once would open one slot twice);
  the slots it opens are not sent from here, it kicks one ``dispatch`` job
  per task.
- ``dispatch`` first *claims the send* with one conditional update: a task
  whose ``dispatched_at`` still equals its ``created_at`` has never been
  sent, and the claim stamps ``dispatched_at`` (and moves ``deadline_at`` to
  the send's time plus the phase deadline). Only the job whose update
  matched sends; a job delivered again, or kicked twice, finds the task
  claimed and does nothing. So an endpoint sees each taskId at most once,
  whichever worker dies when. Then one signed POST, the outcome recorded
  (from RUNNING only), and the run kicked.
- A claimed task whose worker died stays RUNNING until its deadline, then
  the step ends it as TIMEOUT against its agent, as after a crash of the
  embedded server; a task never claimed is not timed out (the arena's queue,
  not the agent, was late): the sweeper kicks its ``dispatch`` again. A house
  task (the arena answers it itself) may be answered again once its deadline
  has passed.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import structlog
from sqlalchemy import Row, and_, case, or_, select, text, update
from sqlalchemy.exc import DBAPIError

from palaestra.engine.runs.completion import CompletionDesk
from palaestra.engine.runs.dispatch import Opened, SlotRequest
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.recorder import Recorder
from palaestra.engine.runs.snapshot import Snapshot, load_snapshot
from palaestra.engine.runs.stepper import IN_FLIGHT_GRACE_S, RunStepper
from palaestra.engine.runs.work import HouseJob, TaskWork, send
from palaestra.jobs.broker import Flags
from palaestra.jobs.kicks import Kicks
from palaestra.platform import Platform
from palaestra.protocol import dumps
from palaestra.protocol.constants import Phase
from palaestra.rules.runflow import RunStatus, TaskStatus
from palaestra.store.models import Agent, Run, Task

__all__ = ["DispatchResult", "Queued", "QueuedRuns", "orphaned_runs"]

log = structlog.get_logger(__name__)

#: The advisory-lock namespace of runs (the first key of the two-key form).
_RUN_LOCKS: Final = 0x70_61_72  # "par"
#: Claims and run steps in flight per process (a step holds two connections).
_CLAIMS_AT_ONCE: Final = 12
_STEPS_AT_ONCE: Final = 4
#: How long a step waits for another worker's step on the same run.
_LOCK_WAIT: Final = "10s"


_CLAIMED: Final = (
    Task.run_id,
    Task.agent_id,
    Task.payload,
    Task.phase,
    Task.candidate_id,
    Task.slot,
    Task.attempt,
    Task.executor,
    Task.dispatched_at,
    Task.deadline_at,
)


_AGENT_URL: Final = (
    select(Agent.endpoint_url).where(Agent.id == Task.agent_id).scalar_subquery().label("agent_url")
)
_AGENT_KEY: Final = (
    select(Agent.key_sealed).where(Agent.id == Task.agent_id).scalar_subquery().label("agent_key")
)


class DispatchResult:
    SENT = "sent"
    DEFERRED = "deferred"  # the agent answered 202 without a reply: its callback ends the task
    ANSWERED = "answered"  # a house task, answered here
    TAKEN = "taken"  # another job claimed the send, or the task has ended
    ENDED = "ended"  # the task is no longer RUNNING


def _sent(task: Task) -> bool:
    return task.dispatched_at is not None and task.dispatched_at != task.created_at


@asynccontextmanager
async def _run_lock(platform: Platform, run_id: str) -> AsyncIterator[None]:
    """Hold the run's lock for the block (PostgreSQL); SQLite serializes writers by itself."""
    if platform.db.is_sqlite:
        yield
        return
    key = zlib.crc32(run_id.encode()) - (1 << 31)
    async with platform.db.engine.connect() as connection, connection.begin():
        await connection.execute(text(f"SET LOCAL lock_timeout = '{_LOCK_WAIT}'"))
        await connection.execute(
            text("SELECT pg_advisory_xact_lock(:space, :key)"), {"space": _RUN_LOCKS, "key": key}
        )
        yield  # released with the transaction


class Queued:
    """The :class:`RunMode` of workers: a task the step opens is sent by a ``dispatch`` job."""

    def __init__(self, kicks: Kicks) -> None:
        self.kicks = kicks

    def start(self, item: Opened, snap: Snapshot) -> None:
        self.kicks.soon(self.kicks.kick_dispatch(item.task_id))

    def overdue(self, snap: Snapshot, now: float) -> list[Task]:
        """Sent tasks past their deadline (plus grace: a reply may be landing now)."""
        return [
            t
            for t in snap.tasks
            if t.status == TaskStatus.RUNNING
            and t.agent_id is not None
            and _sent(t)
            and t.deadline_at is not None
            and now >= t.deadline_at + IN_FLIGHT_GRACE_S
        ]

    def resume(self, snap: Snapshot) -> None:
        pass  # the sweeper kicks ``dispatch`` for house tasks past their deadline

    def forget(self, snap: Snapshot) -> None:
        pass  # nothing of a run is kept between jobs


class QueuedRuns:
    """The run step and the dispatcher for workers and API processes with a broker; see the
    module docstring."""

    def __init__(self, platform: Platform, kicks: Kicks, flags: Flags) -> None:
        self.platform = platform
        self.kicks = kicks
        #: Markers of kicked steps, so that a burst of events kicks one step.
        self.flags = flags
        self.house = HouseAgent.from_settings(platform.settings, platform.egress)
        self.recorder = Recorder(platform)
        #: Where the agents' async completions are received (the API's callback route).
        self.completions = CompletionDesk(platform, self.recorder, kick=self.kick)
        self.work = TaskWork(platform, self.house, self.recorder)
        self.stepper = RunStepper(
            platform, Queued(kicks), recorder=self.recorder, house_executor=self.work.house_executor
        )
        # However many jobs run at once, the store's connection pool (20, and 20 more that
        # are opened and closed on demand) must not overflow: a new PostgreSQL connection
        # per claim costs more than the claim.
        self._claims = asyncio.Semaphore(_CLAIMS_AT_ONCE)
        self._steps = asyncio.Semaphore(_STEPS_AT_ONCE)

    def kick(self, run_id: str) -> None:
        """Advance ``run_id`` soon (a run was created or one of its tasks ended)."""
        self.kicks.soon(self.request_step(run_id))

    async def request_step(self, run_id: str) -> None:
        """Kick the run's step, unless one is already waiting for a worker (it will see
        this event too): a burst of task ends makes one step, not one each."""
        if await self.flags.raise_(f"step:{run_id}"):
            await self.kicks.kick_step(run_id)

    async def advance(self, run_id: str) -> bool:
        """One step of ``run_id`` under the run's lock; ``True`` once it is finished."""
        await self.flags.lower(f"step:{run_id}")  # events from now on kick a new step
        try:
            async with self._steps, _run_lock(self.platform, run_id):
                return await self.stepper.advance(run_id)
        except DBAPIError as exc:
            if "lock timeout" not in str(exc):
                raise
            log.warning("run step skipped: another worker holds the run", run_id=run_id)
            return False  # the holder steps it; the sweeper covers the rest

    async def dispatch(self, task_id: str) -> str:
        """Claim the send of ``task_id``; if this job won it, send (or answer) and record."""
        task = await self._claim(task_id)
        if task is None:
            return DispatchResult.TAKEN  # or ended: either way, not ours to send
        if task.agent_id is not None and task.agent_url is None:
            return DispatchResult.ENDED  # no endpoint to send to: its deadline will end it
        try:
            if task.agent_id is None:
                return await self._answer(task_id, task)
            return await self._send(task_id, task)
        finally:
            await self.request_step(task.run_id)

    async def close(self) -> None:
        """Release what the step holds (its recorder's writes in flight)."""
        await self.recorder.close()

    async def _claim(self, task_id: str) -> Row[Any] | None:
        now = self.platform.clock.now()
        # One statement claims: the new deadline keeps the phase's length (SET reads the
        # row as it was), and the stamp never equals created_at (a frozen test clock).
        stamp = case((Task.created_at >= now, Task.created_at + 0.001), else_=now)
        claim = (
            update(Task)
            .where(
                Task.id == task_id,
                Task.status == TaskStatus.RUNNING.value,
                or_(
                    Task.dispatched_at == Task.created_at,
                    and_(Task.agent_id.is_(None), Task.deadline_at <= now),
                ),
            )
            .values(dispatched_at=stamp, deadline_at=stamp + Task.deadline_at - Task.dispatched_at)
            .returning(*_CLAIMED, _AGENT_URL, _AGENT_KEY)
        )
        # One statement, committed on its own: a claim is one round trip.
        async with self._claims, self.platform.db.engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            return (await autocommit.execute(claim)).one_or_none()

    async def _answer(self, task_id: str, task: Row[Any]) -> str:
        snap = await load_snapshot(self.platform, task.run_id)
        if snap is None:
            return DispatchResult.ENDED
        job = HouseJob.of_stored(
            task_id, task.phase, task.candidate_id, task.slot, task.payload, task.executor
        )
        await self.work.answer(snap, job)
        return DispatchResult.ANSWERED

    async def _send(self, task_id: str, task: Row[Any]) -> str:
        platform = self.platform
        payload: dict[str, Any] = task.payload or {}
        deadline_s = task.deadline_at - task.dispatched_at
        request = _request(
            task.run_id,
            Phase(task.phase),
            task.candidate_id,
            task.slot,
            task.attempt,
            payload,
            deadline_s,
        )
        item = Opened(
            task_id,
            request,
            agent_id=task.agent_id,
            executor=task.executor,
            url=task.agent_url,
            key=platform.vault.open(task.agent_key or ""),
            body=dumps(payload),
        )
        end = await send(platform, item)
        if end is None:
            platform.metrics.dispatches.labels("deferred").inc()
            return DispatchResult.DEFERRED
        platform.metrics.dispatches.labels(end.status.value.lower()).inc()
        await self.recorder.finish(end)
        return DispatchResult.SENT


def _request(
    run_id: str,
    phase: Phase,
    candidate_id: str | None,
    slot: int,
    attempt: int,
    payload: Mapping[str, Any],
    deadline_s: float,
) -> SlotRequest:
    return SlotRequest(
        run_id=run_id,
        phase=phase,
        candidate_id=candidate_id,
        slot=slot,
        attempt=attempt,
        goal=str(payload.get("goal", "")),
        launchpad_name=str(payload.get("launchpadName", "")),
        messages=list(payload.get("messages", [])),
        deadline_s=deadline_s,
    )


async def orphaned_runs(
    platform: Platform, now: float, stall_s: float
) -> tuple[list[str], list[str]]:
    """(runs to step, tasks to dispatch) that no live job is moving on.

    Runs to step: RUNNING runs with nothing RUNNING (the step that should
    follow was lost), or with a sent task past its deadline and grace.
    Tasks to dispatch: tasks never sent for ``stall_s`` (their job was lost),
    and house tasks past their deadline (their worker died).
    """
    runs_query = select(Run.id).where(Run.status == RunStatus.RUNNING.value)
    tasks_query = (
        select(Task)
        .join(Run, Run.id == Task.run_id)
        .where(Run.status == RunStatus.RUNNING.value, Task.status == TaskStatus.RUNNING.value)
    )
    async with platform.db.session() as session:
        running = list((await session.scalars(runs_query)).all())
        tasks = list((await session.scalars(tasks_query)).all())
    busy = {t.run_id for t in tasks}
    step = {run_id for run_id in running if run_id not in busy}
    dispatch = []
    for task in tasks:
        late = task.deadline_at is not None and now >= task.deadline_at + IN_FLIGHT_GRACE_S
        if task.agent_id is None:
            if task.deadline_at is not None and now >= task.deadline_at:
                dispatch.append(task.id)
        elif not _sent(task):
            if task.created_at <= now - stall_s:
                dispatch.append(task.id)
        elif late:
            step.add(task.run_id)
    return sorted(step), dispatch
