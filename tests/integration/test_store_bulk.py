"""The hot path's many-row writes (``store.bulk``) mean the same on both stores, whatever the
count: every value as given (JSON, NULL, floats, integers), conflicts skipped on request, an
update applied only where all its conditions hold, and the row count reported."""

from __future__ import annotations

from typing import Any, cast

import pytest
from sqlalchemy import Table, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from palaestra.engine.accounts import create_owner
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.store.bulk import insert_values, json_text, update_rows, update_values
from palaestra.store.models import Run, Task

pytestmark = pytest.mark.asyncio

_RUNS = cast(Table, Run.__table__)
_TASKS = cast(Table, Task.__table__)
_COLUMNS = (
    "id",
    "run_id",
    "phase",
    "slot",
    "attempt",
    "executor",
    "status",
    "payload",
    "created_at",
)


async def _run(platform: Platform) -> str:
    owner, _ = await create_owner(platform, "bulk")
    run_id = new_id()
    row = (run_id, owner.id, "goal", "default", "RUNNING", "SCOUT", json_text({"k": 1}), 1.0, 1.0)
    columns = (
        "id",
        "owner_id",
        "goal",
        "launchpad",
        "status",
        "phase",
        "config",
        "created_at",
        "updated_at",
    )

    def insert(connection: Connection) -> None:
        insert_values(connection, _RUNS, columns, [row])

    await platform.db.transact(insert)
    return run_id


def _task(run_id: str, slot: int, payload: Any) -> tuple[Any, ...]:
    return (new_id(), run_id, "SCOUT", slot, 0, "agent", "RUNNING", json_text(payload), 2.5 + slot)


async def _tasks(platform: Platform, run_id: str) -> dict[str, Any]:
    query = select(Task).where(Task.run_id == run_id)
    async with platform.db.session() as session:
        return {task.id: task for task in (await session.execute(query)).scalars()}


@pytest.mark.parametrize("count", [1, 3, 300])
async def test_inserted_rows_read_back_as_given(platform: Platform, count: int) -> None:
    run_id = await _run(platform)
    payloads = [
        None if n % 3 == 0 else {"n": n, "text": "é\u2028\"'", "list": [1.5, None]}
        for n in range(count)
    ]
    rows = [_task(run_id, n, payload) for n, payload in enumerate(payloads)]
    await platform.db.transact(lambda c: insert_values(c, _TASKS, _COLUMNS, rows))
    stored = await _tasks(platform, run_id)
    assert len(stored) == count
    for row, payload in zip(rows, payloads, strict=True):
        task = stored[row[0]]
        assert (task.slot, task.status, task.payload, task.created_at) == (
            row[3],
            "RUNNING",
            payload,
            row[8],
        )


async def test_a_conflicting_row_is_skipped_on_request_only(platform: Platform) -> None:
    run_id = await _run(platform)
    first = _task(run_id, 0, {"first": True})
    await platform.db.transact(lambda c: insert_values(c, _TASKS, _COLUMNS, [first]))
    again = (first[0], *first[1:7], json_text({"first": False}), first[8])
    fresh = _task(run_id, 1, None)
    await platform.db.transact(
        lambda c: insert_values(c, _TASKS, _COLUMNS, [again, fresh], skip_conflicts=True)
    )
    stored = await _tasks(platform, run_id)
    assert stored[first[0]].payload == {"first": True}
    assert fresh[0] in stored
    with pytest.raises(IntegrityError):
        await platform.db.transact(lambda c: insert_values(c, _TASKS, _COLUMNS, [again]))


@pytest.mark.parametrize("count", [1, 300])
async def test_updates_apply_where_every_condition_holds(platform: Platform, count: int) -> None:
    run_id = await _run(platform)
    rows = [_task(run_id, n, {"n": n}) for n in range(count)]
    await platform.db.transact(lambda c: insert_values(c, _TASKS, _COLUMNS, rows))
    # Ends for every task, the first one's conditioned on a status it no longer has.
    columns = ("status", "output", "latency_ms", "prompt_tokens", "reason")
    ends = [
        ("SUCCEEDED", json_text({"out": n}), n * 0.5, n, None, row[0], "RUNNING" if n else "X")
        for n, row in enumerate(rows)
    ]
    changed = await platform.db.transact(
        lambda c: update_values(c, _TASKS, columns, ("id", "status"), ends)
    )
    assert changed == count - 1
    stored = await _tasks(platform, run_id)
    first = stored[rows[0][0]]
    assert (first.status, first.output) == ("RUNNING", None)
    for n, row in enumerate(rows[1:], 1):
        task = stored[row[0]]
        assert (task.status, task.output, task.latency_ms, task.prompt_tokens, task.reason) == (
            "SUCCEEDED",
            {"out": n},
            n * 0.5,
            n,
            None,
        )
        assert task.payload == {"n": n}  # untouched


async def test_update_rows_sets_json_and_matches_by_key(platform: Platform) -> None:
    run_id = await _run(platform)
    rows = [_task(run_id, n, None) for n in range(4)]
    await platform.db.transact(lambda c: insert_values(c, _TASKS, _COLUMNS, rows))
    items = [
        {"task": row[0], "output": {"slot": n}, "contribution": None if n else 1.25}
        for n, row in enumerate(rows[:3])
    ]
    changed = await platform.db.transact(
        lambda c: update_rows(c, _TASKS, items, match={"id": "task"})
    )
    assert changed == 3
    stored = await _tasks(platform, run_id)
    assert [stored[row[0]].output for row in rows] == [{"slot": 0}, {"slot": 1}, {"slot": 2}, None]
    assert stored[rows[0][0]].contribution == 1.25
