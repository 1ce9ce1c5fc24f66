"""The agent status machine of edgearena-v1, as data and one pure function.

``transition(state, event)`` is the whole machine; the tests cover every
(status, event) pair. Time is passed in by the caller where it matters.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

__all__ = [
    "DEGRADED_AT",
    "DISPATCHABLE",
    "PINGABLE",
    "PING_INTERVAL_S",
    "PROBATION_AT",
    "SUSPENDED_AT",
    "AgentState",
    "Event",
    "PingSchedule",
    "Status",
    "next_ping_at",
    "ping_interval",
    "settled_by_success",
    "transition",
]

DEGRADED_AT: Final = 3
PROBATION_AT: Final = 6
SUSPENDED_AT: Final = 9


class Status(StrEnum):
    """Where an agent stands. PENDING precedes the first passed wizard."""

    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    DEGRADED = "DEGRADED"
    PROBATION = "PROBATION"
    SUSPENDED = "SUSPENDED"
    PAUSED = "PAUSED"


class Event(StrEnum):
    """What can happen to an agent."""

    FAILURE = "failure"  # a failed dispatch, health ping or owner verify
    SUCCESS = "success"  # a successful dispatch, async completion or health ping
    VERIFIED = "verified"  # owner verify with a 2xx reachability check
    WIZARD_PASSED = "wizard-passed"
    ENDPOINT_CHANGED = "endpoint-changed"  # the owner (or the admin) gave it a new URL
    PAUSE = "pause"
    RESUME = "resume"
    HOLD = "hold"
    RELEASE = "release"


#: Health ping cadence per status; statuses absent here are never pinged.
PING_INTERVAL_S: Final[dict[Status, float]] = {
    Status.ACTIVE: 300.0,
    Status.DEGRADED: 60.0,
    Status.PROBATION: 60.0,
}
PINGABLE: Final = frozenset(PING_INTERVAL_S)
#: Eligible for dispatch, in ranking order (ACTIVE first).
DISPATCHABLE: Final = (Status.ACTIVE, Status.DEGRADED, Status.PROBATION)

_ONE_STEP_UP: Final = {Status.PROBATION: Status.DEGRADED, Status.DEGRADED: Status.ACTIVE}
#: Statuses whose counter and rank the health signals move.
_IN_SERVICE: Final = frozenset({Status.ACTIVE, Status.DEGRADED, Status.PROBATION})


@dataclass(frozen=True, slots=True)
class AgentState:
    """The part of an agent the machine reads and writes."""

    status: Status
    failures: int = 0
    paused_from: Status | None = None
    hold: bool = False


def transition(state: AgentState, event: Event) -> AgentState:
    """The state after ``event``."""
    match event:
        case Event.FAILURE:
            failures = state.failures + 1
            if state.status not in _IN_SERVICE:
                return replace(state, failures=failures)
            return replace(state, failures=failures, status=_demoted(state.status, failures))
        case Event.SUCCESS:
            status = _ONE_STEP_UP.get(state.status, state.status)
            if status is state.status and state.failures == 0:
                return state  # the usual success changes nothing
            return replace(state, failures=0, status=status)
        case Event.VERIFIED:
            if state.status is Status.PENDING:
                return state  # only the wizard admits an agent
            if state.status is Status.PAUSED:
                # The agent's own key must not undo its owner's pause: it resumes ACTIVE.
                return replace(state, failures=0, paused_from=Status.ACTIVE)
            return replace(state, status=Status.ACTIVE, failures=0, paused_from=None)
        case Event.WIZARD_PASSED:
            if state.status is Status.PAUSED and state.paused_from is Status.PENDING:
                return replace(state, failures=0, paused_from=Status.ACTIVE)  # resumes ACTIVE
            if state.status is not Status.PENDING:
                return state
            return replace(state, status=Status.ACTIVE, failures=0)
        case Event.ENDPOINT_CHANGED:
            # A new URL has passed no wizard: nothing is sent to it until one passes there.
            if state.status is Status.PAUSED:
                return replace(state, failures=0, paused_from=Status.PENDING)
            return replace(state, status=Status.PENDING, failures=0, paused_from=None)
        case Event.PAUSE:
            if state.status is Status.PAUSED:
                return state
            return replace(state, status=Status.PAUSED, paused_from=state.status)
        case Event.RESUME:
            if state.status is not Status.PAUSED:
                return state
            return replace(state, status=state.paused_from or Status.ACTIVE, paused_from=None)
        case Event.HOLD:
            return replace(state, hold=True)
        case Event.RELEASE:
            return replace(state, hold=False)


def settled_by_success(state: AgentState) -> bool:
    """Whether a success leaves ``state`` as it is (a success changes only the heartbeat)."""
    return transition(state, Event.SUCCESS) is state


def _demoted(status: Status, failures: int) -> Status:
    if failures >= SUSPENDED_AT:
        return Status.SUSPENDED
    if failures >= PROBATION_AT:
        return Status.PROBATION
    if failures >= DEGRADED_AT and status is Status.ACTIVE:
        return Status.DEGRADED
    return status


def ping_interval(state: AgentState) -> float | None:
    """Seconds between health pings, or ``None`` when the agent is not pinged."""
    if state.hold:
        return None
    return PING_INTERVAL_S.get(state.status)


@dataclass(frozen=True, slots=True)
class PingSchedule:
    """How pings are spread: cadence times ``scale``, shortened by up to ``jitter``."""

    rng: random.Random
    jitter: float = 0.1
    scale: float = 1.0


def next_ping_at(state: AgentState, now: float, schedule: PingSchedule) -> float | None:
    """When the next health ping is due, or ``None`` when the agent is not pinged."""
    interval = ping_interval(state)
    if interval is None:
        return None
    return now + interval * schedule.scale * (1 - schedule.jitter * schedule.rng.random())
