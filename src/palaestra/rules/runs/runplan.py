"""A run's next actions, pure: what a step does, as a function of the run's state and the time.

The stepper reads a run (never its payloads), calls :func:`plan`, writes what
the plan says in one transaction and starts the sends it opened. In order:

1. *Ends*. A RUNNING external task past its time is ended, and whose fault
   it was decides how:

   - never sent, and opened longer ago than its phase deadline: the platform
     could not send it in time (a queue backlog, a worker killed before the
     send). It is **voided**: the platform's fault, charged to no agent;
   - sent, and answered 202 (its answer comes by the callback), past its
     deadline: the agent's callback never came. **TIMEOUT** against the agent,
     unless the platform's completion endpoint (its API) was not up the whole
     time the answer was due (:class:`CallbackEndpoint`): it was down between
     the send and the deadline (the agent then has :data:`CALLBACK_RETRY_S`
     past the later of the deadline and the endpoint's return to deliver it),
     or has not been seen alive since the deadline for :data:`CALLBACK_STALE_S`.
     The callback may have been refused by a platform that was down:
     **voided**. The completion endpoint refuses a late callback by the same
     rule (:func:`callback_void_at`);
   - sent, no answer recorded, past its deadline plus :data:`RECORD_GRACE_S`:
     the sender times the call out itself at the deadline and records it, so
     a task still RUNNING later lost its sender (a killed process, a lost
     lease). **Voided**.

   A voided task never counts as a failure: its slot is opened again under a
   new attempt, and the re-route count (after which the house serves a slot)
   counts failures only.
2. *Candidates*: each successful SCOUT task without one becomes a candidate.
3. *Shortlist*: when every SCOUT slot is done, the shortlist is made.
4. *Opens*: every slot to dispatch now (:func:`palaestra.rules.runs.runflow.next_needs`).
5. *Phase*: the furthest phase any task has reached, kept on the run.
6. *Finished*: every shortlisted candidate has its critiques; the run is settled.

A house task (the platform's own answer) is sent, that is taken up by the
house, as an agent's is, and ends by the same rules: never answered in time
by the house is the platform's fault, voided, and its slot opened again.

:attr:`Plan.wake_at` is when the run next needs a step if no task ends before:
the earliest moment one of its RUNNING tasks is ended by these rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

from palaestra.protocol.constants import Phase
from palaestra.rules.runs.runflow import (
    CandidateStatus,
    RunSizes,
    SlotIndex,
    SlotNeed,
    TaskStatus,
    TaskView,
)
from palaestra.rules.runs.scoring import Shortlist, ShortlistEntry, shortlist

__all__ = [
    "CALLBACK_RETRY_S",
    "CALLBACK_STALE_S",
    "RECORD_GRACE_S",
    "CallbackEndpoint",
    "CandidateFacts",
    "End",
    "EndKind",
    "NewCandidate",
    "Plan",
    "PlatformFault",
    "RunFacts",
    "TaskFacts",
    "callback_void_at",
    "expiry",
    "plan",
]

#: How long past its deadline a sent task may stay unrecorded before its sender is taken
#: for lost: the sender's own timer ends the call at the deadline and records it.
RECORD_GRACE_S: Final = 5.0
#: The API beats every second while it serves; this long without a beat, it is taken for down.
CALLBACK_STALE_S: Final = 3.0
#: How long an agent whose callback fell due while the completion endpoint was down has to
#: deliver it, past the later of its deadline and the endpoint's return (it retries).
CALLBACK_RETRY_S: Final = 5.0
_PHASE_ORDER: Final = (Phase.SCOUT, Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)
_SHORTLISTED: Final = frozenset(
    {CandidateStatus.SHORTLISTED, CandidateStatus.RANKED, CandidateStatus.ELIMINATED}
)


class EndKind(StrEnum):
    """Whose fault an ended task was."""

    TIMEOUT = "timeout"  # the agent's: sent in time, no answer in time
    VOID = "void"  # the platform's: not sent in time, or its answer not recorded


class PlatformFault(StrEnum):
    """Which of the platform's faults voided a task (the metric's label)."""

    NOT_SENT = "not-sent"
    NOT_RECORDED = "not-recorded"
    CALLBACK_DOWN = "callback-down"


@dataclass(frozen=True, slots=True)
class CallbackEndpoint:
    """Where the completion endpoint (the API serving the agents' callbacks) stands: when it
    last started, when it was last seen alive (``None``: not watched, as in one embedded
    process, whose stepper lives and dies with it), and when it was last seen alive before
    that start (``None``: not known, so taken as down since long before)."""

    up_since: float
    alive_at: float | None = None
    down_since: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFacts(TaskView):
    """What planning needs of a stored task (never its payload or output): its slot and
    state, and its times. ``agent_id`` None: a house task."""

    opened_at: float
    deadline_s: float  # the phase deadline, counted from the send
    sent_at: float | None = None
    deferred: bool = False  # answered 202: its answer comes by the callback
    completed_at: float | None = None
    #: A successful SCOUT task's candidate, as its output proposes it: (title, score).
    scouted: tuple[str, float] | None = None
    executor: str = ""  # who it was opened for: the agent's name, or the house's


@dataclass(frozen=True, slots=True)
class CandidateFacts:
    id: str
    source_task_id: str
    title: str
    shortlist_score: float
    status: CandidateStatus
    created_at: float


@dataclass(frozen=True, slots=True)
class RunFacts:
    """A RUNNING run as the stepper read it."""

    run_id: str
    phase: Phase
    sizes: RunSizes
    max_reroutes: int
    tasks: Sequence[TaskFacts]
    candidates: Sequence[CandidateFacts]
    #: None: unknown (no API has said it started), and a missed callback is the agent's.
    endpoint: CallbackEndpoint | None = None


@dataclass(frozen=True, slots=True)
class End:
    task_id: str
    kind: EndKind
    reason: str
    fault: PlatformFault | None = field(default=None, compare=False)  # of a VOID


@dataclass(frozen=True, slots=True)
class NewCandidate:
    id: str
    source_task_id: str
    title: str
    shortlist_score: float


@dataclass(frozen=True, slots=True)
class Plan:
    """What one step of one run does."""

    ends: tuple[End, ...] = ()
    candidates: tuple[NewCandidate, ...] = ()
    shortlist: Shortlist | None = None
    opens: tuple[SlotNeed, ...] = ()
    phase: Phase | None = None  # the run's new phase, when it moves
    finished: bool = False
    #: When the run next needs a step if nothing ends before (None: only an event moves it).
    wake_at: float | None = None

    @property
    def idle(self) -> bool:
        """Nothing to write and nothing to start."""
        return replace(self, wake_at=None) == _IDLE


_IDLE: Final = Plan()


def plan(run: RunFacts, now: float, new_ids: Iterator[str]) -> Plan:
    """The next actions of ``run`` at ``now``; ``new_ids`` gives the ids of the candidates
    the plan creates."""
    expiries = [(task, expiry(task, run.endpoint)) for task in run.tasks]
    ends = tuple(due[1] for _, due in expiries if due is not None and now >= due[0])
    ended = {end.task_id: end for end in ends}
    tasks = [_after(task, ended.get(task.task_id)) for task in run.tasks]
    index = SlotIndex.of(tasks)
    fresh = tuple(_new_candidates(run, tasks, new_ids))
    made = _shortlist(run, index, fresh)
    shortlisted = _shortlisted(run, fresh, made)
    opens = tuple(_counting_failures(index.needs(shortlisted, run.sizes), tasks, run))
    finished = shortlisted is not None and all(
        index.candidate_done(cid, run.sizes) for cid in shortlisted
    )
    phase = _furthest(run, tasks, opens, made)
    wake_at = None if finished else _wake_at(expiries, ended)
    return Plan(ends, fresh, made, opens, phase, finished, wake_at)


def expiry(task: TaskFacts, endpoint: CallbackEndpoint | None = None) -> tuple[float, End] | None:
    """When a RUNNING ``task`` is ended if nothing is recorded before, and that end (whose
    fault, the reason); None for a task that has ended. ``endpoint``: where the completion
    endpoint stands, for a task whose answer comes by the callback."""
    if task.status is not TaskStatus.RUNNING:
        return None
    deadline_ms = round(task.deadline_s * 1000)
    if task.sent_at is None:
        reason = _NOT_SENT.format(ms=deadline_ms)
        end = End(task.task_id, EndKind.VOID, reason, PlatformFault.NOT_SENT)
        return task.opened_at + task.deadline_s, end
    if task.deferred and task.agent_id is not None:
        return _callback_due(task, task.sent_at + task.deadline_s, deadline_ms, endpoint)
    end = End(task.task_id, EndKind.VOID, _NOT_RECORDED, PlatformFault.NOT_RECORDED)
    return task.sent_at + task.deadline_s + RECORD_GRACE_S, end


def _wake_at(
    expiries: Sequence[tuple[TaskFacts, tuple[float, End] | None]],
    ended: Mapping[str, End],
) -> float | None:
    """The first moment a task still RUNNING after this plan is ended by the rules."""
    times = [due[0] for task, due in expiries if due is not None and task.task_id not in ended]
    return min(times, default=None)


#: The agent's, as the seed words it; the platform's two, said plainly.
_TIMED_OUT: Final = "External agent timed out after {ms}ms"
_NOT_SENT: Final = "platform fault: the task was not sent within its {ms}ms deadline"
_NOT_RECORDED: Final = "platform fault: the task's answer was not recorded (its sender stopped)"
_CALLBACK_DOWN: Final = (
    "platform fault: the completion endpoint was down while the task's answer was due"
)


def _callback_due(
    task: TaskFacts, due: float, deadline_ms: int, endpoint: CallbackEndpoint | None
) -> tuple[float, End]:
    """A deferred task's end: the agent's TIMEOUT if the completion endpoint was up from the
    send to the deadline, else voided."""
    assert task.sent_at is not None
    void_at = callback_void_at(endpoint, task.sent_at, due)
    if void_at is None:
        return due, End(task.task_id, EndKind.TIMEOUT, _TIMED_OUT.format(ms=deadline_ms))
    return void_at, End(task.task_id, EndKind.VOID, _CALLBACK_DOWN, PlatformFault.CALLBACK_DOWN)


def callback_void_at(endpoint: CallbackEndpoint | None, sent_at: float, due: float) -> float | None:
    """When a callback owed from ``sent_at`` to ``due`` that has not come is voided as the
    platform's fault, the completion endpoint having been down (or not seen up) while it was
    due; None when the endpoint was up all along, so that the missed callback is the agent's
    (and a callback after ``due`` is refused as late)."""
    if endpoint is None:
        return None
    down_since = endpoint.down_since
    if endpoint.up_since > sent_at and (down_since is None or down_since < due):
        return max(due, endpoint.up_since) + CALLBACK_RETRY_S  # down in between: time to retry
    if endpoint.alive_at is None or endpoint.alive_at >= due:
        return None
    return due + CALLBACK_STALE_S  # not seen alive since: down, unless it beats again


def _after(task: TaskFacts, end: End | None) -> TaskFacts:
    if end is None:
        return task
    status = TaskStatus.TIMEOUT if end.kind is EndKind.TIMEOUT else TaskStatus.VOIDED
    return replace(task, status=status)


def _new_candidates(
    run: RunFacts, tasks: Sequence[TaskFacts], new_ids: Iterator[str]
) -> Iterator[NewCandidate]:
    known = {candidate.source_task_id for candidate in run.candidates}
    scouted = sorted(
        (
            task
            for task in tasks
            if task.phase is Phase.SCOUT
            and task.status is TaskStatus.SUCCEEDED
            and task.scouted is not None
            and task.task_id not in known
        ),
        key=lambda task: (task.completed_at or 0.0, task.slot),
    )
    for task in scouted:
        assert task.scouted is not None
        title, score = task.scouted
        yield NewCandidate(next(new_ids), task.task_id, title, score)


def _shortlist(run: RunFacts, index: SlotIndex, fresh: Sequence[NewCandidate]) -> Shortlist | None:
    if run.phase is not Phase.SCOUT or not index.phase_done(Phase.SCOUT, None, run.sizes):
        return None
    known = sorted(run.candidates, key=lambda c: (c.created_at, c.id))
    entries = [ShortlistEntry(c.id, c.title, c.shortlist_score) for c in known]
    entries += [ShortlistEntry(c.id, c.title, c.shortlist_score) for c in fresh]
    return shortlist(entries, run.sizes.shortlist)


def _shortlisted(
    run: RunFacts, fresh: Sequence[NewCandidate], made: Shortlist | None
) -> list[str] | None:
    """The shortlisted candidates' ids in shortlist order, or ``None`` before the shortlist."""
    if made is not None:
        return list(made.kept)
    if run.phase is Phase.SCOUT:
        return None
    scores = {c.id: c.shortlist_score for c in run.candidates}
    order = {c.id: (c.created_at, c.id) for c in run.candidates}
    kept = [c.id for c in run.candidates if c.status in _SHORTLISTED]
    return sorted(kept, key=lambda cid: (-scores[cid], order[cid]))


def _counting_failures(
    needs: Sequence[SlotNeed], tasks: Sequence[TaskFacts], run: RunFacts
) -> Iterator[SlotNeed]:
    """A slot goes to the house after ``max_reroutes`` re-routes of *failures*: a voided
    attempt (the platform's fault) is not one."""
    failed: dict[tuple[Phase, str | None, int], int] = {}
    for task in tasks:
        if task.status in (TaskStatus.FAILED, TaskStatus.TIMEOUT):
            key = (task.phase, task.candidate_id, task.slot)
            failed[key] = failed.get(key, 0) + 1
    for need in needs:
        failures = failed.get((need.key.phase, need.key.candidate_id, need.key.slot), 0)
        yield SlotNeed(need.key, need.attempt, failures > run.max_reroutes)


def _furthest(
    run: RunFacts,
    tasks: Sequence[TaskFacts],
    opens: Sequence[SlotNeed],
    made: Shortlist | None,
) -> Phase | None:
    reached = {task.phase for task in tasks} | {need.key.phase for need in opens}
    if made is not None:
        reached.add(Phase.BUILD)
    furthest = max(reached, key=_PHASE_ORDER.index, default=Phase.SCOUT)
    if _PHASE_ORDER.index(furthest) <= _PHASE_ORDER.index(run.phase):
        return None
    return furthest
