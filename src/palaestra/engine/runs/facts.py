"""What a step reads of the runs it claimed, in bulk: a few ``run_id IN (...)`` queries.

:func:`read_facts` reads what planning needs (never a payload, and of outputs
only the new scouts' own); :func:`read_context` what the opened tasks are told
(the candidates' scout outputs, the builds and verifications so far);
:func:`read_records` what a finished run's settlement needs. Each takes the
synchronous connection of :meth:`Database.transact
<palaestra.store.db.Database.transact>` or of a read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import and_, exists, select
from sqlalchemy.engine import Connection

from palaestra.engine.runs.endpoint import read_endpoint
from palaestra.protocol.constants import Phase
from palaestra.rules.runs.report import CandidateRecord, TaskRecord
from palaestra.rules.runs.runflow import CandidateStatus, RunSizes, TaskStatus
from palaestra.rules.runs.runplan import CandidateFacts, RunFacts, TaskFacts
from palaestra.rules.runs.scoring import shortlist_score
from palaestra.store.lists import one_of
from palaestra.store.models import Candidate, Task

__all__ = ["ClaimedRun", "Context", "Scouted", "read_context", "read_facts", "read_records"]

_SUCCEEDED: Final = TaskStatus.SUCCEEDED.value
#: The closed sets by their stored values: a dict lookup is several times an Enum call's speed.
_PHASES: Final = {phase.value: phase for phase in Phase}
_STATUSES: Final = {status.value: status for status in TaskStatus}
_CANDIDATE_STATUSES: Final = {status.value: status for status in CandidateStatus}


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    """A RUNNING run as its claim returned it."""

    id: str
    goal: str
    launchpad: str
    phase: Phase
    config: Mapping[str, Any]
    kicks: int
    #: Each phase's deadline in seconds, by the phase's value (read from the config once).
    deadlines: Mapping[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        configured = self.config.get("deadlines_ms", {})
        deadlines = {
            value: float(configured.get(value, phase.deadline_ms)) / 1000
            for value, phase in _PHASES.items()
        }
        object.__setattr__(self, "deadlines", deadlines)

    @property
    def sizes(self) -> RunSizes:
        return RunSizes.of(self.config.get("sizes", {}))

    @property
    def max_reroutes(self) -> int:
        return int(self.config.get("max_reroutes", 2))

    @property
    def seed(self) -> str:
        return str(self.config.get("seed", self.id))

    def deadline_s(self, phase: Phase) -> float:
        return self.deadlines[phase]  # a StrEnum is found by its value


@dataclass(frozen=True, slots=True)
class Scouted:
    """A successful SCOUT task's output, not yet a candidate."""

    output: dict[str, Any]

    @property
    def title(self) -> str:
        return str(self.output.get("candidate_title", "")).strip()[:500]

    @property
    def score(self) -> float:
        return shortlist_score(self.output)


_TASK_FACTS: Final = select(
    Task.run_id,
    Task.id,
    Task.phase,
    Task.candidate_id,
    Task.slot,
    Task.attempt,
    Task.status,
    Task.agent_id,
    Task.created_at,
    Task.sent_at,
    Task.deferred_at,
    Task.completed_at,
    Task.executor,
).where(one_of(Task.run_id, "runs"))
_CANDIDATE_FACTS: Final = select(
    Candidate.run_id,
    Candidate.id,
    Candidate.source_task_id,
    Candidate.title,
    Candidate.shortlist_score,
    Candidate.status,
    Candidate.created_at,
).where(one_of(Candidate.run_id, "runs"))
#: The outputs of successful SCOUT tasks that have no candidate yet.
_NEW_SCOUTS: Final = select(Task.id, Task.output).where(
    one_of(Task.run_id, "runs"),
    Task.phase == Phase.SCOUT,
    Task.status == _SUCCEEDED,
    ~exists().where(and_(Candidate.run_id == Task.run_id, Candidate.source_task_id == Task.id)),
)


def read_facts(
    connection: Connection, runs: Sequence[ClaimedRun]
) -> tuple[dict[str, RunFacts], dict[str, Scouted]]:
    """Each run's facts for planning, and the new scouts' outputs by task id."""
    ids = [run.id for run in runs]
    scouting = [run.id for run in runs if run.phase is Phase.SCOUT]  # only they get candidates
    scouted = {
        task_id: Scouted(output)
        for task_id, output in (
            connection.execute(_NEW_SCOUTS, {"runs": scouting}) if scouting else ()
        )
        if isinstance(output, dict)
    }
    tasks = _task_facts(connection, runs, scouted)
    candidates: dict[str, list[CandidateFacts]] = {run_id: [] for run_id in ids}
    for run_id, cid, source, title, score, status, created_at in connection.execute(
        _CANDIDATE_FACTS, {"runs": ids}
    ):
        candidates[run_id].append(
            CandidateFacts(
                cid, source or "", title, score or 0.0, _CANDIDATE_STATUSES[status], created_at
            )
        )
    waiting = any(
        t.deferred and t.status is TaskStatus.RUNNING for listed in tasks.values() for t in listed
    )
    endpoint = read_endpoint(connection) if waiting else None  # only a callback needs it
    facts = {
        run.id: RunFacts(
            run.id,
            run.phase,
            run.sizes,
            run.max_reroutes,
            tasks[run.id],
            candidates[run.id],
            endpoint,
        )
        for run in runs
    }
    return facts, scouted


def _task_facts(
    connection: Connection, runs: Sequence[ClaimedRun], scouted: Mapping[str, Scouted]
) -> dict[str, list[TaskFacts]]:
    ids = [run.id for run in runs]
    tasks: dict[str, list[TaskFacts]] = {run_id: [] for run_id in ids}
    deadlines = {run.id: run.deadlines for run in runs}
    for (
        run_id,
        task_id,
        phase,
        candidate_id,
        slot,
        attempt,
        status,
        agent_id,
        created_at,
        sent_at,
        deferred_at,
        completed_at,
        executor,
    ) in connection.execute(_TASK_FACTS, {"runs": ids}):
        new = scouted.get(task_id)
        tasks[run_id].append(
            TaskFacts(
                task_id,
                _PHASES[phase],
                candidate_id,
                slot,
                attempt,
                _STATUSES[status],
                agent_id,
                opened_at=created_at,
                deadline_s=deadlines[run_id][phase],
                sent_at=sent_at,
                deferred=deferred_at is not None,
                completed_at=completed_at,
                scouted=None if new is None else (new.title, new.score),
                executor=executor,
            )
        )
    return tasks


@dataclass(slots=True)
class Context:
    """What opened tasks are told of their candidates: scout outputs, builds, verifications."""

    scout: dict[str, dict[str, Any]] = field(default_factory=dict)  # by candidate
    builds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    verifications: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def of(
        self, phase: Phase, candidate_id: str | None
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
        """(the scout's output, the builds, the verifications) a ``phase`` task is told."""
        if candidate_id is None:
            return None, [], []
        builds = self.builds.get(candidate_id, []) if phase is not Phase.BUILD else []
        checks = self.verifications.get(candidate_id, []) if phase is Phase.CRITIQUE else []
        return self.scout.get(candidate_id), builds, checks


_SCOUT_OUTPUTS: Final = select(Candidate.id, Candidate.scout_output).where(
    one_of(Candidate.id, "candidates")
)
#: By run and phase only: on PostgreSQL before 17, a list of candidates as a third
#: condition on the unique index is an index descent per (run, phase, candidate) triple,
#: 86,400 for 120 runs of 3 candidates each; the few other rows are left out here.
_LATER_OUTPUTS: Final = (
    select(Task.candidate_id, Task.phase, Task.output)
    .where(
        one_of(Task.run_id, "runs"),
        Task.phase.in_([Phase.BUILD, Phase.VERIFY]),
        Task.status == _SUCCEEDED,
    )
    .order_by(Task.slot, Task.id)
)


def read_context(
    connection: Connection, runs: Iterable[str], candidates: Iterable[str], context: Context
) -> Context:
    """Fill ``context`` with what tasks of ``candidates`` (of ``runs``) are told."""
    wanted = sorted(set(candidates) - set(context.scout))
    if not wanted:
        return context
    for cid, output in connection.execute(_SCOUT_OUTPUTS, {"candidates": wanted}):
        context.scout[cid] = output or {}
    chosen = set(wanted)
    for cid, phase, output in connection.execute(_LATER_OUTPUTS, {"runs": sorted(set(runs))}):
        if output is None or cid not in chosen:
            continue
        found = context.builds if phase == Phase.BUILD else context.verifications
        found.setdefault(cid, []).append(output)
    return context


_TASK_RECORDS: Final = select(
    Task.id,
    Task.run_id,
    Task.phase,
    Task.candidate_id,
    Task.slot,
    Task.attempt,
    Task.status,
    Task.executor,
    Task.agent_id,
    Task.via,
    Task.output,
    Task.contribution,
    Task.latency_ms,
    Task.sent_at,
    Task.deadline_at,
    Task.completed_at,
    Task.producer,
).where(one_of(Task.run_id, "runs"))
_CANDIDATE_RECORDS: Final = select(
    Candidate.run_id,
    Candidate.id,
    Candidate.title,
    Candidate.status,
    Candidate.scout_output,
    Candidate.shortlist_score,
    Candidate.source_task_id,
    Candidate.phase,
    Candidate.final_score,
    Candidate.rank,
    Candidate.created_at,
).where(one_of(Candidate.run_id, "runs"))


def read_records(
    connection: Connection, runs: Sequence[str]
) -> dict[str, tuple[list[TaskRecord], list[CandidateRecord]]]:
    """The finished runs' tasks and candidates as the settlement reads them."""
    records: dict[str, tuple[list[TaskRecord], list[CandidateRecord]]] = {
        run_id: ([], []) for run_id in runs
    }
    if not runs:
        return records
    for row in connection.execute(_TASK_RECORDS, {"runs": list(runs)}):
        task_id, run_id, phase, candidate_id, slot, attempt, status, *rest = row
        records[run_id][0].append(
            TaskRecord(
                task_id,
                run_id,
                _PHASES[phase],
                candidate_id,
                slot,
                attempt,
                _STATUSES[status],
                *rest,
            )
        )
    rows = connection.execute(_CANDIDATE_RECORDS, {"runs": list(runs)}).all()
    for run_id, cid, title, status, scout, score, source, phase, final, rank, _ in sorted(
        rows, key=lambda row: (row[-1], row[1])
    ):
        records[run_id][1].append(
            CandidateRecord(
                cid,
                title,
                _CANDIDATE_STATUSES[status],
                scout or {},
                score,
                source,
                phase,
                final,
                rank,
            )
        )
    return records
