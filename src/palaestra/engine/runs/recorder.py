"""Recording how tasks ended: exactly once per task, in batches, with the agent's side effects.

Every end of a task goes through here: a synchronous reply, an async
completion, a timeout found by the stepper, a house answer. A task ends
only from RUNNING (a conditional update), so a late callback, a second
callback, or a timeout racing a reply can never record a second outcome. With
the task's end, in the same transaction, come its effects on the agent: the
status machine's SUCCESS or FAILURE, the 60 s cooldown and a reputation step
after a failure, and a ``dispatch`` history row (outcome, latency, reason,
``{task_id, run_id, phase}``) so the owner sees why the agent was demoted,
written by :mod:`palaestra.engine.agents.outcomes` as the health pings' are.

Each batch also makes the tasks' runs due at once (``runs.due_at``, and
``runs.kicks`` bumped so a step under way learns of it): the store knows what
needs stepping even if the kick to step it is lost. Rows are taken in one
order in every transaction that writes them (runs, then tasks, then agents,
each by id) so that two never wait on each other crosswise.

Writes are grouped: whoever calls while a batch is being written waits for
the next one, which carries everything that arrived meanwhile (group commit).
Under load a single transaction records hundreds of tasks; when idle each
task is written at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any, Final, cast

import structlog
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.engine import Connection

from palaestra.engine.agents.outcomes import AgentOutcome, write_outcomes
from palaestra.engine.batcher import Batcher
from palaestra.platform import Platform
from palaestra.protocol.constants import Phase
from palaestra.rules.producers import Producer
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.store.bulk import insert_rows, json_text, update_values
from palaestra.store.lists import one_of
from palaestra.store.models import CompletionReceipt, Run, Task

__all__ = ["END_COLUMNS", "END_CONDITIONS", "Finish", "Recorder", "Recording"]

log = structlog.get_logger(__name__)

_MAX_BATCH: Final = 500


class Recording(StrEnum):
    """What became of a :class:`Finish`."""

    RECORDED = "recorded"
    NOT_RUNNING = "not-running"  # the task had already ended (or does not exist)
    REPLAY = "replay"  # this (task, signature) was recorded before


@dataclass(frozen=True, slots=True)
class Finish:
    """One task's end. ``agent_id`` is None for house tasks (no agent takes the outcome)."""

    task_id: str
    run_id: str
    phase: Phase
    status: TaskStatus
    via: str
    executor: str
    agent_id: str | None = None
    #: Who wrote the answer: the agent, the house model or the house baseline; None
    #: when nothing answered (a deadline passed, the task was voided).
    producer: Producer | None = None
    output: dict[str, Any] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model_id: str | None = None
    latency_ms: float | None = None
    reason: str | None = None
    contribution: float | None = None  # a success's is settled when its run ends
    signature: str | None = None  # an async completion's, kept against replays
    #: The signed headers the task's POST carried (a synchronous reply's), kept on its row.
    request_headers: dict[str, str] | None = None
    #: A completion that arrived past the task's deadline: told why not, never recorded.
    late: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status is TaskStatus.SUCCEEDED

    def end(self, now: float) -> tuple[Any, ...]:
        """The task's conditional update: its end (``END_COLUMNS``, then ``request_headers``
        when the end carries them), where it is still RUNNING (``END_CONDITIONS``)."""
        return (
            self.status.value,
            now,
            self.via,
            json_text(self.output),
            self.prompt_tokens,
            self.completion_tokens,
            self.model_id,
            self.latency_ms,
            self.reason,
            self.contribution if self.succeeded else 0.0,
            self.executor,
            self.producer.value if self.producer is not None else None,
            *(() if self.request_headers is None else (json_text(self.request_headers),)),
            self.task_id,
            TaskStatus.RUNNING.value,
        )

    def outcome(self, now: float) -> AgentOutcome | None:
        """What the task's end leaves on its agent (a ``dispatch`` history row), for an
        agent's task."""
        if self.agent_id is None:
            return None
        detail = {
            "task_id": self.task_id,
            "run_id": self.run_id,
            "phase": self.phase,
            "via": self.via,
        }
        return AgentOutcome.of(
            self.agent_id,
            now,
            "dispatch",
            self.succeeded,
            cause="task" if self.succeeded else "failed task",
            latency_ms=self.latency_ms,
            reason=self.reason,
            detail=detail,
            penalty=True,
        )


@dataclass(slots=True)
class _Prepared:
    """A :class:`Finish` with its rows built ahead of the transaction, on the event loop: the
    store's writer thread shares the GIL with the loop, and only decides and writes."""

    item: Finish
    end: tuple[Any, ...]
    outcome: AgentOutcome | None

    @classmethod
    def of(cls, item: Finish, now: float) -> _Prepared:
        return cls(item, item.end(now), item.outcome(now))


_TASKS = cast(Table, Task.__table__)
_RECEIPTS = cast(Table, CompletionReceipt.__table__)
#: The conditional update that ends a task: these columns, only from RUNNING.
END_COLUMNS: Final = (
    "status",
    "completed_at",
    "via",
    "output",
    "prompt_tokens",
    "completion_tokens",
    "model_id",
    "latency_ms",
    "reason",
    "contribution",
    "executor",
    "producer",
)
END_CONDITIONS: Final = ("id", "status")
#: What a POST's end writes besides: the signed headers it carried.
_SENT_COLUMNS: Final = (*END_COLUMNS, "request_headers")


class Recorder:
    """Records task ends in batches; see the module docstring."""

    def __init__(self, platform: Platform, *, max_batch: int = _MAX_BATCH) -> None:
        self.platform = platform
        self._batches: Batcher[Finish, Recording] = Batcher(self._write, max_batch=max_batch)
        self._deferrals: Batcher[tuple[str, str, dict[str, str] | None], None] = Batcher(
            self._write_deferrals, max_batch=max_batch
        )

    def defer(
        self, task_id: str, run_id: str, request_headers: dict[str, str] | None = None
    ) -> asyncio.Future[None]:
        """Note that ``task_id``'s agent answered 202: its answer comes by the callback, and
        a missed deadline is then the agent's; keep the signed headers its POST carried."""
        return self._deferrals.submit((task_id, run_id, request_headers))

    def record_in(
        self, connection: Connection, items: Sequence[Finish], now: float
    ) -> list[Recording]:
        """Record ``items`` in the caller's transaction (a run step's, which holds the runs)."""
        return self._record([_Prepared.of(item, now) for item in items], now, connection)

    def submit(self, item: Finish) -> asyncio.Future[Recording]:
        """Queue ``item`` for the next batch; the future tells its verdict.

        The item is written even if nobody awaits the future (or the awaiting caller
        is cancelled).
        """
        return self._batches.submit(item)

    async def finish(self, item: Finish) -> Recording:
        """Record ``item``; whether it ended its task."""
        return await self.submit(item)

    async def finish_many(self, items: Sequence[Finish]) -> list[Recording]:
        """Record ``items``; each verdict says whether it ended its task."""
        futures = [self.submit(item) for item in items]
        return [await future for future in futures]

    async def close(self) -> None:
        await self._deferrals.close()
        await self._batches.close()

    async def _write_deferrals(
        self, batch: list[tuple[str, str, dict[str, str] | None]]
    ) -> list[None]:
        now = self.platform.clock.now()
        # In id order, as every writer of tasks takes them.
        rows = [
            (now, json_text(headers), task_id, TaskStatus.RUNNING.value)
            for task_id, _, headers in sorted(batch, key=lambda d: d[0])
        ]
        kept = [(row[1], row[2]) for row in rows if row[1] is not None]

        def write(connection: Connection) -> None:
            count = update_values(connection, _TASKS, _DEFER_COLUMNS, _DEFER_ON, rows)
            if kept and count != len(rows):
                # A task ended before its 202 came (its deadline passed): what its POST
                # carried is still kept. (-1: a driver that does not count rows.)
                update_values(connection, _TASKS, _HEADERS, _BY_ID, kept)

        await self.platform.db.transact(write)
        return [None] * len(batch)

    async def _write(self, batch: list[Finish]) -> list[Recording]:
        """One transaction for ``batch``, in one hop to the store."""
        now = self.platform.clock.now()
        prepared = [_Prepared.of(item, now) for item in batch]
        runs = sorted({item.run_id for item in batch})
        try:
            return await self.platform.db.transact(partial(self._bumped, runs, prepared, now))
        except Exception:
            log.exception("recording task ends failed", tasks=len(batch))
            raise

    def _bumped(
        self, runs: list[str], batch: list[_Prepared], now: float, connection: Connection
    ) -> list[Recording]:
        if not self.platform.db.is_sqlite:  # the runs first, locked in id order: see above
            connection.execute(_LOCK_RUNS, {"runs": runs})
        connection.execute(_BUMP, {"runs": runs, "now": now})
        return self._record(batch, now, connection)

    def _record(
        self, batch: list[_Prepared], now: float, connection: Connection
    ) -> list[Recording]:
        """The tasks still RUNNING end here, in the batch's order; the others are told why not.

        On SQLite, where the transaction holds the write lock, the batch is first ended
        as a whole, under a savepoint: when the update's row count shows that every task
        was RUNNING (the usual case), that was all, without reading a row. Otherwise, and
        on PostgreSQL, the tasks' states are read first (there locked) to tell each one.
        """
        ids = list({p.item.task_id for p in batch})
        on_time = not any(p.item.late for p in batch)
        if self.platform.db.is_sqlite and len(ids) == len(batch) and on_time:
            savepoint = connection.begin_nested()
            if self._end(connection, batch) == len(batch):
                savepoint.commit()
                self._effects(connection, batch, now)
                return [Recording.RECORDED] * len(batch)
            savepoint.rollback()
        query = _TASK_STATES[not self.platform.db.is_sqlite]
        running = {
            task_id
            for task_id, status in connection.execute(query, {"ids": ids})
            if status == TaskStatus.RUNNING
        }
        verdicts: list[Recording] = []
        winners: list[_Prepared] = []
        for prepared in batch:
            item = prepared.item
            if item.task_id in running and not item.late:
                running.discard(item.task_id)  # a second end in the same batch loses
                winners.append(prepared)
                verdicts.append(Recording.RECORDED)
            else:
                verdicts.append(_why_not(connection, item, [w.item for w in winners]))
        if winners:
            self._end(connection, winners)
            self._effects(connection, winners, now)
        kept = {  # a POST that ended too late still says what it carried
            p.item.task_id: (json_text(p.item.request_headers), p.item.task_id)
            for p, verdict in zip(batch, verdicts, strict=True)
            if verdict is not Recording.RECORDED and p.item.request_headers is not None
        }
        if kept:
            update_values(connection, _TASKS, _HEADERS, _BY_ID, [kept[t] for t in sorted(kept)])
        return verdicts

    def _end(self, connection: Connection, winners: list[_Prepared]) -> int:
        """End the tasks of ``winners`` where they are still RUNNING (a POST's with the signed
        headers it carried); the row count (SQLite)."""
        ends = [w.end for w in winners if w.item.request_headers is None]
        sent = [w.end for w in winners if w.item.request_headers is not None]
        count = update_values(connection, _TASKS, END_COLUMNS, END_CONDITIONS, ends)
        return count + update_values(connection, _TASKS, _SENT_COLUMNS, END_CONDITIONS, sent)

    def _effects(self, connection: Connection, winners: list[_Prepared], now: float) -> None:
        """What ending ``winners`` leaves behind: replay receipts, and the agents' side."""
        receipts = [
            {"task_id": w.item.task_id, "signature": w.item.signature, "received_at": now}
            for w in winners
            if w.item.signature is not None
        ]
        if receipts:
            insert_rows(connection, _RECEIPTS, receipts)
        self._agent_effects(connection, winners, now)

    def _agent_effects(self, connection: Connection, winners: list[_Prepared], now: float) -> None:
        """The status machine, cooldown, reputation and history of every agent concerned."""
        outcomes = [w.outcome for w in winners if w.outcome is not None]
        if not outcomes:
            return
        platform = self.platform
        for status in write_outcomes(connection, outcomes, now, platform.schedule):
            platform.metrics.status_changes.labels(status).inc()


def _why_not(connection: Connection, item: Finish, winners: list[Finish]) -> Recording:
    if item.signature is None:
        return Recording.NOT_RUNNING
    if any(w.task_id == item.task_id and w.signature == item.signature for w in winners):
        return Recording.REPLAY
    seen = connection.scalar(
        select(_RECEIPTS.c.task_id).where(
            _RECEIPTS.c.task_id == item.task_id, _RECEIPTS.c.signature == item.signature
        )
    )
    return Recording.REPLAY if seen is not None else Recording.NOT_RUNNING


_RUNS = cast(Table, Run.__table__)
#: The runs of a batch's tasks are due now, and know that an event came.
_BUMP: Final = (
    update(_RUNS)
    .where(one_of(_RUNS.c.id, "runs"))
    .values(kicks=_RUNS.c.kicks + 1, due_at=bindparam("now"))
)
_LOCK_RUNS: Final = (
    select(_RUNS.c.id)
    .where(one_of(_RUNS.c.id, "runs"))
    .order_by(_RUNS.c.id)
    .with_for_update(key_share=True)
)
_DEFER_ON: Final = ("id", "status")
_DEFER_COLUMNS: Final = ("deferred_at", "request_headers")
_HEADERS: Final = ("request_headers",)
_BY_ID: Final = ("id",)
_TASK_STATE: Final = select(_TASKS.c.id, _TASKS.c.status).where(one_of(_TASKS.c.id, "ids"))
#: By whether to lock: on PostgreSQL in id order, so that two batches never wait on each
#: other's rows crosswise; on SQLite the transaction holds the write lock already.
_TASK_STATES: Final = {
    False: _TASK_STATE,
    # NO KEY UPDATE: a task row is never referenced by a key, and the weaker lock does not
    # wait on the key-share locks that inserts referencing rows take.
    True: _TASK_STATE.order_by(_TASKS.c.id).with_for_update(key_share=True),
}
