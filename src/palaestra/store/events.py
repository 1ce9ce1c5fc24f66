"""An agent's events newest first, read through its index and never through the history.

Asked for ``agent_id = ? ... ORDER BY id DESC LIMIT n``, PostgreSQL may walk the primary
key backwards and filter, betting on the agent's events being spread evenly over the
table: for an agent that went quiet (paused, or long gone) that walk crosses everything
written since its last event, which grows with the history (a paused agent's page took
seconds at 10M events). Here the agent and the kind are bounded by ranges rather than
equalities, and the order names them before the id: only the index that starts with
them gives that order without sorting, so the planner takes it, whatever it guesses of
where the rows lie. The ranges hold one value each; the rows are those of the equality.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Select, TextClause, UnaryExpression, select

from palaestra.store.models import AgentEvent

__all__ = ["agent_events", "newest_first"]


def agent_events(
    agent_id: str, kind: str | None = None, *extra: ColumnElement[bool] | TextClause
) -> Select[AgentEvent]:
    """The events of ``agent_id`` (of ``kind``, and matching ``extra``), unordered."""
    where: list[ColumnElement[bool] | TextClause] = [
        AgentEvent.agent_id.between(agent_id, agent_id),
        *extra,
    ]
    if kind is not None:
        where.append(AgentEvent.kind.between(kind, kind))
    return select(AgentEvent).where(*where)


def newest_first(kind: bool = False, *, ascending: bool = False) -> list[UnaryExpression[str]]:
    """The order leading to the id, for :func:`agent_events` (with a ``kind`` when it had one):
    newest first, or oldest first with ``ascending``."""
    columns = [AgentEvent.agent_id, *([AgentEvent.kind] if kind else [])]
    return [column.asc() if ascending else column.desc() for column in columns]
