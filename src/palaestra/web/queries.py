"""What the pages show, read straight from the tables: counts, agents, history, runs, matches.

Read-only and public: nothing here returns a key, a token, a claim code, a
provider setting or an endpoint beyond its host, and a failure's reason only
as the page's audience may read it (``web.reasons``). The runs and matches
sections read their tables directly, so they fill in as soon as rows exist.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from sqlalchemy import Select, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from yarl import URL

from palaestra.engine.agents.reading import AgentRead
from palaestra.engine.agents.wizard import WizardProgress, wizard_progress
from palaestra.engine.runs.reading import RunRead
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.status import Status
from palaestra.store.events import agent_events, newest_first
from palaestra.store.history import failures_total as count_failures
from palaestra.store.history import latency_percentiles
from palaestra.store.history import matches_total as count_matches
from palaestra.store.history import runs_total as count_runs
from palaestra.store.models import FAILED_EVENTS, NOTABLE_EVENTS, Agent, AgentEvent, Match, Run
from palaestra.store.paging import (
    Page,
    keyset_serial,
    keyset_serial_before,
    page_of_serial,
    previous_serial,
)
from palaestra.web.reasons import Audience, EventRow, event_rows, shown, shown_progress

__all__ = [
    "ACTIVITY_KINDS",
    "MATCH_COLUMNS",
    "Activity",
    "AgentPage",
    "AgentView",
    "MatchRow",
    "Overview",
    "RunRow",
    "agent_brief",
    "agent_page",
    "agent_rows",
    "agent_status",
    "endpoint_host",
    "overview",
    "recent_matches",
    "recent_runs",
    "stored",
]

#: History kinds that make the overview's activity feed; failed checks and pings join them
#: (``store.models.NOTABLE_EVENTS`` says it in SQL).
ACTIVITY_KINDS: Final = ("status", "probe", "challenge", "verify", "hold")
#: Kinds whose latency is charted on an agent's page.
TIMED_KINDS: Final = ("ping", "dispatch", "verify")
FAILURE_KINDS: Final = (*TIMED_KINDS, "wizard")
#: Status changes read for an agent's timeline.
STATUS_CHANGES: Final = 200
_STATUS_ORDER: Final = [status.value for status in Status]


class AgentView(AgentRead):
    """An agent as the pages show it: what the API shows (its endpoint by host only, and
    its wizard's warnings as the reader may read them), and its cage facts."""

    entrant_type: str | None
    fighter_class: str | None
    created_at: float

    @property
    def host(self) -> str | None:
        return endpoint_host(self.endpoint_url)

    @classmethod
    def of(cls, agent: Agent, audience: Audience = Audience.PUBLIC) -> AgentView:
        row = cls.model_validate(agent)
        return row.model_copy(update={"warnings": _warnings(agent, audience)})


def _warnings(agent: Agent, audience: Audience) -> list[str]:
    return [shown(w, audience) or "" for w in agent.wizard_warnings or ()]


@dataclass(frozen=True, slots=True)
class Activity:
    at: float
    agent_id: str
    agent_name: str
    arena: str
    kind: str
    outcome: str
    reason: str | None
    latency_ms: float | None
    detail: dict[str, Any] | None


class RunRow(RunRead):
    """A run as the pages list it: what the API lists, and whether it has a report."""

    has_report: bool

    @classmethod
    def of(cls, run: Run) -> RunRow:
        return cls(**dict(RunRead.model_validate(run)), has_report=run.report is not None)


def stored(row: object, columns: tuple[str, ...]) -> dict[str, Any]:
    """The ``columns`` of a stored row, by name, to show as they are stored."""
    return {column: getattr(row, column) for column in columns}


#: The columns a match's row and its page show as the match stores them.
MATCH_COLUMNS: Final = (
    "id",
    "kind",
    "status",
    "outcome",
    "decided_by",
    "created_at",
    "finished_at",
)


@dataclass(frozen=True, slots=True)
class MatchRow:
    id: str
    attacker_id: str
    attacker: str
    defender_id: str
    defender: str
    status: str
    outcome: str | None
    decided_by: str | None
    created_at: float
    kind: str  # rated or friendly
    finished_at: float | None = None

    @classmethod
    def of(cls, match: Match, attacker: str, defender: str) -> MatchRow:
        """The row of ``match``, its fighters named ``attacker`` and ``defender``."""
        columns = (*MATCH_COLUMNS, "attacker_id", "defender_id")
        return cls(**stored(match, columns), attacker=attacker, defender=defender)


@dataclass(frozen=True, slots=True)
class Overview:
    agents_by_status: list[tuple[str, int]]
    agents_total: int
    fighters_total: int
    pings_last_hour: int
    failures_last_hour: int
    runs_total: int
    matches_total: int
    activity: list[Activity]
    runs: list[RunRow]
    matches: list[MatchRow]


@dataclass(frozen=True, slots=True)
class AgentPage:
    agent: AgentView
    status_changes: list[EventRow]  # oldest first
    timed: list[EventRow]  # pings, dispatches, verifies with a latency; oldest first
    failures: Page[EventRow]  # newest first, a page at a time
    failures_total: int
    wizard: WizardProgress | None
    audience: Audience = Audience.PUBLIC
    #: The 50th, 95th and 99th percentile latency of its timed kinds over all its history,
    #: each the upper bound of a histogram bucket (``store.rollup_models``); None: none.
    percentiles: tuple[float | None, ...] = ()


def endpoint_host(url: str | None) -> str | None:
    """Only the host of an endpoint is public; its path may carry an owner's secret."""
    if not url:
        return None
    try:
        return URL(url).host
    except ValueError:
        return None


async def overview(platform: Platform, *, activity: int = 15, recent: int = 5) -> Overview:
    since = platform.clock.now() - 3600
    async with platform.db.session() as session:
        by_status = dict(
            (
                await session.execute(
                    select(Agent.status, func.count())
                    .where(Agent.arena == Arena.EDGEARENA.value)
                    .group_by(Agent.status)
                )
            ).all()
        )
        fighters = await session.scalar(
            select(func.count()).select_from(Agent).where(Agent.arena == Arena.CAGE.value)
        )
        pings = dict(
            (
                await session.execute(
                    select(AgentEvent.outcome, func.count())
                    .where(AgentEvent.kind == "ping", AgentEvent.at >= since)
                    .group_by(AgentEvent.outcome)
                )
            ).all()
        )
        # The totals from the roll-ups of the closed hours and the rows of the open ones.
        runs_total = await count_runs(session)
        matches_total = await count_matches(session)
        # The newest notable rows through their partial index (its predicate word for word).
        events = list(
            await session.scalars(
                select(AgentEvent)
                .where(text(NOTABLE_EVENTS))
                .order_by(AgentEvent.id.desc())
                .limit(activity)
            )
        )
        names = {
            agent_id: (name, arena)
            for agent_id, name, arena in await session.execute(
                select(Agent.id, Agent.name, Agent.arena).where(
                    Agent.id.in_({e.agent_id for e in events})
                )
            )
        }
        feed = [
            Activity(
                e.at, e.agent_id, name, arena, e.kind, e.outcome, r.reason, r.latency_ms, r.detail
            )
            for e in events
            if e.agent_id in names
            for name, arena in [names[e.agent_id]]
            for r in [EventRow.of(e, Audience.PUBLIC)]
        ]
    ordered = sorted(by_status.items(), key=lambda item: _STATUS_ORDER.index(item[0]))
    return Overview(
        agents_by_status=[(str(s), int(n)) for s, n in ordered],
        agents_total=sum(by_status.values()),
        fighters_total=fighters or 0,
        pings_last_hour=sum(pings.values()),
        failures_last_hour=pings.get("failure", 0),
        runs_total=runs_total or 0,
        matches_total=matches_total or 0,
        activity=feed,
        runs=await recent_runs(platform, recent) if runs_total else [],
        matches=await recent_matches(platform, recent) if matches_total else [],
    )


async def agent_brief(platform: Platform, agent_id: str) -> AgentView | None:
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
        return None if agent is None else AgentView.of(agent)


async def agent_status(platform: Platform, agent_id: str) -> str | None:
    async with platform.db.session() as session:
        return await session.scalar(select(Agent.status).where(Agent.id == agent_id))


async def agent_rows(platform: Platform, arena: Arena = Arena.EDGEARENA) -> list[AgentView]:
    query = select(Agent).where(Agent.arena == arena.value).order_by(Agent.created_at, Agent.name)
    async with platform.db.session() as session:
        return [AgentView.of(agent) for agent in await session.scalars(query)]


async def agent_page(
    platform: Platform,
    agent_id: str,
    *,
    audience: Audience = Audience.PUBLIC,
    points: int = 300,
    failures: int = 100,
    failures_cursor: str | None = None,
) -> AgentPage | None:
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
        if agent is None or agent.arena != Arena.EDGEARENA:
            return None
        changes = await session.scalars(
            agent_events(agent_id, "status")
            .order_by(*newest_first(kind=True), AgentEvent.id.desc())
            .limit(STATUS_CHANGES)
        )
        # The newest of each timed kind, one bounded read by (agent, kind) each, merged.
        timed: list[AgentEvent] = []
        for kind in TIMED_KINDS:
            timed += await session.scalars(
                agent_events(agent_id, kind, AgentEvent.latency_ms.is_not(None))
                .order_by(*newest_first(kind=True), AgentEvent.id.desc())
                .limit(points)
            )
        timed = sorted(timed, key=lambda event: event.id, reverse=True)[:points]
        failed = agent_events(agent_id, None, text(FAILED_EVENTS))
        failure_rows = await _serial_page(session, failed, failures, failures_cursor)
        failures_total = await count_failures(session, agent_id)  # roll-ups and the tail
        percentiles = tuple(await latency_percentiles(session, agent_id, TIMED_KINDS))
        row = AgentView.of(agent, audience)
        page_changes = event_rows(reversed(list(changes)), audience)
        page_timed = event_rows(reversed(list(timed)), audience)
        page_failures = Page(
            event_rows(failure_rows.items, audience),
            failure_rows.next_cursor,
            failure_rows.previous_cursor,
        )
    return AgentPage(
        agent=row,
        status_changes=page_changes,
        timed=page_timed,
        failures=page_failures,
        failures_total=failures_total or 0,
        wizard=shown_progress(await wizard_progress(platform, agent_id), audience),
        audience=audience,
        percentiles=percentiles,
    )


async def _serial_page(
    session: AsyncSession, query: Select[AgentEvent], limit: int, cursor: str | None
) -> Page[AgentEvent]:
    """A page of an agent's events newest first, below ``cursor``, with the cursors around it
    (``query`` from :func:`agent_events`, without a kind)."""
    newest = keyset_serial(query.order_by(*newest_first()), AgentEvent.id, cursor, limit)
    page = page_of_serial(list(await session.scalars(newest)), limit, lambda event: event.id)
    if cursor is None:
        return page
    above = keyset_serial_before(
        query.with_only_columns(AgentEvent.id).order_by(*newest_first(ascending=True)),
        AgentEvent.id,
        cursor,
        limit,
    )
    return replace(page, previous_cursor=previous_serial(list(await session.scalars(above)), limit))


async def recent_runs(platform: Platform, limit: int = 20) -> list[RunRow]:
    query = select(Run).order_by(Run.created_at.desc()).limit(limit)
    async with platform.db.session() as session:
        return [RunRow.of(run) for run in await session.scalars(query)]


async def recent_matches(platform: Platform, limit: int = 20) -> list[MatchRow]:
    attacker, defender = aliased(Agent), aliased(Agent)
    query = (
        select(Match, attacker.name, defender.name)
        .join(attacker, attacker.id == Match.attacker_id)
        .join(defender, defender.id == Match.defender_id)
        .order_by(Match.created_at.desc())
        .limit(limit)
    )
    async with platform.db.session() as session:
        rows = (await session.execute(query)).all()
    return [
        MatchRow.of(match, attacker_name, defender_name)
        for match, attacker_name, defender_name in rows
    ]
