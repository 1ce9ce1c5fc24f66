"""The list pages a page at a time: runs, matches, agents, fighters and an agent's tasks,
newest first.

Pages are keyset pages (``store.paging``): a page's ``Older`` link carries the cursor
of its last row, so rows added meanwhile never shift a later page.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, and_, exists, func, or_, select
from sqlalchemy.orm import aliased, defer

from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.store.models import Agent, Match, Run, Task
from palaestra.store.paging import (
    Key,
    Page,
    keyset,
    keyset_before,
    page_of,
    previous_cursor,
)
from palaestra.web.queries import AgentView, MatchRow, RunRow
from palaestra.web.reasons import Audience
from palaestra.web.task_queries import AgentTaskRow

__all__ = [
    "PAGE_SIZE",
    "agent_tasks_page",
    "agent_tasks_query",
    "agents_page",
    "agents_total",
    "matches_page",
    "recent_runs_of",
    "runs_page",
]

#: Rows on one page of a list.
PAGE_SIZE = 50

T = TypeVar("T")


async def runs_page(
    platform: Platform, cursor: str | None, limit: int = PAGE_SIZE, *, owner_id: str | None = None
) -> Page[RunRow]:
    """A page of runs (those of ``owner_id``, when given), newest first."""
    owned = None if owner_id is None else Run.owner_id == owner_id
    query = keyset(
        select(Run) if owned is None else select(Run).where(owned),
        Run.created_at,
        Run.id,
        cursor,
        limit,
    )
    async with platform.db.session() as session:
        rows = [RunRow.of(run) for run in await session.scalars(query)]
    return await _with_previous(platform, page_of(rows, limit, _key), Run, owned, cursor, limit)


async def recent_runs_of(platform: Platform, owner_id: str, limit: int = 5) -> list[RunRow]:
    """The owner's latest runs, newest first (the first page of its runs, cut short)."""
    return (await runs_page(platform, None, limit, owner_id=owner_id)).items


async def matches_page(
    platform: Platform,
    cursor: str | None,
    limit: int = PAGE_SIZE,
    *,
    fighter_id: str | None = None,
) -> Page[MatchRow]:
    """A page of matches (those ``fighter_id`` played, when given), newest first."""
    attacker, defender = aliased(Agent), aliased(Agent)
    played = (
        None
        if fighter_id is None
        else or_(Match.attacker_id == fighter_id, Match.defender_id == fighter_id)
    )
    query = (
        select(Match, attacker.name, defender.name)
        .join(attacker, attacker.id == Match.attacker_id)
        .join(defender, defender.id == Match.defender_id)
    )
    if played is not None:
        query = query.where(played)
    query = keyset(query, Match.created_at, Match.id, cursor, limit)
    async with platform.db.session() as session:
        found = (await session.execute(query)).all()
    rows = [
        MatchRow.of(match, attacker_name, defender_name)
        for match, attacker_name, defender_name in found
    ]
    page = page_of(rows, limit, _key)
    return await _with_previous(platform, page, Match, played, cursor, limit)


async def agents_page(
    platform: Platform, arena: Arena, cursor: str | None, limit: int = PAGE_SIZE
) -> Page[AgentView]:
    query = keyset(
        select(Agent).where(Agent.arena == arena.value), Agent.created_at, Agent.id, cursor, limit
    )
    async with platform.db.session() as session:
        rows = [AgentView.of(agent) for agent in await session.scalars(query)]
    page = page_of(rows, limit, _key)
    return await _with_previous(platform, page, Agent, Agent.arena == arena.value, cursor, limit)


async def agents_total(platform: Platform, arena: Arena) -> int:
    query = select(func.count()).select_from(Agent).where(Agent.arena == arena.value)
    async with platform.db.session() as session:
        return int(await session.scalar(query) or 0)


async def agent_tasks_page(
    platform: Platform,
    agent_id: str,
    cursor: str | None,
    audience: Audience,
    limit: int = PAGE_SIZE,
    *,
    run_owner: str | None = None,
) -> Page[AgentTaskRow]:
    """A page of the tasks sent to the agent, newest first: one range of the index on
    ``(agent_id, created_at, id)``, never the agent's whole history. Their payloads and
    outputs, the bulk of a task's row, are not read. ``run_owner``: only the tasks of that
    owner's runs (where runs are private, what another owner may read)."""
    query = agent_tasks_query(agent_id, cursor, limit, run_owner=run_owner)
    async with platform.db.session() as session:
        rows = [AgentTaskRow.of(task, audience) for task in await session.scalars(query)]
    served = _served(agent_id, run_owner)
    return await _with_previous(platform, page_of(rows, limit, _key), Task, served, cursor, limit)


def agent_tasks_query(
    agent_id: str, cursor: str | None, limit: int, *, run_owner: str | None = None
) -> Select[Task]:
    """The read behind :func:`agent_tasks_page`: the agent's tasks below ``cursor``, newest
    first, one more than ``limit``, without their payloads and outputs."""
    served = select(Task).where(_served(agent_id, run_owner))
    lean = served.options(defer(Task.payload), defer(Task.output))
    return keyset(lean, Task.created_at, Task.id, cursor, limit)


def _served(agent_id: str, run_owner: str | None) -> ColumnElement[bool]:
    """The agent's tasks; with ``run_owner``, of that owner's runs only (each task's run read
    by its key, as the index hands the tasks over)."""
    served = Task.agent_id == agent_id
    if run_owner is None:
        return served
    return and_(served, exists().where(Run.id == Task.run_id, Run.owner_id == run_owner))


async def _with_previous(
    platform: Platform,
    page: Page[T],
    table: Any,
    where: ColumnElement[bool] | None,
    cursor: str | None,
    limit: int,
) -> Page[T]:
    """``page`` with the cursor of the page before it (none for the first page)."""
    if cursor is None:
        return page
    query = select(table.created_at, table.id)
    if where is not None:
        query = query.where(where)
    query = keyset_before(query, table.created_at, table.id, cursor, limit)
    async with platform.db.session() as session:
        above = [Key(created_at, row_id) for created_at, row_id in await session.execute(query)]
    return replace(page, previous_cursor=previous_cursor(above, limit, lambda key: key))


def _key(row: RunRow | MatchRow | AgentView | AgentTaskRow) -> Key:
    return Key(row.created_at, row.id)
