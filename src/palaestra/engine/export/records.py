"""The dataset's records: finished matches and runs, built from named columns, scrubbed.

Records are built from named columns, never from whole rows, so the
credentials of the platform cannot leak into them (``docs/dataset.md`` lists
every field). Free-form JSON also loses every object key named like a
credential (:data:`CREDENTIAL_KEYS`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Final, TypeVar

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage.matchflow import MatchStatus
from palaestra.rules.producers import counts_for_ratings
from palaestra.rules.runs.runflow import RunStatus
from palaestra.store.models import Agent, Candidate, Match, Run, Task, Turn
from palaestra.store.rating_models import RatedMatch

__all__ = [
    "ARCHIVE_JSON_TEXT_FIELDS",
    "CREDENTIAL_KEYS",
    "JSON_TEXT_FIELDS",
    "SCHEMA_VERSION",
    "match_records",
    "run_records",
    "scrub",
    "task_record",
]

SCHEMA_VERSION: Final = "1.0"
FINISHED_MATCHES: Final = (MatchStatus.SCORED, MatchStatus.VOIDED)
FINISHED_RUNS: Final = (RunStatus.COMPLETED, RunStatus.FAILED)
#: Object keys dropped from free-form JSON, compared without case, "-" read as "_".
CREDENTIAL_KEYS: Final = frozenset(
    {
        "api_key",
        "apikey",
        "access_token",
        "authorization",
        "claim_code",
        "key",
        "password",
        "provider_key",
        "secret",
        "secret_key",
        "token",
        "x_agent_key",
    }
)
#: Per file, the fields stored as JSON text in Parquet (objects in JSONL).
JSON_TEXT_FIELDS: Final = {
    "matches": ("material", "turns[].findings"),
    "runs": (
        "config",
        "report",
        "candidates[].scout_output",
        "tasks[].payload",
        "tasks[].output",
    ),
}
#: The same for the retention job's archive files, in the dataset's format.
ARCHIVE_JSON_TEXT_FIELDS: Final = {
    "agent_events": ("detail",),
    "task_bodies": ("payload", "output", "request_headers"),
    "completion_receipts": (),
}
_PAGE: Final = 200

Finished = TypeVar("Finished", Match, Run)
Child = TypeVar("Child")
Children = TypeVar("Children")


def scrub(value: Any) -> Any:
    """``value`` without any object key named like a credential, at any depth."""
    if isinstance(value, dict):
        return {
            k: scrub(v)
            for k, v in value.items()
            if str(k).lower().replace("-", "_") not in CREDENTIAL_KEYS
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _finished_page(
    query: Select[Finished],
    finished_at: InstrumentedAttribute[float | None],
    row_id: InstrumentedAttribute[str],
    since: float | None,
    after: tuple[float, str] | None,
) -> Select[Finished]:
    """The next page of ``query``'s finished rows in finishing order: finished at ``since``
    or later, and past ``after`` (the previous page's last finishing time and id)."""
    query = query.where(finished_at.is_not(None))
    if since is not None:
        query = query.where(finished_at >= since)
    if after is not None:
        query = query.where(
            or_(finished_at > after[0], and_(finished_at == after[0], row_id > after[1]))
        )
    return query.order_by(finished_at, row_id).limit(_PAGE)


async def _finished_pages(
    platform: Platform,
    query: Select[Finished],
    finished_at: InstrumentedAttribute[float | None],
    row_id: InstrumentedAttribute[str],
    since: float | None,
    children: Callable[[AsyncSession, list[str]], Awaitable[Children]],
) -> AsyncIterator[tuple[list[Finished], Children]]:
    """``query``'s finished rows a page at a time, in finishing order, each page with what
    ``children`` reads of its ids in the same session (closed before the page is yielded)."""
    after: tuple[float, str] | None = None
    while True:
        async with platform.db.session() as session:
            page = _finished_page(query, finished_at, row_id, since, after)
            rows = list(await session.scalars(page))
            if not rows:
                return
            read = await children(session, [r.id for r in rows])
        yield rows, read
        last = rows[-1]
        after = (last.finished_at or 0.0, last.id)


def _by_parent(rows: Iterable[Child], parent: Callable[[Child], str]) -> dict[str, list[Child]]:
    """``rows`` grouped by the id of the match or run each belongs to, in their order."""
    grouped: dict[str, list[Child]] = {}
    for row in rows:
        grouped.setdefault(parent(row), []).append(row)
    return grouped


# -- matches ---------------------------------------------------------------------------------


async def match_records(
    platform: Platform, since: float | None
) -> AsyncIterator[list[dict[str, Any]]]:
    """Finished matches' records, a page at a time, in finishing order."""
    fighters = await _fighters(platform)
    finished = select(Match).where(Match.status.in_(FINISHED_MATCHES))
    pages = _finished_pages(platform, finished, Match.finished_at, Match.id, since, _match_children)
    async for matches, (turns, markers) in pages:
        yield [_match_record(m, fighters, turns.get(m.id, []), markers.get(m.id)) for m in matches]


async def _match_children(
    session: AsyncSession, ids: list[str]
) -> tuple[dict[str, list[Turn]], dict[str, RatedMatch]]:
    """The turns of the matches ``ids``, and the markers of those that were rated."""
    turns = _by_parent(
        await session.scalars(
            select(Turn).where(Turn.match_id.in_(ids)).order_by(Turn.match_id, Turn.turn)
        ),
        lambda turn: turn.match_id,
    )
    markers = {
        m.match_id: m
        for m in await session.scalars(select(RatedMatch).where(RatedMatch.match_id.in_(ids)))
    }
    return turns, markers


async def _fighters(platform: Platform) -> dict[str, dict[str, Any]]:
    query = select(
        Agent.id,
        Agent.name,
        Agent.entrant_type,
        Agent.fighter_class,
        Agent.harness_name,
        Agent.provider,
        Agent.sandbox_attested,
    ).where(Agent.arena == Arena.CAGE)
    async with platform.db.session() as session:
        rows = (await session.execute(query)).all()
    return {
        r.id: {
            "fighter_id": r.id,
            "name": r.name,
            "entrant_type": r.entrant_type,
            "class": r.fighter_class,
            "harness_name": r.harness_name,
            "model": (r.provider or {}).get("model"),
            "sandbox_attested": bool(r.sandbox_attested),
        }
        for r in rows
    }


def _entrant(fighters: dict[str, dict[str, Any]], fighter_id: str, made: Any) -> dict[str, Any]:
    """The fighter as it stands, with who was to play for it when the match was made."""
    executor = made.get("executor") if isinstance(made, dict) else None
    known = fighters.get(fighter_id)
    if known is not None:
        return {**known, "executor": executor}
    return {
        "fighter_id": fighter_id,
        "name": None,
        "entrant_type": None,
        "class": None,
        "harness_name": None,
        "model": None,
        "sandbox_attested": False,
        "executor": executor,
    }


def _match_record(
    match: Match,
    fighters: dict[str, dict[str, Any]],
    turns: Iterable[Turn],
    marker: RatedMatch | None,
) -> dict[str, Any]:
    material = (match.material or {}).get("secret", {})
    made = (match.material or {}).get("entrants") or {}
    turns = list(turns)
    return {
        "schema_version": SCHEMA_VERSION,
        "match_id": match.id,
        "ruleset": match.ruleset,
        "kind": match.kind,
        "status": match.status,
        "outcome": match.outcome,
        "decided_by": match.decided_by,
        "void_reason": match.void_reason,
        "created_at": match.created_at,
        "finished_at": match.finished_at,
        "attacker": _entrant(fighters, match.attacker_id, made.get("attacker")),
        "defender": _entrant(fighters, match.defender_id, made.get("defender")),
        "baseline_played": not counts_for_ratings(t.producer for t in turns),
        "material": scrub(material if isinstance(material, dict) else {}),
        "turns": [
            {
                "turn": t.turn,
                "side": t.side,
                "fighter_id": t.fighter_id,
                "status": t.status,
                "payload": t.payload,
                "message": t.message,
                "reason": t.reason,
                "latency_ms": t.latency_ms,
                "findings": scrub(t.findings),
                "producer": t.producer,
                "model_id": t.model_id,
                "started_at": t.started_at,
                "finished_at": t.finished_at,
            }
            for t in turns
        ],
        "ratings": _ratings(marker),
    }


def _ratings(marker: RatedMatch | None) -> dict[str, Any] | None:
    if marker is None or marker.result is None:
        return None
    return {
        "result": marker.result,
        "attack_before": {"mu": marker.attack_mu_before, "sigma": marker.attack_sigma_before},
        "attack_after": {"mu": marker.attack_mu_after, "sigma": marker.attack_sigma_after},
        "defence_before": {"mu": marker.defence_mu_before, "sigma": marker.defence_sigma_before},
        "defence_after": {"mu": marker.defence_mu_after, "sigma": marker.defence_sigma_after},
    }


# -- runs ------------------------------------------------------------------------------------


async def run_records(
    platform: Platform, since: float | None
) -> AsyncIterator[list[dict[str, Any]]]:
    """Finished runs' records, a page at a time, in finishing order."""
    async with platform.db.session() as session:
        agents = {
            r.id: (r.name, r.role)
            for r in await session.execute(
                select(Agent.id, Agent.name, Agent.role).where(Agent.arena == Arena.EDGEARENA)
            )
        }
    finished = select(Run).where(Run.status.in_(FINISHED_RUNS))
    pages = _finished_pages(platform, finished, Run.finished_at, Run.id, since, _run_children)
    async for runs, (tasks, candidates) in pages:
        yield [_run_record(r, tasks.get(r.id, []), candidates.get(r.id, []), agents) for r in runs]


async def _run_children(
    session: AsyncSession, ids: list[str]
) -> tuple[dict[str, list[Task]], dict[str, list[Candidate]]]:
    """The tasks and the candidates of the runs ``ids``, each in its run's order."""
    tasks = _by_parent(
        await session.scalars(
            select(Task)
            .where(Task.run_id.in_(ids))
            .order_by(Task.run_id, Task.created_at, Task.phase, Task.slot, Task.attempt)
        ),
        lambda task: task.run_id,
    )
    candidates = _by_parent(
        await session.scalars(
            select(Candidate)
            .where(Candidate.run_id.in_(ids))
            .order_by(Candidate.run_id, Candidate.created_at, Candidate.id)
        ),
        lambda candidate: candidate.run_id,
    )
    return tasks, candidates


def _run_record(
    run: Run,
    tasks: Iterable[Task],
    candidates: Iterable[Candidate],
    agents: dict[str, tuple[str, str | None]],
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run.id,
        "goal": run.goal,
        "launchpad": run.launchpad,
        "status": run.status,
        "phase": run.phase,
        "error": run.error,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "config": scrub(run.config),
        "report": scrub(run.report),
        "candidates": [
            {
                "candidate_id": c.id,
                "source_task_id": c.source_task_id,
                "title": c.title,
                "status": c.status,
                "phase": c.phase,
                "shortlist_score": c.shortlist_score,
                "final_score": c.final_score,
                "rank": c.rank,
                "scout_output": scrub(c.scout_output),
            }
            for c in candidates
        ],
        "tasks": [
            task_record(t, agents.get(t.agent_id, (None, None))[1] if t.agent_id else None)
            | {"payload": scrub(t.payload), "output": scrub(t.output)}
            for t in tasks
        ],
    }


def task_record(task: Task, agent_role: str | None) -> dict[str, Any]:
    """A task as the dataset records it, its payload and output as they are (unscrubbed)."""
    return {
        "task_id": task.id,
        "candidate_id": task.candidate_id,
        "phase": task.phase,
        "slot": task.slot,
        "attempt": task.attempt,
        "agent_id": task.agent_id,
        "agent_role": agent_role,
        "executor": task.executor,
        "status": task.status,
        "via": task.via,
        "dispatched_at": task.sent_at,
        "deadline_at": task.deadline_at,
        "completed_at": task.completed_at,
        "latency_ms": task.latency_ms,
        "prompt_tokens": task.prompt_tokens,
        "completion_tokens": task.completion_tokens,
        "model_id": task.model_id,
        "producer": task.producer,
        "reason": task.reason,
        "contribution": task.contribution,
        "payload": task.payload,
        "output": task.output,
    }
