"""The run planner: a run's next actions as a function of its state and the time."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Final

import pytest

from palaestra.protocol.constants import Phase
from palaestra.rules.runs.runflow import CandidateStatus, RunSizes, SlotKey, SlotNeed, TaskStatus
from palaestra.rules.runs.runplan import (
    CALLBACK_RETRY_S,
    CALLBACK_STALE_S,
    RECORD_GRACE_S,
    CallbackEndpoint,
    CandidateFacts,
    End,
    EndKind,
    NewCandidate,
    Plan,
    PlatformFault,
    RunFacts,
    TaskFacts,
    plan,
)

SIZES = RunSizes(scouts=2, shortlist=1, builds=1, verifies=1, critiques=1)
NOW = 1_000.0
DEADLINE = 30.0
R, S, F, T, V = (
    TaskStatus.RUNNING,
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.TIMEOUT,
    TaskStatus.VOIDED,
)


LOST = "platform fault: the task's answer was not recorded (its sender stopped)"


def ids() -> Iterator[str]:
    return (f"new-{n}" for n in itertools.count())


def task(
    task_id: str,
    phase: Phase = Phase.SCOUT,
    status: TaskStatus = R,
    *,
    slot: int = 0,
    attempt: int = 0,
    candidate: str | None = None,
    agent: str | None = "agent",
    opened: float = NOW - 1,
    sent: float | None = NOW - 1,
    deferred: bool = False,
    scouted: tuple[str, float] | None = None,
    completed: float | None = None,
) -> TaskFacts:
    if scouted is None and phase is Phase.SCOUT and status is S:
        scouted = (f"title of {task_id}", 50.0)
    return TaskFacts(
        task_id,
        phase,
        candidate,
        slot,
        attempt,
        status,
        agent,
        opened_at=opened,
        deadline_s=DEADLINE,
        sent_at=sent,
        deferred=deferred,
        completed_at=completed,
        scouted=scouted,
    )


def run(
    *tasks: TaskFacts,
    phase: Phase = Phase.SCOUT,
    candidates: tuple[CandidateFacts, ...] = (),
    max_reroutes: int = 2,
) -> RunFacts:
    return RunFacts("run", phase, SIZES, max_reroutes, tasks, candidates)


def candidate(
    cid: str, status: CandidateStatus = CandidateStatus.SHORTLISTED, score: float = 50.0
) -> CandidateFacts:
    return CandidateFacts(cid, f"src-{cid}", f"title {cid}", score, status, NOW - 100)


def need(
    phase: Phase, slot: int = 0, attempt: int = 0, cid: str | None = None, house: bool = False
) -> SlotNeed:
    return SlotNeed(SlotKey(phase, cid, slot), attempt, house)


# Ends: every (sent, deferred, time) case of a RUNNING external task.


@pytest.mark.parametrize(
    ("facts", "kind"),
    [
        # never sent: voided once its deadline has passed since it was opened
        ({"sent": None, "opened": NOW - DEADLINE + 1}, None),
        ({"sent": None, "opened": NOW - DEADLINE}, EndKind.VOID),
        # sent and waiting for a callback: the agent's timeout at the deadline
        ({"sent": NOW - DEADLINE + 1, "deferred": True}, None),
        ({"sent": NOW - DEADLINE, "deferred": True}, EndKind.TIMEOUT),
        # sent, nothing recorded: the sender times it out itself; past the grace it is lost
        ({"sent": NOW - DEADLINE}, None),
        ({"sent": NOW - DEADLINE - RECORD_GRACE_S + 0.5}, None),
        ({"sent": NOW - DEADLINE - RECORD_GRACE_S}, EndKind.VOID),
    ],
)
def test_a_running_task_ends_by_whose_fault_it_was(
    facts: dict[str, Any], kind: EndKind | None
) -> None:
    result = plan(run(task("t", **facts), task("u", slot=1)), NOW, ids())
    assert [end.kind for end in result.ends] == ([] if kind is None else [kind])


def test_the_reasons_say_whose_fault_it_was() -> None:
    late = task("late", sent=NOW - 100, deferred=True)
    unsent = task("unsent", slot=1, sent=None, opened=NOW - 100)
    lost = task("lost", Phase.SCOUT, slot=1, attempt=1, sent=NOW - 100)
    assert plan(run(late, unsent), NOW, ids()).ends == (
        End("late", EndKind.TIMEOUT, "External agent timed out after 30000ms"),
        End(
            "unsent",
            EndKind.VOID,
            "platform fault: the task was not sent within its 30000ms deadline",
        ),
    )
    assert plan(run(late, lost), NOW, ids()).ends[1] == End(
        "lost",
        EndKind.VOID,
        "platform fault: the task's answer was not recorded (its sender stopped)",
    )


SENT: Final = NOW - DEADLINE  # a deferred task whose deadline is now
DOWN: Final = "platform fault: the completion endpoint was down while the task's answer was due"


@pytest.mark.parametrize(
    ("endpoint", "now", "kind"),
    [
        # not watched (one embedded process, or no API ever started): the agent's timeout
        (None, NOW, EndKind.TIMEOUT),
        (CallbackEndpoint(up_since=SENT - 100), NOW, EndKind.TIMEOUT),
        # up since before the send, and seen alive at or after the deadline: the agent's
        (CallbackEndpoint(SENT - 100, alive_at=NOW), NOW, EndKind.TIMEOUT),
        (CallbackEndpoint(SENT - 100, alive_at=NOW + 2), NOW + 2, EndKind.TIMEOUT),
        # down between the send and the deadline (restarted): the platform's, once the agent
        # had its time to retry past the later of the deadline and the endpoint's return
        (CallbackEndpoint(SENT + 1), NOW, None),
        (CallbackEndpoint(SENT + 1), NOW + CALLBACK_RETRY_S - 0.5, None),
        (CallbackEndpoint(SENT + 1), NOW + CALLBACK_RETRY_S, EndKind.VOID),
        (CallbackEndpoint(SENT + 1, alive_at=NOW + 1), NOW + CALLBACK_RETRY_S, EndKind.VOID),
        (CallbackEndpoint(SENT + 1, down_since=NOW - 1), NOW + CALLBACK_RETRY_S, EndKind.VOID),
        (CallbackEndpoint(SENT + 1, down_since=SENT - 5), NOW + CALLBACK_RETRY_S, EndKind.VOID),
        (CallbackEndpoint(NOW + 10, down_since=NOW - 1), NOW + 10, None),
        (CallbackEndpoint(NOW + 10, down_since=NOW - 1), NOW + 10 + CALLBACK_RETRY_S, EndKind.VOID),
        # restarted, but down only after the deadline: up all along while it was due
        (CallbackEndpoint(NOW + 10, alive_at=NOW + 10, down_since=NOW), NOW + 10, EndKind.TIMEOUT),
        (CallbackEndpoint(NOW + 10, down_since=NOW + 2), NOW + 10, EndKind.TIMEOUT),
        # not seen alive since the deadline: waited for a while, then the platform's
        (CallbackEndpoint(SENT - 100, alive_at=NOW - 1), NOW, None),
        (CallbackEndpoint(SENT - 100, alive_at=NOW - 1), NOW + CALLBACK_STALE_S - 0.5, None),
        (CallbackEndpoint(SENT - 100, alive_at=NOW - 1), NOW + CALLBACK_STALE_S, EndKind.VOID),
    ],
)
def test_a_missed_callback_is_the_agent_s_only_if_the_endpoint_was_up_all_along(
    endpoint: CallbackEndpoint | None, now: float, kind: EndKind | None
) -> None:
    facts = replace(run(task("t", sent=SENT, deferred=True)), endpoint=endpoint)
    ends = plan(facts, now, ids()).ends
    assert [end.kind for end in ends] == ([] if kind is None else [kind])
    if kind is EndKind.VOID:
        assert ends[0] == End("t", EndKind.VOID, DOWN)
        assert ends[0].fault is PlatformFault.CALLBACK_DOWN


def test_an_endpoint_not_seen_alive_since_the_deadline_wakes_the_run_when_it_would_void() -> None:
    endpoint = CallbackEndpoint(SENT - 100, alive_at=NOW - 1)
    facts = replace(run(task("t", sent=SENT, deferred=True)), endpoint=endpoint)
    assert plan(facts, NOW, ids()).wake_at == pytest.approx(NOW + CALLBACK_STALE_S)


def test_an_endpoint_back_after_the_deadline_gives_the_agent_its_retry_time_from_then() -> None:
    endpoint = CallbackEndpoint(NOW + 2, alive_at=NOW + 2, down_since=NOW - 3)
    facts = replace(run(task("t", sent=SENT, deferred=True)), endpoint=endpoint)
    assert plan(facts, NOW + 2, ids()).wake_at == pytest.approx(NOW + 2 + CALLBACK_RETRY_S)


def test_the_endpoint_does_not_change_how_other_tasks_end() -> None:
    endpoint = CallbackEndpoint(up_since=NOW, alive_at=None)  # restarted a moment ago
    lost = task("lost", sent=NOW - DEADLINE - RECORD_GRACE_S)
    unsent = task("unsent", slot=1, sent=None, opened=NOW - DEADLINE)
    facts = replace(run(lost, unsent), endpoint=endpoint)
    assert [end.fault for end in plan(facts, NOW, ids()).ends] == [
        PlatformFault.NOT_RECORDED,
        PlatformFault.NOT_SENT,
    ]


@pytest.mark.parametrize("status", [S, F, T, V])
def test_a_finished_task_is_never_ended_again(status: TaskStatus) -> None:
    old = task("t", status=status, sent=NOW - 1000, completed=NOW - 900)
    assert plan(run(old), NOW, ids()).ends == ()


def test_a_house_task_the_house_never_answered_is_voided_never_timed_out() -> None:
    lost = task("h", agent=None, sent=NOW - DEADLINE - RECORD_GRACE_S)
    assert plan(run(lost), NOW, ids()).ends == (End("h", EndKind.VOID, LOST),)
    never_taken = task("h", agent=None, opened=NOW - DEADLINE, sent=None)
    assert plan(run(never_taken), NOW, ids()).ends[0].kind is EndKind.VOID
    # A 202 is an agent's answer; the house never defers, and is never charged a timeout.
    deferred = task("h", agent=None, sent=NOW - DEADLINE, deferred=True)
    assert plan(run(deferred), NOW, ids()).ends == ()
    answering = task("h", agent=None, sent=NOW - 1)
    assert plan(run(answering), NOW, ids()).ends == ()


@pytest.mark.parametrize(
    ("facts", "wake_at"),
    [
        ({"sent": None, "opened": NOW - 1}, NOW - 1 + DEADLINE),
        ({"sent": NOW - 2}, NOW - 2 + DEADLINE + RECORD_GRACE_S),
        ({"sent": NOW - 2, "deferred": True}, NOW - 2 + DEADLINE),
        ({"sent": NOW - 2, "agent": None}, NOW - 2 + DEADLINE + RECORD_GRACE_S),
    ],
)
def test_the_run_wakes_when_its_first_running_task_would_end(
    facts: dict[str, Any], wake_at: float
) -> None:
    result = plan(run(task("a", **facts), task("b", slot=1, sent=NOW)), NOW, ids())
    assert result.wake_at == pytest.approx(wake_at)
    assert result.idle  # a wake-up time alone writes nothing


def test_a_run_with_nothing_running_has_no_wake_up_time() -> None:
    done = [task(f"s{n}", status=S, slot=n, completed=NOW - n) for n in range(2)]
    assert plan(run(*done), NOW, ids()).wake_at is None


# Re-opening: a voided attempt is not a failure.


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([], need(Phase.SCOUT)),
        ([F], need(Phase.SCOUT, attempt=1)),
        ([F, T], need(Phase.SCOUT, attempt=2)),
        ([F, T, F], need(Phase.SCOUT, attempt=3, house=True)),
        ([V], need(Phase.SCOUT, attempt=1)),
        ([V, V, V, V], need(Phase.SCOUT, attempt=4)),  # never the house for the platform's faults
        ([F, V, T, V, F], need(Phase.SCOUT, attempt=5, house=True)),
        ([F, R], None),
        ([F, S], None),
    ],
)
def test_a_slot_reopens_and_goes_to_the_house_after_its_failures(
    history: list[TaskStatus], expected: SlotNeed | None
) -> None:
    tasks = [task(f"a{n}", status=s, attempt=n) for n, s in enumerate(history)]
    other = task("other", slot=1)  # keeps the SCOUT phase open
    opens = plan(run(*tasks, other), NOW, ids()).opens
    assert opens == (() if expected is None else (expected,))


def test_a_voided_task_reopens_its_slot_in_the_same_step() -> None:
    unsent = task("t", sent=None, opened=NOW - 100)
    result = plan(run(unsent, task("u", slot=1)), NOW, ids())
    assert [end.task_id for end in result.ends] == ["t"]
    assert result.opens == (need(Phase.SCOUT, attempt=1),)


# Candidates, shortlist, phases.


def test_scouted_tasks_become_candidates_in_the_order_they_answered() -> None:
    first = task("b", status=S, slot=1, completed=NOW - 5, scouted=("B", 40.0))
    second = task("a", status=S, slot=0, completed=NOW - 2, scouted=("A", 60.0))
    result = plan(run(first, second), NOW, ids())
    assert result.candidates == (
        NewCandidate("new-0", "b", "B", 40.0),
        NewCandidate("new-1", "a", "A", 60.0),
    )


def test_a_known_candidate_is_not_made_again() -> None:
    done = task("a", status=S, scouted=("A", 60.0))
    known = CandidateFacts("c", "a", "A", 60.0, CandidateStatus.PROPOSED, NOW - 1)
    assert plan(run(done, task("b", slot=1), candidates=(known,)), NOW, ids()).candidates == ()


def test_the_shortlist_waits_for_every_scout_slot() -> None:
    result = plan(run(task("a", status=S), task("b", slot=1)), NOW, ids())
    assert (result.shortlist, result.opens, result.phase) == (None, (), None)


def test_when_the_scouts_are_done_the_shortlist_is_made_and_build_opens() -> None:
    a = task("a", status=S, completed=NOW - 2, scouted=("Invoice autopilot", 40.0))
    b = task("b", status=S, slot=1, completed=NOW - 1, scouted=("Compliance calendar", 70.0))
    result = plan(run(a, b), NOW, ids())
    assert result.shortlist is not None
    assert (result.shortlist.kept, result.shortlist.dropped) == (["new-1"], ["new-0"])
    assert result.opens == (need(Phase.BUILD, cid="new-1"),)
    assert result.phase is Phase.BUILD
    assert not result.finished


def test_near_duplicates_merge_into_the_better_one() -> None:
    a = task("a", status=S, completed=NOW - 2, scouted=("Invoice autopilot for agencies", 40.0))
    b = task(
        "b", status=S, slot=1, completed=NOW - 1, scouted=("Invoice autopilot for agencies", 70.0)
    )
    result = plan(run(a, b), NOW, ids())
    assert result.shortlist is not None
    assert result.shortlist.merged == {"new-0": "new-1"}


@pytest.mark.parametrize(
    ("done", "phase", "opens"),
    [
        ([], Phase.BUILD, [need(Phase.BUILD, cid="c")]),
        ([Phase.BUILD], Phase.BUILD, [need(Phase.VERIFY, cid="c")]),
        ([Phase.BUILD, Phase.VERIFY], Phase.VERIFY, [need(Phase.CRITIQUE, cid="c")]),
    ],
)
def test_a_shortlisted_candidate_moves_phase_by_phase(
    done: list[Phase], phase: Phase, opens: list[SlotNeed]
) -> None:
    tasks = [task(p.value, p, S, candidate="c") for p in done]
    result = plan(run(*tasks, phase=phase, candidates=(candidate("c"),)), NOW, ids())
    assert list(result.opens) == opens
    assert result.phase == (opens[0].key.phase if opens[0].key.phase is not phase else None)
    assert not result.finished


def test_a_run_is_finished_when_every_shortlisted_candidate_has_its_critiques() -> None:
    tasks = [
        task(p.value, p, S, candidate="c") for p in (Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)
    ]
    dropped = candidate("d", CandidateStatus.DROPPED)
    result = plan(
        run(*tasks, phase=Phase.CRITIQUE, candidates=(candidate("c"), dropped)), NOW, ids()
    )
    assert result == Plan(finished=True)


def test_nothing_to_do_is_an_idle_plan() -> None:
    result = plan(run(task("a"), task("b", slot=1)), NOW, ids())
    assert result.idle
    assert not replace(result, finished=True).idle
