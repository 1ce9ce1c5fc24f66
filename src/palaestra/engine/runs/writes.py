"""A run step's writes, one transaction for the whole batch: only what the planner decided.

:func:`write_batch` runs in :meth:`Database.transact
<palaestra.store.db.Database.transact>`. First it takes the batch's runs that
are still leased to the stepper (on PostgreSQL locked, in id order): a run
whose lease lapsed and went to another stepper is left to that one. Then, for
those runs:

- when tasks expired, the agents their ends and the batch's settlements change
  are locked at once (in id order), and the tasks end (the recorder's own
  conditional update: from RUNNING only, the agent's effects with a timeout,
  none with a void);
- new candidates are stored, shortlists written, slots opened (selection and
  RUNNING rows, :func:`palaestra.engine.runs.dispatch.open_in`);
- each lease is released with the run's phase and next due time: at once if
  an event came while the run was being stepped (``runs.kicks`` moved);
- finished runs are settled (report, fates, contributions), from RUNNING
  only, and last the agents' reputations move: when no task expired, their
  agents are locked only then, so that a step holds no agent while it writes
  its tasks (the recorder, which writes every agent's outcomes, would wait on
  it). Either way rows are taken runs first and agents last, as the recorder
  takes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.engine import Connection

from palaestra.engine.runs.dispatch import Body, Opened, SlotRequest, open_in
from palaestra.engine.runs.facts import ClaimedRun
from palaestra.engine.runs.recorder import Finish, Recorder
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.runs.report import Settlement, reputations_after
from palaestra.rules.runs.runflow import CandidateStatus, RunStatus, TaskStatus
from palaestra.rules.runs.runplan import NewCandidate
from palaestra.rules.runs.scoring import Shortlist
from palaestra.store.bulk import insert_values, json_text, update_values
from palaestra.store.lists import one_of
from palaestra.store.models import Agent, Candidate, Run, Task

__all__ = ["BatchWrite", "RunWrite", "Written", "claim_sends", "write_batch"]

_RUNS = cast(Table, Run.__table__)
_TASKS = cast(Table, Task.__table__)
_AGENTS = cast(Table, Agent.__table__)
_CANDIDATES = cast(Table, Candidate.__table__)


@dataclass(slots=True)
class RunWrite:
    """What the step writes of one run."""

    run: ClaimedRun
    ends: list[Finish] = field(default_factory=list)
    candidates: list[tuple[NewCandidate, dict[str, Any]]] = field(default_factory=list)
    shortlist: Shortlist | None = None
    phase: Phase = Phase.SCOUT
    requests: list[SlotRequest] = field(default_factory=list)
    bodies: list[Body] = field(default_factory=list)
    settlement: Settlement | None = None
    wake_at: float | None = None
    failed: str | None = None  # the run could not be stepped: it fails, with this error


@dataclass(slots=True)
class BatchWrite:
    owner: str
    now: float
    runs: list[RunWrite]


@dataclass(slots=True)
class Written:
    held: set[str]
    opened: list[Opened]
    finished: list[str]
    #: Runs an event made due while they were stepped: due again at once, for a step
    #: that may have looked while their lease was held (and found nothing to claim).
    again: list[str]


_HELD: Final = select(_RUNS.c.id, _RUNS.c.kicks).where(
    one_of(_RUNS.c.id, "runs"),
    _RUNS.c.lease_owner == bindparam("owner"),
    _RUNS.c.status == RunStatus.RUNNING,
)
_HELD_LOCKED: Final = _HELD.order_by(_RUNS.c.id).with_for_update(key_share=True)
_LOCK_AGENTS: Final = (
    select(_AGENTS.c.id, _AGENTS.c.reputation)
    .where(one_of(_AGENTS.c.id, "ids"))
    .order_by(_AGENTS.c.id)
)
_CANDIDATE_COLUMNS: Final = (
    "id",
    "run_id",
    "source_task_id",
    "title",
    "scout_output",
    "status",
    "phase",
    "shortlist_score",
    "created_at",
    "updated_at",
)
_RELEASE_COLUMNS: Final = ("lease_owner", "lease_until", "due_at", "phase", "updated_at")


def write_batch(
    platform: Platform,
    recorder: Recorder,
    house_executor: str,
    batch: BatchWrite,
    connection: Connection,
) -> Written:
    """The batch's writes (see the module docstring), for the runs still leased."""
    sqlite = connection.dialect.name == "sqlite"
    ids = sorted(run.run.id for run in batch.runs)
    query = _HELD if sqlite else _HELD_LOCKED
    kicks = dict(connection.execute(query, {"runs": ids, "owner": batch.owner}).all())
    runs = [run for run in batch.runs if run.run.id in kicks]
    now = batch.now
    ends = [end for run in runs for end in run.ends]
    if ends:
        _lock_agents(connection, runs, sqlite)
        recorder.record_in(connection, ends, now)
    _store_candidates(connection, runs, now)
    _store_shortlists(connection, [run for run in runs if run.shortlist is not None], now)
    requests = [r for run in runs for r in run.requests]
    bodies = [b for run in runs for b in run.bodies]
    opened = open_in(platform, requests, bodies, house_executor, now, connection)
    again = _release(connection, runs, kicks, now)
    for run in runs:
        if run.failed is not None:
            _fail(connection, run, now)
    finished = [run for run in runs if run.settlement is not None]
    settled = _settle(connection, finished, now)
    _move_reputations(connection, settled, lock=not ends and not sqlite)
    ended = {run.run.id for run in settled} | {run.run.id for run in runs if run.failed is not None}
    again = [run_id for run_id in again if run_id not in ended]
    return Written(set(kicks), opened, [run.run.id for run in settled], again)


def _lock_agents(connection: Connection, runs: Sequence[RunWrite], sqlite: bool) -> None:
    """Lock, in id order and at once, every agent the batch's ends and settlements change
    (on SQLite the transaction holds the write lock already)."""
    ids = {end.agent_id for run in runs for end in run.ends if end.agent_id is not None}
    ids |= {a for run in runs if run.settlement for a, _ in run.settlement.ended if a}
    if ids and not sqlite:
        connection.execute(_LOCK_AGENTS.with_for_update(key_share=True), {"ids": sorted(ids)})


def _store_candidates(connection: Connection, runs: Sequence[RunWrite], now: float) -> None:
    rows = [
        (
            candidate.id,
            run.run.id,
            candidate.source_task_id,
            candidate.title,
            json_text(output),
            CandidateStatus.PROPOSED.value,
            Phase.SCOUT.value,
            candidate.shortlist_score,
            now,
            now,
        )
        for run in runs
        for candidate, output in run.candidates
    ]
    insert_values(connection, _CANDIDATES, _CANDIDATE_COLUMNS, rows)


def _store_shortlists(connection: Connection, runs: Sequence[RunWrite], now: float) -> None:
    """The shortlists made: each candidate's status, and each run's ``config.shortlist``
    (two statements for the batch)."""
    statuses, configs = [], []
    for run in runs:
        made = run.shortlist
        assert made is not None
        status = dict.fromkeys(made.kept, CandidateStatus.SHORTLISTED)
        status |= dict.fromkeys(made.dropped, CandidateStatus.DROPPED)
        status |= dict.fromkeys(made.merged, CandidateStatus.MERGED)
        statuses += [(value.value, now, cid) for cid, value in status.items()]
        config = dict(run.run.config)
        config["shortlist"] = {"kept": made.kept, "dropped": made.dropped, "merged": made.merged}
        configs.append((json_text(config), run.run.id))
    update_values(connection, _CANDIDATES, ("status", "updated_at"), ("id",), statuses)
    update_values(connection, _RUNS, ("config",), ("id",), configs)


def _release(
    connection: Connection, runs: Sequence[RunWrite], kicks: dict[str, int], now: float
) -> list[str]:
    """Release the runs' leases, each due at its wake time, or at once if an event came
    while it was stepped (``runs.kicks`` moved); the runs due at once."""
    rows, again = [], []
    for run in runs:
        kicked = kicks[run.run.id] != run.run.kicks
        if kicked:
            again.append(run.run.id)
        due = now if kicked else run.wake_at
        rows.append((None, None, due, run.phase.value, now, run.run.id))
    update_values(connection, _RUNS, _RELEASE_COLUMNS, ("id",), rows)
    return again


#: A run moves RUNNING -> COMPLETED with its report, once: those still RUNNING are read
#: first (the transaction holds their rows: SQLite's write lock, or PostgreSQL's row locks
#: taken with the lease check), then all are written in one statement.
_SETTLED_COLUMNS: Final = ("status", "phase", "report", "finished_at", "updated_at", "due_at")
_STILL_RUNNING: Final = select(_RUNS.c.id).where(
    one_of(_RUNS.c.id, "runs"),
    _RUNS.c.status == RunStatus.RUNNING,
)


def _settle(connection: Connection, runs: Sequence[RunWrite], now: float) -> list[RunWrite]:
    """Write the runs' settlements, once: each run moves RUNNING -> COMPLETED first; the runs
    that did."""
    if not runs:
        return []
    running = set(connection.execute(_STILL_RUNNING, {"runs": [r.run.id for r in runs]}).scalars())
    settled = [run for run in runs if run.run.id in running]
    completed = RunStatus.COMPLETED.value
    rows = [(completed, "REPORT", _report_text(run), now, now, None, run.run.id) for run in settled]
    update_values(connection, _RUNS, _SETTLED_COLUMNS, ("id",), rows)
    fates = [
        (fate.status.value, fate.rank, fate.final_score, fate.phase, now, cid)
        for run in settled
        for cid, fate in _settlement(run).fates.items()
    ]
    columns = ("status", "rank", "final_score", "phase", "updated_at")
    update_values(connection, _CANDIDATES, columns, ("id",), fates)
    contributions = [
        (value, task_id)
        for run in settled
        for task_id, value in _settlement(run).contributions.items()
    ]
    update_values(connection, _TASKS, ("contribution",), ("id",), contributions)
    return settled


def _settlement(run: RunWrite) -> Settlement:
    assert run.settlement is not None
    return run.settlement


def _report_text(run: RunWrite) -> str:
    """The report as its JSON column stores it (as SQLAlchemy's JSON type would write it)."""
    return json_text(_settlement(run).report) or "null"


_FAILED_RUN: Final = (
    _RUNS.update()
    .where(_RUNS.c.id == bindparam("run"), _RUNS.c.status == RunStatus.RUNNING)
    .values(
        status=RunStatus.FAILED,
        error=bindparam("error"),
        finished_at=bindparam("now"),
        updated_at=bindparam("now"),
        due_at=None,
    )
)
_VOID_LEFT: Final = (
    _TASKS.update()
    .where(_TASKS.c.run_id == bindparam("run"), _TASKS.c.status == TaskStatus.RUNNING)
    .values(
        status=TaskStatus.VOIDED,
        reason=bindparam("error"),
        via="deadline",
        completed_at=bindparam("now"),
    )
)


def _fail(connection: Connection, run: RunWrite, now: float) -> None:
    params = {"run": run.run.id, "error": run.failed, "now": now}
    connection.execute(_FAILED_RUN, params)
    connection.execute(_VOID_LEFT, params)


def _move_reputations(connection: Connection, runs: Sequence[RunWrite], *, lock: bool) -> None:
    """Each agent's reputation takes the settled runs' contributions, in order: the agents are
    read after this batch's timeouts moved them, locked here with ``lock`` (else already)."""
    ended = [pair for run in runs if run.settlement for pair in run.settlement.ended]
    if not ended:
        return
    ids = sorted({agent_id for agent_id, _ in ended if agent_id})
    query = _LOCK_AGENTS.with_for_update(key_share=True) if lock else _LOCK_AGENTS
    current = dict(connection.execute(query, {"ids": ids}).all())
    moved = reputations_after(current, ended)
    rows = [(value, agent_id) for agent_id, value in sorted(moved.items())]
    update_values(connection, _AGENTS, ("reputation",), ("id",), rows)


_SENDABLE: Final = (
    update(Task)
    .where(
        one_of(Task.id, "ids"),
        Task.status == TaskStatus.RUNNING,
        Task.sent_at.is_(None),
        Task.created_at + Task.deadline_s > bindparam("now"),
    )
    .values(sent_at=bindparam("now"), deadline_at=bindparam("now") + Task.deadline_s)
    .returning(Task.id)
)


def claim_sends(ids: list[str], now: float, connection: Connection) -> list[str]:
    """Claim the sends of ``ids``: the tasks still RUNNING, never sent, and not past the time
    they had to be sent by. Their deadline now runs from this moment."""
    return list(connection.execute(_SENDABLE, {"ids": ids, "now": now}).scalars())
