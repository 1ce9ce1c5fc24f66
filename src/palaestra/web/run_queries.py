"""What a run's page shows, read straight from the runs, candidates and tasks tables.

The phases are summarised as the API summarises them
(``engine.runs.phase_summary``), with the shortlist and the report as steps
of their own. Agents' outputs are hostile input: everything taken from them
is turned into plain strings and numbers here and escaped by the templates.
Signed payloads (the prompts) are not shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
from pydantic import Field
from sqlalchemy import select

from palaestra.engine.history import task_bodies_archive
from palaestra.engine.runs.reading import (
    UNSUCCESSFUL,
    RunDetail,
    RunRead,
    TaskRead,
    read_run,
    shown_report,
)
from palaestra.engine.runs.service import phase_summary
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.producers import producer_label
from palaestra.rules.reasons import public_reason
from palaestra.rules.runs.runflow import CandidateStatus, RunStatus, TaskStatus
from palaestra.store.models import Candidate, Run, Task

__all__ = [
    "CandidateView",
    "RunPage",
    "RunStep",
    "TaskRow",
    "output_facts",
    "run_owner",
    "run_page",
    "text",
]


@dataclass(frozen=True, slots=True)
class RunStep:
    """One step of the run's timeline: a phase, the shortlist or the report."""

    key: str
    state: str  # done | running | pending | failed
    detail: str
    slots: int | None = None
    done: int = 0
    running: int = 0
    failed: int = 0
    rerouted: int = 0


class TaskRow(TaskRead):
    """A task as the run's page lists it: what the API shows, and its output."""

    output: dict[str, Any] | None

    @property
    def produced_by(self) -> str:
        """Who wrote the answer, as the page labels it (empty before an answer)."""
        return producer_label(self.producer, self.model_id)

    @classmethod
    def of(cls, task: Task) -> TaskRow:
        """``task`` as a public page shows it: a failed task's kind and status, not what its
        agent sent."""
        facts = TaskRead.model_validate(task)
        return cls(
            **dict(facts.model_copy(update={"reason": public_reason(facts.reason)})),
            output=task.output if isinstance(task.output, dict) else None,
        )


@dataclass(frozen=True, slots=True)
class CandidateView:
    id: str
    title: str
    status: str
    shortlist_score: float | None
    final_score: float | None
    rank: int | None
    scout: dict[str, str]  # the scout's text fields, as strings
    source: TaskRow | None
    work: dict[str, list[TaskRow]]  # BUILD, VERIFY, CRITIQUE: every task, in order
    merged_into: str | None = None


class RunPage(RunRead):
    """A run as its page shows it: what the API shows of it, its error, and its steps,
    candidates, tasks and report."""

    launchpad_title: str
    error: str | None
    updated_at: float
    steps: list[RunStep]
    candidates: list[CandidateView]
    tasks: list[TaskRow]
    report: dict[str, Any] | None
    task_by_id: dict[str, TaskRow] = Field(default_factory=dict)
    sizes: dict[str, Any] = Field(default_factory=dict)
    #: Where history retention put the tasks' payloads and outputs ("archived on <date>,
    #: in <file>"), once it has; None while they are kept.
    bodies_archived: str | None = None

    @property
    def running(self) -> bool:
        return self.status == RunStatus.RUNNING

    @property
    def problems(self) -> list[TaskRow]:
        """Failed and timed-out tasks, and the re-routes and house answers that replaced them."""
        return [t for t in self.tasks if t.failed or t.attempt > 0]


def text(value: Any, limit: int = 2000) -> str:
    """An agent's value as plain text, cut at ``limit`` characters."""
    if value is None:
        return ""
    if isinstance(value, str):
        found = value
    elif isinstance(value, dict | list):
        found = orjson.dumps(value).decode()
    else:
        found = str(value)
    return found if len(found) <= limit else found[: limit - 1] + "…"


_SCOUT_FIELDS: Final = ("target_customer", "core_problem", "proposed_solution", "why_now")


def _get(output: Mapping[str, Any], path: str) -> Any:
    value: Any = output
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _items(value: Any, limit: int = 5) -> str:
    if not isinstance(value, list) or not value:
        return ""
    shown = "; ".join(text(item, 300) for item in value[:limit])
    return shown + (f" (+{len(value) - limit} more)" if len(value) > limit else "")


def output_facts(phase: str, output: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The lines of a task's output worth reading at a glance, as (label, plain text)."""
    if not output:
        return []
    facts: list[tuple[str, str]] = []
    if phase == Phase.BUILD:
        phases = _get(output, "execution.phases")
        facts = [
            ("objective", text(_get(output, "execution.objective"), 600)),
            ("first milestone", text(_get(output, "execution.first_milestone"), 600)),
            ("success check", text(_get(output, "execution.success_check"), 600)),
            ("phases", str(len(phases)) if isinstance(phases, list) else ""),
        ]
    elif phase == Phase.VERIFY:
        facts = [
            ("evidence quality", text(output.get("evidence_quality_score"))),
            ("claim coverage", text(output.get("claim_coverage_score"))),
            ("confidence", text(output.get("overall_confidence"))),
            ("red flags", _items(output.get("red_flags"))),
        ]
    elif phase == Phase.CRITIQUE:
        adjustments = output.get("score_adjustments")
        total = (
            sum(v for v in adjustments.values() if isinstance(v, int | float))
            if isinstance(adjustments, dict)
            else None
        )
        facts = [
            ("verdict", text(output.get("verdict"))),
            ("fatal flaw", "yes" if output.get("fatal_flaw") is True else ""),
            ("elimination reason", text(output.get("elimination_reason"), 600)),
            ("adjustments", f"{total:+g}" if total else ""),
            ("penalty points", text(output.get("penalty_points"))),
            ("strengths", _items(output.get("strengths"))),
            ("weaknesses", _items(output.get("weaknesses"))),
        ]
    return [(label, value) for label, value in facts if value]


def _steps(detail: RunDetail, run: Run) -> list[RunStep]:
    try:
        phases = {row["phase"]: row for row in phase_summary(detail)}
    except ValueError:  # a row the run rules do not know: count what can be counted
        phases = {}
    steps: list[RunStep] = []

    def phase_step(phase: Phase) -> RunStep:
        row = phases.get(phase.value)
        mine = [t for t in detail.tasks if t.phase == phase.value]
        if row is None:
            row = {
                "status": "running" if mine else "pending",
                "slots": None,
                "done": sum(t.status == TaskStatus.SUCCEEDED for t in mine),
                "running": sum(t.status == TaskStatus.RUNNING for t in mine),
                "failed": sum(t.status in UNSUCCESSFUL for t in mine),
                "rerouted": sum(t.attempt > 0 for t in mine),
            }
        state = str(row["status"])
        if run.status == RunStatus.FAILED and state == "running":
            state = "failed"
        slots = row["slots"]
        detail_text = f"{row['done']} of {slots} done" if slots else f"{row['done']} done"
        return RunStep(
            phase.value,
            state,
            detail_text,
            slots=slots,
            done=int(row["done"]),
            running=int(row["running"]),
            failed=int(row["failed"]),
            rerouted=int(row["rerouted"]),
        )

    steps.append(phase_step(Phase.SCOUT))
    shortlist = run.config.get("shortlist") if isinstance(run.config, dict) else None
    if isinstance(shortlist, Mapping):
        kept = len(shortlist.get("kept") or [])
        dropped = len(shortlist.get("dropped") or [])
        merged = len(shortlist.get("merged") or {})
        steps.append(
            RunStep("shortlist", "done", f"{kept} kept, {dropped} dropped, {merged} merged")
        )
    else:
        scouted = len(detail.candidates)
        state = "failed" if run.status == RunStatus.FAILED else "pending"
        steps.append(RunStep("shortlist", state, f"{scouted} candidates so far"))
    for phase in (Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE):
        steps.append(phase_step(phase))
    if run.report is not None:
        ranked = len(run.report.get("ranking") or []) if isinstance(run.report, dict) else 0
        steps.append(RunStep("report", "done", f"{ranked} ranked"))
    elif run.status == RunStatus.FAILED:
        steps.append(RunStep("report", "failed", "the run failed"))
    else:
        steps.append(RunStep("report", "pending", "after the critiques"))
    return steps


def _candidate(
    candidate: Candidate, tasks: list[TaskRow], merged: Mapping[str, Any]
) -> CandidateView:
    scout = candidate.scout_output if isinstance(candidate.scout_output, dict) else {}
    by_id = {t.id: t for t in tasks}
    work = {
        phase.value: sorted(
            (t for t in tasks if t.candidate_id == candidate.id and t.phase == phase.value),
            key=lambda t: (t.slot, t.attempt),
        )
        for phase in (Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)
    }
    into = merged.get(candidate.id)
    return CandidateView(
        id=candidate.id,
        title=text(candidate.title, 500),
        status=candidate.status,
        shortlist_score=candidate.shortlist_score,
        final_score=candidate.final_score,
        rank=candidate.rank,
        scout={key: text(scout.get(key), 600) for key in _SCOUT_FIELDS if scout.get(key)},
        source=by_id.get(candidate.source_task_id or ""),
        work=work,
        merged_into=str(into) if into else None,
    )


_CANDIDATE_ORDER: Final[dict[str, int]] = {
    CandidateStatus.RANKED: 0,
    CandidateStatus.SHORTLISTED: 1,
    CandidateStatus.ELIMINATED: 2,
    CandidateStatus.PROPOSED: 3,
    CandidateStatus.MERGED: 4,
    CandidateStatus.DROPPED: 5,
}


async def run_owner(platform: Platform, run_id: str) -> str | None:
    """The owner of the run (None: no such run, or its owner is gone)."""
    async with platform.db.read() as connection:
        found = await connection.execute(select(Run.owner_id).where(Run.id == run_id))
        return found.scalar_one_or_none()


async def run_page(platform: Platform, run_id: str) -> RunPage | None:
    detail = await read_run(platform, run_id)
    if detail is None:
        return None
    run, candidates = detail.run, detail.candidates
    rows = [TaskRow.of(t) for t in detail.tasks]
    config = run.config if isinstance(run.config, dict) else {}
    shortlist = config.get("shortlist")
    merged = shortlist.get("merged") if isinstance(shortlist, dict) else None
    views = [_candidate(c, rows, merged if isinstance(merged, dict) else {}) for c in candidates]
    views.sort(
        key=lambda c: (
            _CANDIDATE_ORDER.get(c.status, 9),
            c.rank if c.rank is not None else 1_000_000,
            -(c.final_score if c.final_score is not None else c.shortlist_score or 0.0),
        )
    )
    archived = None
    if run.finished_at is not None and any(t.payload is None for t in detail.tasks):
        archived = await task_bodies_archive(platform, run.id)
    return RunPage(
        **dict(RunRead.model_validate(run)),
        launchpad_title=str(config.get("launchpad_title") or run.launchpad),
        error=run.error,
        updated_at=run.updated_at,
        steps=_steps(detail, run),
        candidates=views,
        tasks=rows,
        report=shown_report(run),
        task_by_id={t.id: t for t in rows},
        sizes=dict(config.get("sizes") or {}),
        bodies_archived=archived.words if archived else None,
    )
