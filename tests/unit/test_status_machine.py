"""The status machine, pair by pair: every status, every event, and the thresholds."""

from __future__ import annotations

import itertools

import pytest

from palaestra.rules.status import (
    PING_INTERVAL_S,
    AgentState,
    Event,
    Status,
    ping_interval,
    settled_by_success,
    transition,
)

S = Status
E = Event

# (status before, event) -> status after, for an agent with no failures and no hold.
EXPECTED: dict[tuple[Status, Event], Status] = {
    (S.PENDING, E.FAILURE): S.PENDING,
    (S.PENDING, E.SUCCESS): S.PENDING,
    (S.PENDING, E.VERIFIED): S.PENDING,
    (S.PENDING, E.WIZARD_PASSED): S.ACTIVE,
    (S.PENDING, E.PAUSE): S.PAUSED,
    (S.PENDING, E.RESUME): S.PENDING,
    (S.PENDING, E.ENDPOINT_CHANGED): S.PENDING,
    (S.ACTIVE, E.FAILURE): S.ACTIVE,
    (S.ACTIVE, E.SUCCESS): S.ACTIVE,
    (S.ACTIVE, E.VERIFIED): S.ACTIVE,
    (S.ACTIVE, E.WIZARD_PASSED): S.ACTIVE,
    (S.ACTIVE, E.PAUSE): S.PAUSED,
    (S.ACTIVE, E.RESUME): S.ACTIVE,
    (S.ACTIVE, E.ENDPOINT_CHANGED): S.PENDING,
    (S.DEGRADED, E.FAILURE): S.DEGRADED,
    (S.DEGRADED, E.SUCCESS): S.ACTIVE,
    (S.DEGRADED, E.VERIFIED): S.ACTIVE,
    (S.DEGRADED, E.WIZARD_PASSED): S.DEGRADED,
    (S.DEGRADED, E.PAUSE): S.PAUSED,
    (S.DEGRADED, E.RESUME): S.DEGRADED,
    (S.DEGRADED, E.ENDPOINT_CHANGED): S.PENDING,
    (S.PROBATION, E.FAILURE): S.PROBATION,
    (S.PROBATION, E.SUCCESS): S.DEGRADED,
    (S.PROBATION, E.VERIFIED): S.ACTIVE,
    (S.PROBATION, E.WIZARD_PASSED): S.PROBATION,
    (S.PROBATION, E.PAUSE): S.PAUSED,
    (S.PROBATION, E.RESUME): S.PROBATION,
    (S.PROBATION, E.ENDPOINT_CHANGED): S.PENDING,
    (S.SUSPENDED, E.FAILURE): S.SUSPENDED,
    (S.SUSPENDED, E.SUCCESS): S.SUSPENDED,
    (S.SUSPENDED, E.VERIFIED): S.ACTIVE,
    (S.SUSPENDED, E.WIZARD_PASSED): S.SUSPENDED,
    (S.SUSPENDED, E.PAUSE): S.PAUSED,
    (S.SUSPENDED, E.RESUME): S.SUSPENDED,
    (S.SUSPENDED, E.ENDPOINT_CHANGED): S.PENDING,
    (S.PAUSED, E.FAILURE): S.PAUSED,
    (S.PAUSED, E.SUCCESS): S.PAUSED,
    (S.PAUSED, E.VERIFIED): S.PAUSED,  # the owner's pause stands; resume gives ACTIVE
    (S.PAUSED, E.WIZARD_PASSED): S.PAUSED,
    (S.PAUSED, E.PAUSE): S.PAUSED,
    (S.PAUSED, E.RESUME): S.ACTIVE,  # paused with no recorded status: back to ACTIVE
    (S.PAUSED, E.ENDPOINT_CHANGED): S.PAUSED,  # the pause stands; resume gives PENDING
}
STATUS_EVENTS = [e for e in Event if e not in (E.HOLD, E.RELEASE)]


def test_the_table_covers_every_pair() -> None:
    assert set(EXPECTED) == set(itertools.product(Status, STATUS_EVENTS))


@pytest.mark.parametrize(("status", "event"), sorted(EXPECTED))
def test_every_status_and_event(status: Status, event: Event) -> None:
    after = transition(AgentState(status), event)
    assert after.status is EXPECTED[status, event]


@pytest.mark.parametrize(("status", "hold"), list(itertools.product(Status, [False, True])))
@pytest.mark.parametrize("event", [E.HOLD, E.RELEASE])
def test_hold_and_release_touch_only_the_flag(status: Status, hold: bool, event: Event) -> None:
    before = AgentState(status, failures=4, hold=hold)
    after = transition(before, event)
    assert after.hold is (event is E.HOLD)
    assert (after.status, after.failures) == (status, 4)


@pytest.mark.parametrize("status", list(Status))
def test_hold_survives_every_other_event(status: Status) -> None:
    for event in STATUS_EVENTS:
        assert transition(AgentState(status, hold=True), event).hold is True


def walk(events: list[Event], start: Status = S.ACTIVE) -> list[tuple[Status, int]]:
    state = AgentState(start)
    seen = []
    for event in events:
        state = transition(state, event)
        seen.append((state.status, state.failures))
    return seen


def test_consecutive_failures_walk_active_to_suspended() -> None:
    assert walk([E.FAILURE] * 10) == [
        (S.ACTIVE, 1),
        (S.ACTIVE, 2),
        (S.DEGRADED, 3),
        (S.DEGRADED, 4),
        (S.DEGRADED, 5),
        (S.PROBATION, 6),
        (S.PROBATION, 7),
        (S.PROBATION, 8),
        (S.SUSPENDED, 9),
        (S.SUSPENDED, 10),
    ]


def test_one_success_promotes_one_step_and_resets_the_counter() -> None:
    assert walk([E.FAILURE] * 6 + [E.SUCCESS, E.SUCCESS, E.SUCCESS])[-3:] == [
        (S.DEGRADED, 0),
        (S.ACTIVE, 0),
        (S.ACTIVE, 0),
    ]


def test_degraded_agent_is_not_demoted_again_below_six() -> None:
    # After a success to DEGRADED the counter restarts: three failures keep it DEGRADED.
    events = [E.FAILURE] * 6 + [E.SUCCESS] + [E.FAILURE] * 5
    assert walk(events)[-1] == (S.DEGRADED, 5)
    assert walk([*events, E.FAILURE])[-1] == (S.PROBATION, 6)


def test_failures_count_while_paused_but_do_not_move_the_status() -> None:
    state = transition(AgentState(S.DEGRADED, failures=4), E.PAUSE)
    for _ in range(6):
        state = transition(state, E.FAILURE)
    assert (state.status, state.failures, state.paused_from) == (S.PAUSED, 10, S.DEGRADED)
    assert transition(state, E.RESUME).status is S.DEGRADED


def test_pause_remembers_and_resume_restores() -> None:
    paused = transition(AgentState(S.PROBATION, failures=7), E.PAUSE)
    assert (paused.status, paused.paused_from) == (S.PAUSED, S.PROBATION)
    assert transition(paused, E.PAUSE) == paused
    resumed = transition(paused, E.RESUME)
    assert (resumed.status, resumed.paused_from, resumed.failures) == (S.PROBATION, None, 7)


def test_verify_of_a_paused_agent_keeps_the_pause_and_resumes_active() -> None:
    paused = transition(AgentState(S.SUSPENDED, failures=9), E.PAUSE)
    verified = transition(paused, E.VERIFIED)
    assert verified == AgentState(S.PAUSED, failures=0, paused_from=S.ACTIVE)
    assert transition(verified, E.RESUME) == AgentState(S.ACTIVE)


def test_verify_resets_the_counter_but_not_a_pending_agent() -> None:
    assert transition(AgentState(S.SUSPENDED, failures=12), E.VERIFIED) == AgentState(S.ACTIVE)
    pending = AgentState(S.PENDING, failures=2)
    assert transition(pending, E.VERIFIED) == pending


@pytest.mark.parametrize("status", list(Status))
@pytest.mark.parametrize("hold", [False, True])
def test_ping_cadence(status: Status, hold: bool) -> None:
    expected = None if hold else {S.ACTIVE: 300.0, S.DEGRADED: 60.0, S.PROBATION: 60.0}.get(status)
    assert ping_interval(AgentState(status, hold=hold)) == expected


def test_cadence_matches_the_seed() -> None:
    assert PING_INTERVAL_S == {S.ACTIVE: 300.0, S.DEGRADED: 60.0, S.PROBATION: 60.0}


@pytest.mark.parametrize(
    ("status", "failures", "paused_from", "hold"),
    list(itertools.product(Status, [0, 1, 3, 9], [None, Status.DEGRADED], [False, True])),
)
def test_settled_by_success_says_whether_a_success_changes_the_state(
    status: Status, failures: int, paused_from: Status | None, hold: bool
) -> None:
    state = AgentState(status, failures, paused_from, hold)
    after = transition(state, E.SUCCESS)
    assert settled_by_success(state) is (after == state)
    if settled_by_success(state):
        assert after is state  # and the machine hands back the very same state


def test_a_new_endpoint_waits_for_its_wizard_even_under_a_pause() -> None:
    changed = transition(AgentState(S.DEGRADED, failures=4), E.ENDPOINT_CHANGED)
    assert (changed.status, changed.failures, changed.paused_from) == (S.PENDING, 0, None)
    paused = transition(AgentState(S.ACTIVE), E.PAUSE)
    moved = transition(paused, E.ENDPOINT_CHANGED)
    assert (moved.status, moved.paused_from) == (S.PAUSED, S.PENDING)
    assert transition(moved, E.RESUME).status is S.PENDING
    # Its wizard passing while paused: the pause stands, and resume gives ACTIVE.
    admitted = transition(moved, E.WIZARD_PASSED)
    assert (admitted.status, admitted.paused_from) == (S.PAUSED, S.ACTIVE)
    assert transition(admitted, E.RESUME).status is S.ACTIVE
