"""The dispatcher: an agent for each slot and a task RUNNING in the store, before any POST.

A slot is opened in three steps, in this order, so that a taskId reaches an
endpoint at most once even if the platform dies at any point:

1. *open* (one transaction for a whole batch of slots, in one hop to the
   store: ``Database.transact``): re-check that each slot is still open,
   select an agent (``rules.runs.selection``), and insert the task as RUNNING with
   a new UUIDv7, its payload, agent and deadline. Nothing has been sent yet.
2. *send* (``engine.runs.work``): sign (the agent's key, the phase deadline)
   and POST once through the egress client; validate the envelope and the
   phase schema.
3. *record* (``engine.runs.recorder``): the output, tokens, model and
   latency, or the exact failure reason, ending the task from RUNNING only.

Nothing ever sends a task that is already in the store: after a crash, a
RUNNING task is waited for (a 202's callback may still land) until its
deadline, then timed out against its agent. An HTTP 202 without a reply
envelope leaves the task RUNNING for the async completion callback; a 202
that carries one is recorded like a 200.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, cast

from sqlalchemy import Table, bindparam, case, or_, select
from sqlalchemy.engine import Connection

from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol import dumps
from palaestra.protocol.constants import Arena, Phase
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.rules.runs.selection import Contender, HashDraw, Roster
from palaestra.rules.status import DISPATCHABLE, Status
from palaestra.store.bulk import insert_values
from palaestra.store.lists import one_of
from palaestra.store.models import Agent, Task

__all__ = ["OPEN_COLUMNS", "Body", "Opened", "SlotRequest", "open_in", "open_slots", "payload_of"]

#: Agents of one role considered per batch: the best by tier and reputation.
_CONTENDERS_PER_ROLE: Final = 256
_DISPATCHABLE = [status.value for status in DISPATCHABLE]
_TASKS = cast(Table, Task.__table__)
_TIER = case(
    {status.value: index for index, status in enumerate(DISPATCHABLE)},
    value=Agent.status,
    else_=len(DISPATCHABLE),
)
#: The tasks of the runs being opened, which decide what is still open and who is excluded.
_RUN_TASKS = select(
    Task.run_id,
    Task.phase,
    Task.candidate_id,
    Task.slot,
    Task.attempt,
    Task.status,
    Task.agent_id,
).where(one_of(Task.run_id, "runs"))
#: The best agents of a role that may be chosen at ``now`` (before per-run exclusions).
_CONTENDERS = (
    select(
        Agent.id,
        Agent.name,
        Agent.role,
        Agent.status,
        Agent.reputation,
        Agent.hold,
        Agent.cooldown_until,
        Agent.endpoint_url,
        Agent.key_sealed,
    )
    .where(
        Agent.arena == Arena.EDGEARENA,
        Agent.role == bindparam("role"),
        Agent.status.in_(_DISPATCHABLE),
        Agent.hold.is_(False),
        Agent.endpoint_url.is_not(None),
        Agent.key_sealed.is_not(None),
        or_(Agent.cooldown_until.is_(None), Agent.cooldown_until <= bindparam("now")),
    )
    .order_by(_TIER, Agent.reputation.desc(), Agent.id)
    .limit(_CONTENDERS_PER_ROLE)
)


@dataclass(frozen=True, slots=True)
class SlotRequest:
    """A slot to open: which run, phase, candidate, slot and attempt, and what to send."""

    run_id: str
    phase: Phase
    candidate_id: str | None
    slot: int
    attempt: int
    goal: str
    launchpad_name: str
    messages: Sequence[Mapping[str, str]]
    deadline_s: float
    house: bool = False  # the external attempts are used up
    seed: str = ""  # makes the selection's exploration reproducible

    def sent(self) -> SlotRequest:
        """This request once its body holds the prompts: without them (a constructor call,
        a few times cheaper than ``dataclasses.replace``)."""
        return SlotRequest(
            self.run_id,
            self.phase,
            self.candidate_id,
            self.slot,
            self.attempt,
            self.goal,
            self.launchpad_name,
            (),
            self.deadline_s,
            self.house,
            self.seed,
        )


@dataclass(slots=True)
class Opened:
    """A task now RUNNING in the store, ready to send (or for the house to answer)."""

    task_id: str
    request: SlotRequest
    agent_id: str | None = None
    executor: str = ""
    url: str | None = None
    key: str | None = None
    body: bytes = b""  # the signed body (empty for the house)

    @property
    def house(self) -> bool:
        return self.agent_id is None


def payload_of(task_id: str, request: SlotRequest) -> dict[str, Any]:
    """The seed's DispatchPayload (``role`` mirrors the phase)."""
    phase = request.phase.value
    return {
        "taskId": task_id,
        "runId": request.run_id,
        "phase": phase,
        "role": phase,
        "candidateId": request.candidate_id,
        "goal": request.goal,
        "launchpadName": request.launchpad_name,
        "messages": [m if type(m) is dict else dict(m) for m in request.messages],
    }


async def open_slots(
    platform: Platform, requests: Sequence[SlotRequest], *, house_executor: str
) -> list[Opened]:
    """Select agents and store each slot's task as RUNNING, in one transaction.

    A request whose slot already has a running or successful task, or a task
    of the same or a later attempt, is skipped: opening is idempotent. On SQLite
    the check and the insert are one locked transaction; on PostgreSQL the run's
    tasks are read unlocked, so one run's slots must be opened by one caller at a
    time (the stepper's per-run lock, the jobs' run-step lock). A caller
    cancelled while the store opens the slots leaves them RUNNING and unsent: they
    end at their deadline, as after a crash.
    """
    if not requests:
        return []
    # Each task's id and body are made here, on the event loop, before the transaction:
    # the store's writer thread shares the GIL with the loop, and only selects and writes.
    bodies = [Body.of(request) for request in requests]
    opening = partial(open_in, platform, requests, bodies, house_executor, platform.clock.now())
    return await platform.db.transact(opening)


@dataclass(frozen=True, slots=True)
class Body:
    """A slot's task id and the JSON of its payload, as sent (and as stored: decoded only
    for the row, so that a send in flight holds one copy)."""

    task_id: str
    sent: bytes

    @classmethod
    def of(cls, request: SlotRequest) -> Body:
        task_id = new_id()
        # A compact copy: orjson's own buffer is sized for speed (32 KiB), and a body
        # lives as long as its dispatch is in flight.
        return cls(task_id, memoryview(dumps(payload_of(task_id, request))).tobytes())


_RUNNING: Final = TaskStatus.RUNNING.value
#: The columns of a task as it is opened, in the order ``_row`` gives them.
OPEN_COLUMNS: Final = (
    "id",
    "run_id",
    "candidate_id",
    "phase",
    "slot",
    "attempt",
    "agent_id",
    "executor",
    "status",
    "payload",
    "deadline_s",
    "created_at",
)


def open_in(
    platform: Platform,
    requests: Sequence[SlotRequest],
    bodies: Sequence[Body],
    house_executor: str,
    now: float,
    connection: Connection,
) -> list[Opened]:
    """:func:`open_slots` in the caller's transaction, with the bodies made beforehand (the
    run stepper's). A slot attempt the store already holds is skipped by its unique index:
    an id in the result that was not stored is never claimed for sending."""
    slots = _RunSlots.read(connection, sorted({r.run_id for r in requests}))
    pool = _contenders(
        connection, sorted({r.phase.role.value for r in requests if not r.house}), now
    )
    opened: list[Opened] = []
    rows: list[tuple[Any, ...]] = []
    for request, body in zip(requests, bodies, strict=True):
        if not slots.take(request):
            continue
        item = Opened(body.task_id, request, executor=house_executor)
        chosen = None if request.house else slots.pick(pool, request)
        if chosen is not None:
            _assign(platform, item, pool, chosen, body)
        opened.append(item)
        rows.append(_row(item, body, now))
    insert_values(connection, _TASKS, OPEN_COLUMNS, rows, skip_conflicts=True)
    return opened


_SlotKey = tuple[str, str, str | None, int]  # run, phase, candidate, slot
_Group = tuple[str, str, str | None]  # run, phase, candidate


@dataclass(slots=True)
class _RunSlots:
    """What the runs' stored tasks say about opening more, kept up to date while opening."""

    blocked: set[_SlotKey]  # a task RUNNING or SUCCEEDED, or opened just now
    latest: dict[_SlotKey, int]  # the latest attempt
    taken: dict[_Group, set[str]]  # the agents already on a (run, phase, candidate)
    failed: dict[str, set[str]]  # by run: the agents that failed in it

    @classmethod
    def read(cls, connection: Connection, runs: list[str]) -> _RunSlots:
        slots = cls(set(), {}, {}, {})
        # Rows are unpacked, not read by name: a name costs a Row a failed attribute lookup.
        for run_id, phase, candidate_id, slot, attempt, status, agent_id in connection.execute(
            _RUN_TASKS, {"runs": runs}
        ):
            slot_key = (run_id, phase, candidate_id, slot)
            slots.latest[slot_key] = max(slots.latest.get(slot_key, -1), attempt)
            if status in (TaskStatus.RUNNING, TaskStatus.SUCCEEDED):
                slots.blocked.add(slot_key)
            if agent_id is None or status == TaskStatus.VOIDED:
                continue  # a voided task was the platform's fault: its agent may serve again
            slots.taken.setdefault((run_id, phase, candidate_id), set()).add(agent_id)
            if status in (TaskStatus.FAILED, TaskStatus.TIMEOUT):
                slots.failed.setdefault(run_id, set()).add(agent_id)
        return slots

    def take(self, request: SlotRequest) -> bool:
        """Whether ``request``'s slot is still open at its attempt; if so, it is taken."""
        slot_key = (request.run_id, request.phase.value, request.candidate_id, request.slot)
        if slot_key in self.blocked or self.latest.get(slot_key, -1) >= request.attempt:
            return False
        self.blocked.add(slot_key)
        return True

    def pick(self, pool: _Pool, request: SlotRequest) -> Contender | None:
        """The agent for ``request`` (``None``: none is eligible), now taken for its group."""
        phase = request.phase.value
        group = (request.run_id, phase, request.candidate_id)
        # Seeded by the slot: the exploration is reproducible, and cheap to seed.
        rng = HashDraw(
            f"{request.seed}:{request.run_id}:{phase}:{request.candidate_id}:"
            f"{request.slot}:{request.attempt}"
        )
        chosen = pool.rosters[request.phase.role.value].pick(
            rng, failed_in_run=self.failed.get(request.run_id, ()), taken=self.taken.get(group, ())
        )
        if chosen is not None:
            self.taken.setdefault(group, set()).add(chosen.agent_id)
        return chosen


def _assign(platform: Platform, item: Opened, pool: _Pool, chosen: Contender, body: Body) -> None:
    name, url, sealed = pool.endpoints[chosen.agent_id]
    item.agent_id = chosen.agent_id
    item.executor = name
    item.url = url
    item.key = platform.vault.open(sealed)  # the vault remembers opened keys
    item.body = body.sent
    # The body holds the prompts now: a send in flight keeps no second copy of them (the
    # house, which answers from the messages, is never assigned here).
    item.request = item.request.sent()


def _row(item: Opened, body: Body, now: float) -> tuple[Any, ...]:
    """The task's row, in the order of ``OPEN_COLUMNS``."""
    request = item.request
    return (
        body.task_id,
        request.run_id,
        request.candidate_id,
        request.phase.value,
        request.slot,
        request.attempt,
        item.agent_id,
        item.executor,
        _RUNNING,
        body.sent.decode(),  # the payload as it was sent
        request.deadline_s,
        now,
    )


@dataclass(frozen=True, slots=True)
class _Pool:
    rosters: dict[str, Roster]  # by role
    endpoints: dict[str, tuple[str, str | None, str]]  # agent id -> name, URL, sealed key


def _contenders(connection: Connection, roles: list[str], now: float) -> _Pool:
    rosters: dict[str, Roster] = {}
    endpoints: dict[str, tuple[str, str | None, str]] = {}
    for role in roles:
        contenders: list[Contender] = []
        for row in connection.execute(_CONTENDERS, {"role": role, "now": now}):
            agent_id, name, _, status, reputation, hold, cooldown_until, url, sealed = row
            endpoints[agent_id] = (name, url, sealed or "")
            contenders.append(
                Contender(agent_id, role, Status(status), reputation or 0.0, hold, cooldown_until)
            )
        rosters[role] = Roster.of(contenders, role, now)
    return _Pool(rosters, endpoints)
