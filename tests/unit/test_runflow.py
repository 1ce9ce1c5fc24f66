"""Run flow: which slots are dispatched when, re-routes, the house, and phase order."""

from __future__ import annotations

import itertools

import pytest

from palaestra.protocol import Phase
from palaestra.rules.runs.runflow import (
    RunSizes,
    SlotKey,
    SlotNeed,
    TaskStatus,
    TaskView,
    candidate_done,
    next_needs,
    phase_done,
    slot_state,
)

SIZES = RunSizes(scouts=2, shortlist=2, builds=1, verifies=1, critiques=2)
_ids = itertools.count()


def task(
    phase: Phase,
    status: TaskStatus,
    *,
    slot: int = 0,
    attempt: int = 0,
    candidate: str | None = None,
) -> TaskView:
    if candidate is None and phase is not Phase.SCOUT:
        candidate = "c1"
    return TaskView(f"t{next(_ids)}", phase, candidate, slot, attempt, status)


def keys(needs: list[SlotNeed]) -> list[tuple[str, str | None, int, int, bool]]:
    return [(n.key.phase.value, n.key.candidate_id, n.key.slot, n.attempt, n.house) for n in needs]


def test_a_new_run_needs_every_scout_slot() -> None:
    assert keys(next_needs([], None, SIZES)) == [
        ("SCOUT", None, 0, 0, False),
        ("SCOUT", None, 1, 0, False),
    ]


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([], ("open", 0)),
        ([TaskStatus.RUNNING], ("running", 0)),
        ([TaskStatus.SUCCEEDED], ("done", 0)),
        ([TaskStatus.FAILED], ("open", 1)),
        ([TaskStatus.TIMEOUT], ("open", 1)),
        ([TaskStatus.FAILED, TaskStatus.RUNNING], ("running", 1)),
        ([TaskStatus.FAILED, TaskStatus.TIMEOUT], ("open", 2)),
        ([TaskStatus.FAILED, TaskStatus.SUCCEEDED], ("done", 0)),
        ([TaskStatus.FAILED, TaskStatus.FAILED, TaskStatus.FAILED], ("open", 3)),
    ],
)
def test_slot_state_for_every_history(history: list[TaskStatus], expected: tuple[str, int]) -> None:
    tasks = [task(Phase.SCOUT, status, attempt=n) for n, status in enumerate(history)]
    state, attempt = slot_state(tasks)
    assert (state.value, attempt) == expected


@pytest.mark.parametrize(("failures", "house"), [(0, False), (1, False), (2, False), (3, True)])
def test_a_failed_slot_is_rerouted_twice_then_served_by_the_house(
    failures: int, house: bool
) -> None:
    tasks = [task(Phase.SCOUT, TaskStatus.FAILED, attempt=n) for n in range(failures)]
    tasks.append(task(Phase.SCOUT, TaskStatus.SUCCEEDED, slot=1))
    assert keys(next_needs(tasks, None, SIZES)) == [("SCOUT", None, 0, failures, house)]


def test_the_number_of_reroutes_is_configurable() -> None:
    tasks = [task(Phase.SCOUT, TaskStatus.TIMEOUT), task(Phase.SCOUT, TaskStatus.RUNNING, slot=1)]
    assert keys(next_needs(tasks, None, SIZES, max_reroutes=0)) == [("SCOUT", None, 0, 1, True)]


def test_running_and_done_slots_need_nothing() -> None:
    tasks = [task(Phase.SCOUT, TaskStatus.RUNNING), task(Phase.SCOUT, TaskStatus.SUCCEEDED, slot=1)]
    assert next_needs(tasks, None, SIZES) == []


def test_after_the_shortlist_each_candidate_starts_with_build() -> None:
    needs = next_needs([], ["c1", "c2"], SIZES)
    assert keys(needs) == [("BUILD", "c1", 0, 0, False), ("BUILD", "c2", 0, 0, False)]


def test_each_candidate_advances_as_soon_as_its_own_previous_phase_is_done() -> None:
    tasks = [
        task(Phase.BUILD, TaskStatus.SUCCEEDED, candidate="c1"),
        task(Phase.BUILD, TaskStatus.RUNNING, candidate="c2"),
    ]
    assert keys(next_needs(tasks, ["c1", "c2"], SIZES)) == [("VERIFY", "c1", 0, 0, False)]
    tasks.append(task(Phase.VERIFY, TaskStatus.SUCCEEDED, candidate="c1"))
    assert keys(next_needs(tasks, ["c1", "c2"], SIZES)) == [
        ("CRITIQUE", "c1", 0, 0, False),
        ("CRITIQUE", "c1", 1, 0, False),
    ]


def test_a_phase_waits_for_every_slot_of_the_previous_one() -> None:
    sizes = RunSizes(scouts=1, shortlist=1, builds=2, verifies=1, critiques=1)
    tasks = [
        task(Phase.BUILD, TaskStatus.SUCCEEDED),
        task(Phase.BUILD, TaskStatus.FAILED, slot=1),
    ]
    assert keys(next_needs(tasks, ["c1"], sizes)) == [("BUILD", "c1", 1, 1, False)]


def test_phase_done_and_candidate_done() -> None:
    tasks = [
        task(Phase.BUILD, TaskStatus.SUCCEEDED),
        task(Phase.VERIFY, TaskStatus.SUCCEEDED),
        task(Phase.CRITIQUE, TaskStatus.SUCCEEDED),
    ]
    assert phase_done(tasks, Phase.VERIFY, "c1", SIZES)
    assert not candidate_done(tasks, "c1", SIZES)  # two critiques are needed
    tasks.append(task(Phase.CRITIQUE, TaskStatus.FAILED, slot=1))
    assert not candidate_done(tasks, "c1", SIZES)
    tasks.append(task(Phase.CRITIQUE, TaskStatus.SUCCEEDED, slot=1, attempt=1))
    assert candidate_done(tasks, "c1", SIZES)
    assert next_needs(tasks, ["c1"], SIZES) == []
    assert not phase_done([], Phase.SCOUT, None, SIZES)


def test_sizes_round_trip_and_name_each_phase() -> None:
    sizes = RunSizes.of({"scouts": 4, "critiques": 3, "unknown": 9})
    assert sizes == RunSizes(scouts=4, critiques=3)
    assert RunSizes.of(sizes.as_dict()) == sizes
    assert [sizes.per_candidate(p) for p in Phase] == [4, 1, 1, 3]
    assert SlotKey(Phase.SCOUT, None, 0) == task(Phase.SCOUT, TaskStatus.RUNNING).key
