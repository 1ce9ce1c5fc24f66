"""An agent's events newest first, read through its index and never through the history.

Asked for ``agent_id = ? ... ORDER BY id DESC LIMIT n``, PostgreSQL may walk the primary
key backwards and filter, betting on the agent's events being spread evenly over the
table: for an agent that went quiet (paused, or long gone) that walk crosses everything
written since its last event, which grows with the history (a paused agent's page took
seconds at 10M events). Here the column after the agent (the kind, or for all kinds
the agent itself) is bounded by a range rather than an equality, and the order names it
before the id: only the index that starts with the agent (and the kind) gives that order
without sorting, so the planner takes it, whatever it guesses of where the rows lie. The
range holds one value; the rows are those of the equality. (The agent stays an equality
when a kind follows it: SQLite uses no column of an index after a range.)
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Select, TextClause, UnaryExpression, select

from palaestra.store.models import AgentEvent

__all__ = ["agent_events", "newest_first"]


def agent_events(
    agent_id: str, kind: str | None = None, *extra: ColumnElement[bool] | TextClause
) -> Select[AgentEvent]:
    """The events of ``agent_id`` (of ``kind``, and matching ``extra``), unordered."""
    where: list[ColumnElement[bool] | TextClause] = list(extra)
    if kind is None:
        where.append(AgentEvent.agent_id.between(agent_id, agent_id))
    else:
        where += [AgentEvent.agent_id == agent_id, AgentEvent.kind.between(kind, kind)]
    return select(AgentEvent).where(*where)


def newest_first(kind: bool = False, *, ascending: bool = False) -> list[UnaryExpression[str]]:
    """The order leading to the id, for :func:`agent_events` (with a ``kind`` when it had one):
    newest first, or oldest first with ``ascending``."""
    column = AgentEvent.kind if kind else AgentEvent.agent_id
    return [column.asc() if ascending else column.desc()]
