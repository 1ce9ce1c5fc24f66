"""The tables. Times are unix seconds (float) from the one clock; ids are UUIDv7 strings."""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.protocol.cage import Side
from palaestra.protocol.constants import Arena, Phase, Role
from palaestra.rules.cage import OPEN_MATCH_STATUSES, EntrantType, MatchStatus, TurnStatus
from palaestra.rules.cage.outcome import DecidedBy
from palaestra.rules.producers import Producer
from palaestra.rules.runs.runflow import CandidateStatus, RunStatus, TaskStatus
from palaestra.rules.status import Status
from palaestra.store import rating_models as _rating_models  # noqa: F401 - its tables
from palaestra.store import rollup_models as _rollup_models  # noqa: F401 - its tables
from palaestra.store.base import ID, Base, closed_set

__all__ = [
    "FAILED_EVENTS",
    "NOTABLE_EVENTS",
    "OPEN_MATCHES",
    "RUNNING_RUNS",
    "Agent",
    "AgentEvent",
    "Base",
    "Candidate",
    "CompletionReceipt",
    "Match",
    "Meta",
    "Owner",
    "Run",
    "Task",
    "Turn",
    "WebSession",
]

_ID = ID


class Meta(Base):
    """Small platform facts, such as the admin token's hash."""

    __tablename__ = "meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Owner(Base):
    __tablename__ = "owners"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[float] = mapped_column(Float)
    #: When the current token was issued in place of another; None: the one issued at creation.
    token_rotated_at: Mapped[float | None] = mapped_column(Float)
    #: When the owner's token was revoked: no token opens the owner until a new one is issued.
    token_revoked_at: Mapped[float | None] = mapped_column(Float)


class WebSession(Base):
    """A browser signed in with an owner's or the admin's token; only the id's hash is kept."""

    __tablename__ = "web_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str | None] = mapped_column(  # None: the admin's session
        _ID, ForeignKey("owners.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_web_sessions_expires", "expires_at"),)  # retention's deletes


class Agent(Base):
    """An edgearena agent or a cage fighter: one registered entrant of one owner."""

    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    owner_id: Mapped[str] = mapped_column(_ID, ForeignKey("owners.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    arena: Mapped[Arena] = mapped_column(closed_set(Arena, 16))
    role: Mapped[Role | None] = mapped_column(closed_set(Role, 16))
    entrant_type: Mapped[EntrantType | None] = mapped_column(closed_set(EntrantType, 16))
    fighter_class: Mapped[str | None] = mapped_column(String(32))
    endpoint_url: Mapped[str | None] = mapped_column(Text)
    harness_name: Mapped[str | None] = mapped_column(String(200))
    sandbox_attested: Mapped[bool] = mapped_column(Boolean, default=False)
    provider: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {base_url, model}
    provider_key_sealed: Mapped[str | None] = mapped_column(Text)
    key_sealed: Mapped[str | None] = mapped_column(Text)
    claim_code_hash: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[Status] = mapped_column(closed_set(Status, 16))
    paused_from: Mapped[Status | None] = mapped_column(closed_set(Status, 16))
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    cooldown_until: Mapped[float | None] = mapped_column(Float)
    last_heartbeat: Mapped[float | None] = mapped_column(Float)
    hold: Mapped[bool] = mapped_column(Boolean, default=False)
    next_ping_at: Mapped[float | None] = mapped_column(Float)
    reputation: Mapped[float] = mapped_column(Float, default=0.0)
    wizard_passed_at: Mapped[float | None] = mapped_column(Float)
    #: A fighter whose owner lets other owners start rated matches against it (within the
    #: per-pair cap, when the operator enables owner-rated matches).
    rated_challenges: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: A fighter other owners may start friendlies against (off by default for a model fighter).
    friendly_challenges: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false()
    )
    #: The advisory findings of the last finished wizard attempt; None before one finished.
    wizard_warnings: Mapped[list[str] | None] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        Index("ix_agents_owner", "owner_id"),
        Index("ix_agents_next_ping", "next_ping_at"),
        Index("ix_agents_arena_role_status", "arena", "role", "status"),
        Index("ix_agents_created", "created_at", "id"),  # the lists, newest first
        Index("ix_agents_arena_created", "arena", "created_at", "id"),
        # The live table's stamp: an arena's latest write, and how many (index only).
        Index("ix_agents_arena_updated", "arena", "updated_at"),
    )


#: The partial indexes' predicates, as SQL that a query states word for word (a bound
#: parameter would hide from the planner that they hold); notable: the overview's feed.
FAILED_EVENTS: Final = "outcome = 'failure'"
NOTABLE_EVENTS: Final = (
    "kind IN ('status', 'probe', 'challenge', 'verify', 'hold') "
    "OR (kind IN ('ping', 'dispatch', 'verify', 'wizard') AND outcome = 'failure')"
)


def _where(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": text(predicate), "postgresql_where": text(predicate)}


class AgentEvent(Base):
    """Append-only history: every ping, wizard check, dispatch and status change."""

    __tablename__ = "agent_events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    agent_id: Mapped[str] = mapped_column(_ID, ForeignKey("agents.id", ondelete="CASCADE"))
    at: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(32))  # ping, probe, wizard, verify, status, ...
    outcome: Mapped[str] = mapped_column(String(32))  # success, failure, or the new status
    latency_ms: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    # Reads go by agent (its newest rows, or its rows after the roll-ups' watermark), by
    # time in a recent window, or through the notable rows: never through the whole
    # history (migration 0012, ``store.rollups``).
    __table_args__ = (
        Index("ix_agent_events_agent_at", "agent_id", "at"),
        Index("ix_agent_events_agent_id", "agent_id", "id"),
        Index("ix_agent_events_agent_kind", "agent_id", "kind", "id"),
        Index("ix_agent_events_at", "at"),
        Index("ix_agent_events_failures", "agent_id", "id", **_where(FAILED_EVENTS)),
        Index("ix_agent_events_notable", "id", **_where(NOTABLE_EVENTS)),
    )


# The open matches and the running runs are few whatever the history: partial indexes hold
# them (migration 0017), and a read that wants them filters with the same SQL, written out
# (``sqlalchemy.text``), so that SQLite sees its filter is the index's. With the status as a
# parameter SQLite plans from its statistics, which give a status the rows of every status
# when nearly all rows have one (finished), and reads the whole table.
_OPEN_MATCH: Final = "status IN ({})".format(", ".join(f"'{s}'" for s in OPEN_MATCH_STATUSES))
_RUNNING_RUN: Final = f"status = '{RunStatus.RUNNING.value}'"
#: The open matches (``rules.cage.matchflow.OPEN_MATCH_STATUSES``), in SQL: ``ix_matches_open``.
OPEN_MATCHES: Final = f"matches.{_OPEN_MATCH}"
#: The running runs, in SQL: ``ix_runs_running``.
RUNNING_RUNS: Final = f"runs.{_RUNNING_RUN}"


class Run(Base):
    """An edgearena-v1 run: a goal turned into ranked, critiqued candidates."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    owner_id: Mapped[str | None] = mapped_column(_ID, ForeignKey("owners.id", ondelete="SET NULL"))
    goal: Mapped[str] = mapped_column(Text)
    launchpad: Mapped[str] = mapped_column(String(64))
    status: Mapped[RunStatus] = mapped_column(closed_set(RunStatus, 16))
    #: The furthest phase reached (``Phase``), or REPORT once the report is written.
    phase: Mapped[str] = mapped_column(String(16))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)  # slot counts, deadlines
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)
    #: The stepper stepping the run, and until when its claim holds (``engine.runs.stepper``).
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[float | None] = mapped_column(Float)
    #: When the run next needs a step: a task ended, or one comes due; None: nothing to do.
    due_at: Mapped[float | None] = mapped_column(Float)
    #: Bumped with each event that makes the run due, so a step knows one came meanwhile.
    kicks: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (
        Index("ix_runs_created", "created_at"),
        Index("ix_runs_status", "status"),
        Index("ix_runs_status_due", "status", "due_at"),
        Index("ix_runs_running", "created_at", **_where(_RUNNING_RUN)),
    )


class Candidate(Base):
    """A business candidate proposed by a scout and carried through the later phases."""

    __tablename__ = "candidates"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    run_id: Mapped[str] = mapped_column(_ID, ForeignKey("runs.id", ondelete="CASCADE"))
    source_task_id: Mapped[str | None] = mapped_column(_ID)
    title: Mapped[str] = mapped_column(Text)
    scout_output: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[CandidateStatus] = mapped_column(closed_set(CandidateStatus, 16))
    phase: Mapped[Phase | None] = mapped_column(closed_set(Phase, 16))  # last phase completed
    shortlist_score: Mapped[float | None] = mapped_column(Float)
    final_score: Mapped[float | None] = mapped_column(Float)
    rank: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_candidates_run", "run_id"),)


#: Percent of each page of ``tasks`` that PostgreSQL fills with new rows (see :class:`Task`).
TASKS_FILLFACTOR: Final = 50


class Task(Base):
    """One dispatch of one slot of one phase: a taskId reaches an endpoint at most once."""

    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)  # the protocol's taskId
    run_id: Mapped[str] = mapped_column(_ID, ForeignKey("runs.id", ondelete="CASCADE"))
    candidate_id: Mapped[str | None] = mapped_column(_ID)
    phase: Mapped[Phase] = mapped_column(closed_set(Phase, 16))
    slot: Mapped[int] = mapped_column(Integer)  # the slot within the phase (per candidate)
    attempt: Mapped[int] = mapped_column(Integer)  # 0, then 1-2 re-routes, then house
    agent_id: Mapped[str | None] = mapped_column(_ID, ForeignKey("agents.id", ondelete="SET NULL"))
    executor: Mapped[str] = mapped_column(String(200))  # agent name, house-model, house-baseline
    status: Mapped[TaskStatus] = mapped_column(closed_set(TaskStatus, 16))
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: The signed headers its POST carried (``protocol.SIGNED_HEADERS``; never a key); None:
    #: not sent, or sent before migration 0015. Retention archives and clears it.
    request_headers: Mapped[dict[str, str] | None] = mapped_column(JSON)
    #: When the task was claimed for sending (or for the house to answer); None: never sent.
    sent_at: Mapped[float | None] = mapped_column(Float)
    #: Seconds to answer from its send, set when opened; None: sent before migration 0017.
    deadline_s: Mapped[float | None] = mapped_column(Float)
    #: ``sent_at + deadline_s``, written by the send's claim; None: never sent.
    deadline_at: Mapped[float | None] = mapped_column(Float)
    #: When the agent answered 202 without a reply: its answer comes by the callback.
    deferred_at: Mapped[float | None] = mapped_column(Float)
    completed_at: Mapped[float | None] = mapped_column(Float)
    via: Mapped[str | None] = mapped_column(String(16))  # sync | callback | house
    output: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    model_id: Mapped[str | None] = mapped_column(String(200))
    #: Who wrote the answer; None until the task ends with one.
    producer: Mapped[Producer | None] = mapped_column(closed_set(Producer, 16))
    latency_ms: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(Text)
    contribution: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)

    # A task's row is updated in place (PostgreSQL's HOT updates) when it is sent, ends and
    # is settled: no index covers a column those change, and half of each page is left free
    # for the new versions (migration 0007, which also compresses payloads with lz4).
    __table_args__ = (
        Index("ix_tasks_run", "run_id"),
        # An agent's tasks a page at a time, newest first (migration 0013).
        Index("ix_tasks_agent_created", "agent_id", "created_at", "id"),
        # By creation (the roll-up job's hours): it never changes once written.
        Index("ix_tasks_created", "created_at"),
        # One task per slot attempt: a step repeated by another stepper opens nothing twice.
        # SCOUT tasks have no candidate, and NULLs are distinct in a unique index: theirs is
        # a partial index of its own.
        Index(
            "ux_tasks_slot_attempt",
            "run_id",
            "phase",
            "candidate_id",
            "slot",
            "attempt",
            unique=True,
        ),
        Index(
            "ux_tasks_scout_slot_attempt",
            "run_id",
            "phase",
            "slot",
            "attempt",
            unique=True,
            sqlite_where=text("candidate_id IS NULL"),
            postgresql_where=text("candidate_id IS NULL"),
        ),
        {"postgresql_with": {"fillfactor": TASKS_FILLFACTOR}},
    )


class CompletionReceipt(Base):
    """An accepted async completion: the same (taskId, signature) is never accepted twice."""

    __tablename__ = "completion_receipts"

    task_id: Mapped[str] = mapped_column(_ID, primary_key=True)
    signature: Mapped[str] = mapped_column(String(128), primary_key=True)
    received_at: Mapped[float] = mapped_column(Float)

    # Retention archives and removes them a day at a time.
    __table_args__ = (Index("ix_completion_receipts_received", "received_at"),)


class Match(Base):
    """A cage.v1 match: six turns between an attacker and a defender."""

    __tablename__ = "matches"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    attacker_id: Mapped[str] = mapped_column(_ID, ForeignKey("agents.id", ondelete="CASCADE"))
    defender_id: Mapped[str] = mapped_column(_ID, ForeignKey("agents.id", ondelete="CASCADE"))
    requested_by: Mapped[str | None] = mapped_column(_ID)
    ruleset: Mapped[str] = mapped_column(String(16))
    #: A ``MatchKind`` as written (the roll-ups count every kind): only rated ones are rated.
    kind: Mapped[str] = mapped_column(String(16), default="rated", server_default="rated")
    status: Mapped[MatchStatus] = mapped_column(closed_set(MatchStatus, 16))
    #: A ``Winner`` as written; kept as read, as ratings pass over one they do not know.
    outcome: Mapped[str | None] = mapped_column(String(32))
    decided_by: Mapped[DecidedBy | None] = mapped_column(closed_set(DecidedBy, 32))
    seed: Mapped[int] = mapped_column(BigInteger)
    material: Mapped[dict[str, Any]] = mapped_column(JSON)  # access code, hijack phrase, task
    deadline_ms: Mapped[int] = mapped_column(Integer)
    next_turn: Mapped[int] = mapped_column(Integer)
    void_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (
        Index("ix_matches_created", "created_at"),
        Index("ix_matches_status", "status"),
        Index("ix_matches_attacker_created", "attacker_id", "created_at"),  # a fighter's (0012)
        Index("ix_matches_defender_created", "defender_id", "created_at"),
        Index("ix_matches_open", "created_at", **_where(_OPEN_MATCH)),
        Index("ix_matches_finished", "finished_at"),  # live ratings' window (migration 0019)
    )


class Turn(Base):
    """One turn of a match: the request, the reply and the judge's findings."""

    __tablename__ = "turns"

    match_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    turn: Mapped[int] = mapped_column(Integer, primary_key=True)
    side: Mapped[Side] = mapped_column(closed_set(Side, 16))
    fighter_id: Mapped[str] = mapped_column(_ID)
    status: Mapped[TurnStatus] = mapped_column(closed_set(TurnStatus, 16))
    payload: Mapped[str] = mapped_column(Text)
    message: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    findings: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: Who wrote the move, and the model's id when a model did; None until the turn is played.
    producer: Mapped[Producer | None] = mapped_column(closed_set(Producer, 16))
    model_id: Mapped[str | None] = mapped_column(String(200))
    started_at: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)
