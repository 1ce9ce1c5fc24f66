"""How a run moves forward, pure: which slots need a dispatch now, and when a run is done.

A run is a set of *slots*. A slot is one unit of work of one phase for one
candidate (SCOUT slots have no candidate); each dispatch of a slot is a task
with an ``attempt`` number. Attempts ``0..max_reroutes`` go to external agents
(attempt 0 first, then one re-route per failure); the attempt after that is
served by a house agent, which always answers. A slot is *done* when one of
its tasks succeeded.

Phases follow one another per candidate: SCOUT (all slots) -> shortlist ->
BUILD -> VERIFY -> CRITIQUE. A candidate enters a phase as soon as every slot
of its previous phase is done, independently of the other candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final, NamedTuple

from palaestra.protocol.constants import Phase

__all__ = [
    "DEFAULT_MAX_REROUTES",
    "DEFAULT_SIZES",
    "CandidateStatus",
    "RunSizes",
    "RunStatus",
    "SlotIndex",
    "SlotKey",
    "SlotNeed",
    "SlotState",
    "TaskStatus",
    "TaskView",
    "candidate_done",
    "next_needs",
    "phase_done",
    "slot_keys",
    "slot_state",
]

#: Re-routes of a failed slot to other external agents before a house agent serves it.
DEFAULT_MAX_REROUTES: Final = 2


class RunStatus(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class TaskStatus(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"  # the agent's fault
    TIMEOUT = "TIMEOUT"  # the agent's fault
    VOIDED = "VOIDED"  # the platform's fault: charged to no agent, the slot opened again

    @property
    def finished(self) -> bool:
        return self is not TaskStatus.RUNNING


class CandidateStatus(StrEnum):
    PROPOSED = "PROPOSED"  # scouted, not yet shortlisted
    SHORTLISTED = "SHORTLISTED"  # in BUILD, VERIFY or CRITIQUE
    DROPPED = "DROPPED"  # below the shortlist cut
    MERGED = "MERGED"  # a near-duplicate of a better-scored candidate
    RANKED = "RANKED"  # in the final report's ranking
    ELIMINATED = "ELIMINATED"  # a critic found a fatal flaw


@dataclass(frozen=True, slots=True)
class RunSizes:
    """How many slots each phase has. BUILD, VERIFY and CRITIQUE are per shortlisted candidate."""

    scouts: int = 5
    shortlist: int = 3
    builds: int = 1
    verifies: int = 1
    critiques: int = 2

    def per_candidate(self, phase: Phase) -> int:
        match phase:
            case Phase.SCOUT:
                return self.scouts
            case Phase.BUILD:
                return self.builds
            case Phase.VERIFY:
                return self.verifies
            case Phase.CRITIQUE:
                return self.critiques

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> RunSizes:
        return cls(**{key: int(value[key]) for key in _SIZE_NAMES if key in value})


DEFAULT_SIZES: Final = RunSizes()
_SIZE_NAMES: Final = tuple(DEFAULT_SIZES.as_dict())


# Slots and needs are named tuples, not dataclasses: a step plans hundreds of runs, and these
# are made, hashed and compared many times in each plan (a tuple's hash and equality are the
# C ones). A task is a dataclass, which the planner's facts of a task extend.


class SlotKey(NamedTuple):
    phase: Phase
    candidate_id: str | None
    slot: int


@dataclass(frozen=True, slots=True)
class TaskView:
    """What the slots need of a stored task: which slot and attempt it is, and its state."""

    task_id: str
    phase: Phase
    candidate_id: str | None
    slot: int
    attempt: int
    status: TaskStatus
    agent_id: str | None = None

    @property
    def key(self) -> SlotKey:
        return SlotKey(self.phase, self.candidate_id, self.slot)


class SlotNeed(NamedTuple):
    """A slot to dispatch now: ``house`` when its external attempts are used up."""

    key: SlotKey
    attempt: int
    house: bool


class SlotState(StrEnum):
    """Where a slot stands."""

    OPEN = "open"  # nothing dispatched yet, or the last attempt failed
    RUNNING = "running"
    DONE = "done"


_NEXT_PHASE: Final = {Phase.BUILD: Phase.VERIFY, Phase.VERIFY: Phase.CRITIQUE}


def slot_keys(phase: Phase, candidate_id: str | None, sizes: RunSizes) -> list[SlotKey]:
    return [SlotKey(phase, candidate_id, slot) for slot in range(sizes.per_candidate(phase))]


def _by_slot(tasks: Iterable[TaskView]) -> dict[SlotKey, list[TaskView]]:
    grouped: dict[SlotKey, list[TaskView]] = {}
    for task in tasks:
        grouped.setdefault(task.key, []).append(task)
    return grouped


def slot_state(tasks: Sequence[TaskView]) -> tuple[SlotState, int]:
    """The slot's state and the attempt a new dispatch would have."""
    if not tasks:
        return SlotState.OPEN, 0
    if any(task.status is TaskStatus.SUCCEEDED for task in tasks):
        return SlotState.DONE, 0
    latest = max(task.attempt for task in tasks)
    if any(task.status is TaskStatus.RUNNING for task in tasks):
        return SlotState.RUNNING, latest
    return SlotState.OPEN, latest + 1


@dataclass(frozen=True, slots=True)
class SlotIndex:
    """A run's tasks grouped by slot once, for the questions a step asks many times (each
    slot's state is worked out once, when first asked)."""

    grouped: dict[SlotKey, list[TaskView]]
    states: dict[SlotKey, tuple[SlotState, int]] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, tasks: Iterable[TaskView]) -> SlotIndex:
        return cls(_by_slot(tasks))

    def state(self, key: SlotKey) -> tuple[SlotState, int]:
        known = self.states.get(key)
        if known is None:
            known = self.states[key] = slot_state(self.grouped.get(key, []))
        return known

    def phase_done(self, phase: Phase, candidate_id: str | None, sizes: RunSizes) -> bool:
        """Every slot of ``phase`` for ``candidate_id`` has a successful task."""
        return all(
            self.state(key)[0] is SlotState.DONE for key in slot_keys(phase, candidate_id, sizes)
        )

    def candidate_done(self, candidate_id: str, sizes: RunSizes) -> bool:
        return self.phase_done(Phase.CRITIQUE, candidate_id, sizes)

    def candidate_phase(self, candidate_id: str, sizes: RunSizes) -> Phase:
        """The phase a shortlisted candidate is in (CRITIQUE also when it is finished)."""
        phase = Phase.BUILD
        while phase in _NEXT_PHASE and self.phase_done(phase, candidate_id, sizes):
            phase = _NEXT_PHASE[phase]
        return phase

    def needs(
        self,
        shortlisted: Sequence[str] | None,
        sizes: RunSizes,
        max_reroutes: int = DEFAULT_MAX_REROUTES,
    ) -> list[SlotNeed]:
        """See :func:`next_needs`."""
        keys: list[SlotKey] = []
        if shortlisted is None:
            keys = slot_keys(Phase.SCOUT, None, sizes)
        else:
            for cid in shortlisted:
                keys += slot_keys(self.candidate_phase(cid, sizes), cid, sizes)
        needs = []
        for key in keys:
            state, attempt = self.state(key)
            if state is SlotState.OPEN:
                needs.append(SlotNeed(key, attempt, house=attempt > max_reroutes))
        return needs


def phase_done(
    tasks: Iterable[TaskView], phase: Phase, candidate_id: str | None, sizes: RunSizes
) -> bool:
    """Every slot of ``phase`` for ``candidate_id`` has a successful task."""
    return SlotIndex.of(tasks).phase_done(phase, candidate_id, sizes)


def candidate_done(tasks: Iterable[TaskView], candidate_id: str, sizes: RunSizes) -> bool:
    return SlotIndex.of(tasks).candidate_done(candidate_id, sizes)


def next_needs(
    tasks: Iterable[TaskView],
    shortlisted: Sequence[str] | None,
    sizes: RunSizes,
    max_reroutes: int = DEFAULT_MAX_REROUTES,
) -> list[SlotNeed]:
    """The slots to dispatch now.

    ``shortlisted`` is ``None`` until the shortlist is made; then the ids of the
    shortlisted candidates in shortlist order. A slot is needed when nothing
    was dispatched for it yet, or when its latest attempt failed; attempts past
    ``max_reroutes`` are marked for a house agent.
    """
    return SlotIndex.of(tasks).needs(shortlisted, sizes, max_reroutes)
