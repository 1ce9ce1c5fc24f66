"""History grown by bulk SQL for ``bench/history.py``: about 30 days of a busy arena.

One ``INSERT ... SELECT`` per table over a series of integers: PostgreSQL's
``generate_series``, SQLite's recursive CTE. Every value is a function of the row's
number (and of ``random()`` for latencies and contributions), so that the rows look as
the platform writes them: ids shaped as UUIDs, times spread over the 30 days before
now, one task in twelve failed, timed out or voided, a twentieth of the pings and
dispatches failed with a timeout's reason line.
"""

# The SQL is built from this module's constants and integers only.
# ruff: noqa: S608

from __future__ import annotations

import time
from typing import Final

from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = ["grow", "grow_day"]

DAYS: Final = 30
#: Rows per INSERT: PostgreSQL holds a statement's series in memory.
CHUNK: Final = 1_000_000
TASKS_PER_RUN: Final = 9
ROLES: Final = ("SCOUT", "BUILDER", "ANALYST")


class _Sql:
    def __init__(self, dialect: str, mark: str) -> None:
        self.pg = dialect == "postgresql"
        self.mark = mark

    def series(self, first: int, last: int) -> tuple[str, str]:
        """The WITH clause (SQLite) and the FROM item of the integers ``first..last`` as i."""
        if self.pg:
            return "", f"generate_series({first}, {last}) AS s(i)"
        return (
            f"WITH RECURSIVE s(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM s "
            f"WHERE i < {last}) ",
            "s",
        )

    def id(self, prefix: str, number: str) -> str:
        """An id shaped as a UUID: ``prefix`` (one hex digit) and the number in hex."""
        if self.pg:
            return f"'{prefix}{self.mark}000000-0000-7000-8000-' || lpad(to_hex({number}), 12, '0')"
        return f"printf('{prefix}{self.mark}000000-0000-7000-8000-%012x', {number})"

    @property
    def random(self) -> str:
        return "random()" if self.pg else "((abs(random()) % 1000000) / 1000000.0)"

    def pick(self, values: tuple[str, ...], number: str) -> str:
        cases = " ".join(f"WHEN {i} THEN '{v}'" for i, v in enumerate(values))
        return f"CASE ({number}) % {len(values)} {cases} END"


def _insert(
    connection: Connection, sql: _Sql, table: str, columns: str, select: str, count: int
) -> None:
    """``select`` (over the integer ``i``) inserted into ``table`` for i in 1..count."""
    for first in range(1, count + 1, CHUNK):
        last = min(count, first + CHUNK - 1)
        with_clause, series = sql.series(first, last)
        connection.execute(
            text(f"{with_clause}INSERT INTO {table} ({columns}) {select} FROM {series}")
        )


def grow(
    connection: Connection,
    ids: dict[str, str],
    *,
    events: int,
    tasks: int,
    agents: int,
    hot: int,
    days: float = DAYS,
    mark: str = "0",
) -> str:
    """Add ``days`` of history; say what was added. ``mark`` (a hex digit) keeps the ids of
    one growth apart from another's."""
    sql = _Sql(connection.dialect.name, mark)
    now = time.time()
    t0 = now - days * 86400
    owner = ids["owner"]
    fighters = max(2, agents // 20)
    edge = agents - fighters
    runs = max(1, tasks // TASKS_PER_RUN)
    matches = tasks // 100
    spread = days * 86400
    agent_id = sql.id("a", "i")
    _insert(
        connection,
        sql,
        "agents",
        "id, owner_id, name, arena, role, entrant_type, sandbox_attested, status, "
        "consecutive_failures, hold, reputation, rated_challenges, friendly_challenges, "
        "created_at, updated_at",
        f"SELECT {agent_id}, '{owner}', 'grown-{mark}-' || i, "
        f"CASE WHEN i > {edge} THEN 'cage' ELSE 'edgearena' END, "
        f"CASE WHEN i > {edge} THEN NULL ELSE {sql.pick(ROLES, 'i')} END, "
        f"CASE WHEN i > {edge} THEN 'harness' ELSE NULL END, false, "
        f"CASE WHEN i % 10 = 0 THEN 'DEGRADED' ELSE 'ACTIVE' END, 0, false, 0.5, false, false, "
        f"{t0} + i * {spread / agents}, {t0} + i * {spread / agents}",
        agents,
    )
    _insert(
        connection,
        sql,
        "runs",
        "id, goal, launchpad, status, phase, config, created_at, updated_at, finished_at, kicks",
        f"SELECT {sql.id('b', 'i')}, 'a goal', 'make-money', 'COMPLETED', 'REPORT', '{{}}', "
        f"{t0} + i * {spread / runs}, {t0} + i * {spread / runs}, "
        f"{t0} + i * {spread / runs} + 60, 0",
        runs,
    )
    status = (
        "CASE WHEN i % 100 < 88 THEN 'SUCCEEDED' WHEN i % 100 < 94 THEN 'FAILED' "
        "WHEN i % 100 < 97 THEN 'TIMEOUT' ELSE 'VOIDED' END"
    )
    at = f"{t0} + (i % {runs}) * {spread / runs}"
    _insert(
        connection,
        sql,
        "tasks",
        "id, run_id, phase, slot, attempt, agent_id, executor, status, payload, output, "
        "sent_at, completed_at, via, latency_ms, contribution, created_at",
        f"SELECT {sql.id('c', 'i')}, {sql.id('b', f'(i % {runs}) + 1')}, 'SCOUT', i / {runs}, "
        f"0, {sql.id('a', f'(i % {edge}) + 1')}, 'grown', {status}, "
        '\'{"goal": "a goal", "prompt": "propose a business"}\', \'{"ok": true}\', '
        f"{at}, {at} + 2, 'sync', {sql.random} * 2000, {sql.random}, {at}",
        tasks,
    )
    outcome = "CASE i % 3 WHEN 0 THEN 'attacker' WHEN 1 THEN 'defender' ELSE 'draw' END"
    fighter = f"{edge} + 1 + (i % {fighters})"
    entrant = '\'{"fighter_id": "\' || %s || \'", "name": "grown"}\''
    entrants = (
        '\'{"entrants": {"attacker": \' || '
        + entrant % sql.id("a", fighter)
        + " || ', \"defender\": ' || "
        + entrant % sql.id("a", f"{edge} + 1 + ((i + 1) % {fighters})")
        + " || '}}'"
    )
    if sql.pg:
        entrants = f"({entrants})::json"
    _insert(
        connection,
        sql,
        "matches",
        "id, attacker_id, defender_id, ruleset, kind, status, outcome, decided_by, seed, "
        "material, deadline_ms, next_turn, created_at, updated_at, finished_at",
        f"SELECT {sql.id('d', 'i')}, {sql.id('a', fighter)}, "
        f"{sql.id('a', f'{edge} + 1 + ((i + 1) % {fighters})')}, 'cage.v1', 'rated', 'SCORED', "
        f"{outcome}, 'utility', i, {entrants}, 1000, 6, "
        f"{t0} + i * {spread / max(1, matches)}, {t0} + i * {spread / max(1, matches)}, "
        f"{t0} + i * {spread / max(1, matches)}",
        matches,
    )
    kind = (
        "CASE WHEN i % 100 < 90 THEN 'ping' WHEN i % 100 < 98 THEN 'dispatch' "
        "WHEN i % 100 = 98 THEN 'status' ELSE 'wizard' END"
    )
    failed = "(i % 20 = 0 AND i % 100 < 98)"
    columns = "agent_id, at, kind, outcome, latency_ms, reason"
    values = (
        f"{kind}, CASE WHEN {failed} THEN 'failure' WHEN i % 100 = 98 THEN 'ACTIVE' "
        f"ELSE 'success' END, {sql.random} * 800, "
        f"CASE WHEN {failed} THEN 'External agent timed out after 30000 ms' ELSE NULL END"
    )
    _insert(
        connection,
        sql,
        "agent_events",
        columns,
        f"SELECT '{ids['hot']}', {t0} + i * {spread / max(1, hot)}, {values}",
        hot,
    )
    _insert(
        connection,
        sql,
        "agent_events",
        columns,
        f"SELECT {sql.id('a', f'(i % {agents}) + 1')}, {t0} + i * {spread / max(1, events)}, "
        f"{values}",
        events - hot,
    )
    return (
        f"{agents:,} agents, {runs:,} runs, {tasks:,} tasks, {matches:,} matches, "
        f"{events:,} events ({hot:,} on the read agent)"
    )


def grow_day(
    connection: Connection,
    *,
    day: int,
    start: float,
    agents: int,
    events: int,
    tasks: int,
) -> None:
    """Day number ``day`` (from 0) of a busy arena, from ``start`` (unix seconds): its
    ``events`` agent events, ``tasks`` tasks in finished runs of 9 with a completion
    receipt each, and a match per 100 tasks, among the ``agents`` agents a :func:`grow`
    of mark ``"2"`` made. Ids carry mark ``"3"`` and numbers unique to the day."""
    sql, agent = _Sql(connection.dialect.name, "3"), _Sql(connection.dialect.name, "2")
    runs = max(1, tasks // TASKS_PER_RUN)
    matches = tasks // 100
    fighters = max(2, agents // 20)
    edge = agents - fighters
    base = day * 10_000_000  # numbers of one day apart from another's (10M rows a day at most)
    spread = 86400.0
    run_at = f"{start} + i * {spread / runs}"
    _insert(
        connection,
        sql,
        "runs",
        "id, goal, launchpad, status, phase, config, created_at, updated_at, finished_at, kicks",
        f"SELECT {sql.id('b', f'i + {base}')}, 'a goal', 'make-money', 'COMPLETED', 'REPORT', "
        f"'{{}}', {run_at}, {run_at}, {run_at} + 60, 0",
        runs,
    )
    at = f"{start} + (i % {runs}) * {spread / runs}"
    _insert(
        connection,
        sql,
        "tasks",
        "id, run_id, phase, slot, attempt, agent_id, executor, status, payload, output, "
        "sent_at, completed_at, via, latency_ms, contribution, created_at",
        f"SELECT {sql.id('c', f'i + {base}')}, {sql.id('b', f'(i % {runs}) + 1 + {base}')}, "
        f"'SCOUT', i / {runs}, 0, {agent.id('a', f'(i % {edge}) + 1')}, 'grown', 'SUCCEEDED', "
        '\'{"goal": "a goal", "prompt": "propose a business"}\', \'{"ok": true}\', '
        f"{at}, {at} + 2, 'async', {sql.random} * 2000, {sql.random}, {at}",
        tasks,
    )
    _insert(
        connection,
        sql,
        "completion_receipts",
        "task_id, signature, received_at",
        f"SELECT {sql.id('c', f'i + {base}')}, 'v1,' || {sql.id('e', f'i + {base}')}, {at} + 2",
        tasks,
    )
    fighter = f"{edge} + 1 + (i % {fighters})"
    match_at = f"{start} + i * {spread / max(1, matches)}"
    _insert(
        connection,
        sql,
        "matches",
        "id, attacker_id, defender_id, ruleset, kind, status, outcome, decided_by, seed, "
        "material, deadline_ms, next_turn, created_at, updated_at, finished_at",
        f"SELECT {sql.id('d', f'i + {base}')}, {agent.id('a', fighter)}, "
        f"{agent.id('a', f'{edge} + 1 + ((i + 1) % {fighters})')}, 'cage.v1', 'rated', "
        f"'SCORED', 'draw', 'utility', i, '{{}}', 1000, 6, {match_at}, {match_at}, {match_at}",
        matches,
    )
    _insert(
        connection,
        sql,
        "agent_events",
        "agent_id, at, kind, outcome, latency_ms, reason",
        f"SELECT {agent.id('a', f'(i % {agents}) + 1')}, {start} + i * {spread / max(1, events)}, "
        "CASE WHEN i % 100 < 90 THEN 'ping' ELSE 'dispatch' END, "
        f"CASE WHEN i % 20 = 0 THEN 'failure' ELSE 'success' END, {sql.random} * 800, "
        "CASE WHEN i % 20 = 0 THEN 'External agent timed out after 30000 ms' ELSE NULL END",
        events,
    )
