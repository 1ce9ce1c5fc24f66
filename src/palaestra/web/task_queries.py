"""An agent's tasks and one task's page: what was signed and sent, and what came back.

Who reads what (the task's run decides first, as on the run's page):

* the task's page opens to whoever may read its run (everyone when runs are public; else
  the run's owner and the admin), and to the owner of the agent it was sent to, who
  received it anyway;
* the signed body (the prompts) and the endpoint's whole URL: the run's owner, the agent's
  owner and the admin only, as the API (``GET /api/runs/{run}/tasks/{task}``) gives them;
* a failure's whole reason (redacted): the agent's owner and the admin (``web.reasons``).

The signed headers are those the protocol's signer made for the POST, as the send path
stored them on the task's row (``tasks.request_headers``: signature, timestamp, task id;
never the key). Tasks sent before the arena kept them, and a POST that never left, have
none, and the page says so. A payload, a reply or headers archived since (set NULL) read
"not kept".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

import orjson
from sqlalchemy import select
from yarl import URL

from palaestra.engine.accounts import Caller
from palaestra.engine.history import ArchivedBodies, archived_bodies
from palaestra.engine.runs.work import DISPATCH_USER_AGENT
from palaestra.platform import Platform
from palaestra.protocol import SIGNED_HEADERS, TIMESTAMP_HEADER, dumps
from palaestra.rules.producers import producer_label
from palaestra.rules.runflow import TaskStatus
from palaestra.store.models import Agent, CompletionReceipt, Run, Task
from palaestra.web.queries import endpoint_host
from palaestra.web.reasons import Audience, shown
from palaestra.web.run_queries import TaskRow

__all__ = [
    "Access",
    "AgentTaskRow",
    "Callback",
    "Header",
    "TaskPage",
    "task_page",
]

#: Why a sent task shows no signed headers (retention archived them, or they were not kept).
HEADERS_ARCHIVED: Final = "The signed headers were archived with the body (history retention)."
HEADERS_IN_FLIGHT: Final = "The signed headers are kept once the POST's reply is recorded."
HEADERS_NOT_KEPT: Final = (
    "The signed headers were not kept: tasks sent before the arena kept them did not keep "
    "them, and a POST that never left (refused, or stopped) has none."
)


class Access(StrEnum):
    """What a reader may see of a task."""

    NONE = "none"  # not a task of a run the reader may read
    PUBLIC = "public"  # the run is public: the task's facts and its reply, not its prompts
    WHOLE = "whole"  # the run's owner, the agent's owner or the admin: the signed body too


@dataclass(frozen=True, slots=True)
class AgentTaskRow:
    """A task in an agent's list of the tasks it served."""

    id: str
    run_id: str
    phase: str
    attempt: int
    status: str
    latency_ms: float | None
    contribution: float | None
    reason: str | None
    producer: str
    created_at: float

    @classmethod
    def of(cls, task: Task, audience: Audience) -> AgentTaskRow:
        return cls(
            id=task.id,
            run_id=task.run_id,
            phase=task.phase,
            attempt=task.attempt,
            status=task.status,
            latency_ms=task.latency_ms,
            contribution=task.contribution,
            reason=shown(task.reason, audience),
            producer=producer_label(task.producer, task.model_id),
            created_at=task.created_at,
        )


@dataclass(frozen=True, slots=True)
class Header:
    """A request header as the page shows it; ``value`` None: the arena did not keep it."""

    name: str
    value: str | None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Callback:
    """An accepted async completion: when it came, and the signature it carried."""

    received_at: float
    signature: str


@dataclass(frozen=True, slots=True)
class TaskPage:
    """A task as the run's page shows it (its reason as this reader may read it), and what
    was sent and came back."""

    task: TaskRow
    run_id: str
    run_goal: str
    agent_name: str | None
    created_at: float
    sent_at: float | None
    deferred_at: float | None
    access: Access
    endpoint: str | None  # the whole URL (Access.WHOLE) or its host
    headers: list[Header]
    headers_note: str | None  # why the signed headers show no values, when they do not
    body: str | None  # the signed body, pretty-printed; None: not kept (or not for this reader)
    body_bytes: int | None  # its size on the wire
    reply: str | None  # the output that came back, pretty-printed; None: none kept
    callback: Callback | None
    archived: str | None = None  # where retention put the payload and output, if it did


def access_to(caller: Caller | None, run: Run, agent: Agent | None, public_runs: bool) -> Access:
    """What ``caller`` (None: not signed in) may see of a task of ``run`` sent to ``agent``."""
    if caller is not None and (
        caller.is_admin
        or run.owner_id == caller.owner_id
        or (agent is not None and agent.owner_id == caller.owner_id)
    ):
        return Access.WHOLE
    return Access.PUBLIC if public_runs else Access.NONE


async def task_page(platform: Platform, task_id: str, caller: Caller | None) -> TaskPage | None:
    """The task's page as ``caller`` may read it; None when there is no such task or the
    caller may not read it (the page says "not found" either way)."""
    async with platform.db.session() as session:
        task = await session.get(Task, task_id)
        if task is None:
            return None
        run = await session.get(Run, task.run_id)
        agent = None if task.agent_id is None else await session.get(Agent, task.agent_id)
        receipt = await session.scalar(
            select(CompletionReceipt)
            .where(CompletionReceipt.task_id == task_id)
            .order_by(CompletionReceipt.received_at)
            .limit(1)
        )
        archive = None
        if run is not None and (task.payload is None or task.output is None):
            archive = await archived_bodies(session, run.finished_at)
    if run is None:
        return None
    access = access_to(caller, run, agent, platform.settings.public_runs)
    if access is Access.NONE:
        return None
    agent_owner = caller is not None and (
        caller.is_admin or (agent is not None and agent.owner_id == caller.owner_id)
    )
    whole = access is Access.WHOLE
    url = agent.endpoint_url if agent is not None else None
    sent = task.dispatched_at or task.sent_at
    payload = task.payload if isinstance(task.payload, dict) else None
    stored = task.request_headers if isinstance(task.request_headers, dict) else None
    audience = Audience.OWNER if agent_owner else Audience.PUBLIC
    sent_to_agent = agent is not None and sent is not None
    return TaskPage(
        task=replace(TaskRow.of(task), reason=shown(task.reason, audience)),
        run_id=run.id,
        run_goal=run.goal,
        agent_name=agent.name if agent is not None else None,
        created_at=task.created_at,
        sent_at=sent,
        deferred_at=task.deferred_at,
        access=access,
        endpoint=url if whole else endpoint_host(url),
        headers=request_headers(url, stored) if sent_to_agent else [],
        headers_note=None
        if not sent_to_agent or stored is not None
        else _no_headers(task, archived=archive is not None and payload is None),
        body=_pretty(payload) if whole and payload is not None else None,
        body_bytes=len(dumps(payload)) if payload is not None else None,
        reply=_pretty(task.output) if isinstance(task.output, dict) else None,
        callback=None if receipt is None else Callback(receipt.received_at, receipt.signature),
        archived=None
        if archive is None
        else ArchivedBodies(archive.archived_at, archive.file).words,
    )


def request_headers(url: str | None, signed: dict[str, str] | None) -> list[Header]:
    """The headers a dispatch carried: those the egress client adds to every JSON POST, then
    the protocol's signed headers (its one list, ``SIGNED_HEADERS``) as the signer made them
    and the task's row kept them (``signed``; None: not kept)."""
    host = _host(url)
    headers = [] if host is None else [Header("Host", host)]
    headers += [
        Header("User-Agent", DISPATCH_USER_AGENT),
        Header("Content-Type", "application/json"),
    ]
    for name in SIGNED_HEADERS:
        value = None if signed is None else signed.get(name)
        if signed is not None and value is None:
            continue  # a header this request did not carry
        note = "the second it was signed" if name == TIMESTAMP_HEADER and value else ""
        headers.append(Header(name, value, note))
    return headers


def _no_headers(task: Task, *, archived: bool) -> str:
    """Why a task sent to an agent shows no signed headers."""
    if archived:
        return HEADERS_ARCHIVED
    if task.status == TaskStatus.RUNNING.value and task.deferred_at is None:
        return HEADERS_IN_FLIGHT  # kept with the POST's end, or with its 202
    return HEADERS_NOT_KEPT


def _host(url: str | None) -> str | None:
    """The ``Host`` a POST to ``url`` carries: its authority as written (the egress client
    sends ``raw_authority``), without any credentials before an ``@``."""
    if not url:
        return None
    try:
        authority = URL(url).raw_authority
    except ValueError:
        return None
    return authority.rpartition("@")[2] or None


def _pretty(value: Any) -> str:
    """Stored JSON as the page shows it: indented, keys in the order they were sent."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
