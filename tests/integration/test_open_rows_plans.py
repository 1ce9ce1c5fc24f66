"""The reads of what is running go through the running rows only, on both stores.

``/metrics``' dispatches in flight, the live pages' stamps, the referee's open matches
and the sweeper's are explained over an arena whose runs and matches have nearly all
finished, its statistics gathered: no read may scan ``runs``, ``tasks`` or ``matches``
(SQLite's ``SCAN`` of the table or of an index over every row, such as the matches by
creation), only search them or walk ``ix_matches_open`` and ``ix_runs_running``, which
hold the open rows alone. (SQLite's statistics give a status the rows of every status
once nearly all rows share one: with the status as a parameter and without these
indexes it read every run and walked every match.) On PostgreSQL sequential scans are
priced out first, so that the small test tables show which index each read could use.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from sqlalchemy import insert, text

from palaestra.api.routes_system import dispatches_in_flight
from palaestra.clock import FrozenClock
from palaestra.engine.cage.referee import Referee
from palaestra.engine.ratings.live_table import fighter_classes
from palaestra.ids import new_id
from palaestra.jobs.sweeper import orphaned_matches, pending_matches
from palaestra.platform import Platform
from palaestra.store.models import Agent, Run, Task
from palaestra.store.rating_models import FighterRating
from palaestra.store.stamps import RECENT_S
from palaestra.web.stamp_queries import read_stamps
from tests.integration.arena_rows import add_fighter, add_match, add_matches, add_owner, add_run
from tests.integration.plans import plan, selects

pytestmark = pytest.mark.asyncio

FINISHED_RUNS = 300
TABLES = ("runs", "tasks", "matches")
#: What may walk a whole index: those of the open rows only.
OPEN_INDEXES = ("ix_matches_open", "ix_runs_running")


async def finished_runs(platform: Platform, agent_id: str, count: int) -> None:
    now = platform.clock.now()
    runs: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []
    for i in range(count):
        run_id = new_id()
        runs.append(
            {
                "id": run_id,
                "goal": "a goal",
                "launchpad": "make-money",
                "status": "COMPLETED" if i % 10 else "FAILED",
                "phase": "REPORT",
                "config": {},
                "created_at": now + i,
                "updated_at": now + i,
                "finished_at": now + i + 60,
                "kicks": 0,
            }
        )
        tasks += [
            {
                "id": new_id(),
                "run_id": run_id,
                "phase": "SCOUT",
                "slot": slot,
                "attempt": 0,
                "agent_id": agent_id,
                "executor": "scout",
                "status": "SUCCEEDED",
                "created_at": now + i,
            }
            for slot in range(3)
        ]
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(Run), runs)
        await session.execute(insert(Task), tasks)


async def test_what_is_running_is_read_through_the_running_rows(platform: Platform) -> None:
    owner = await add_owner(platform)
    attacker = await add_fighter(platform, owner, "attacker")
    defender = await add_fighter(platform, owner, "defender")
    await finished_runs(platform, attacker, FINISHED_RUNS)
    await add_run(
        platform,
        [{"agent_id": attacker, "status": "RUNNING"}, {"agent_id": None, "status": "RUNNING"}],
        status="RUNNING",
    )
    await add_matches(platform, [(attacker, defender, "draw")] * FINISHED_RUNS)
    pending = await add_match(platform, attacker, defender, None, status="PENDING")
    await add_match(platform, defender, attacker, None, status="RUNNING")
    async with platform.db.engine.begin() as connection:
        await connection.execute(text("ANALYZE"))

    with selects(platform, TABLES) as seen:
        async with platform.db.session() as session:
            assert await session.scalar(dispatches_in_flight()) == 1
        stamps = await read_stamps(platform)
        assert stamps.runs[1] == 1
        assert stamps.matches[1] == 2
        assert len(await Referee(platform).open_matches(4)) == 2
        assert len(await orphaned_matches(platform, platform.clock.now() + 3600, 60.0)) == 2
        assert await pending_matches(platform) == [pending]
    assert len(seen) >= 5
    for statement, parameters in seen:
        explained = await plan(platform, statement, parameters)
        assert not walks_history(explained), (statement, explained)


def walks_history(explained: str) -> bool:
    """Whether a plan reads every run, task or match (an index of the open rows aside):
    SQLite's SCAN of one of them, PostgreSQL's index scan that filters on the status (as
    the matches by creation, the open ones kept)."""
    lines = explained.splitlines()
    for i, line in enumerate(lines):
        if any(f"Seq Scan on {table}" in line for table in TABLES):
            return True
        if any(index in line for index in OPEN_INDEXES):
            continue
        if any(f"SCAN {table}" in line for table in TABLES):
            return True
        if "Scan" in line and any(f" on {table}" in line for table in TABLES):
            details = list(itertools.takewhile(lambda d: "->" not in d, lines[i + 1 :]))
            searched = any("Index Cond:" in d for d in details)
            if not searched and any("Filter:" in d and "status" in d for d in details):
                return True
    return False


async def many_agents(
    platform: Platform, owner: str, count: int, at: float, fighter_class: str | None = None
) -> list[str]:
    """``count`` agents of each arena, last written at ``at``, with a fighter's ratings."""
    rows: list[dict[str, Any]] = [
        {
            "id": new_id(),
            "owner_id": owner,
            "name": f"{arena}-{i}",
            "arena": arena,
            "role": "SCOUT" if arena == "edgearena" else None,
            "entrant_type": None if arena == "edgearena" else "harness",
            "fighter_class": None if arena == "edgearena" else fighter_class,
            "sandbox_attested": False,
            "status": "ACTIVE",
            "consecutive_failures": 0,
            "hold": False,
            "reputation": 0.0,
            "created_at": at,
            "updated_at": at,
        }
        for arena in ("edgearena", "cage")
        for i in range(count)
    ]
    ratings = [
        {"fighter_id": row["id"], "side": side, "mu": 25.0, "sigma": 8.3, "matches": 0,
         "wins": 0, "draws": 0, "losses": 0, "updated_at": at}
        for row in rows
        if row["arena"] == "cage"
        for side in ("attack", "defence")
    ]  # fmt: skip
    async with platform.db.session() as session, session.begin():
        await session.execute(insert(Agent), rows)
        await session.execute(insert(FighterRating), ratings)
    return [str(row["id"]) for row in rows]


async def test_the_stamps_count_no_table_whole(platform: Platform) -> None:
    """The live pages' and the live table's stamps read the agents and the live ratings
    through their indexes, however many there are."""
    owner = await add_owner(platform)
    await many_agents(platform, owner, 300, platform.clock.now() - 3600)
    async with platform.db.engine.begin() as connection:
        await connection.execute(text("ANALYZE"))
    with selects(platform, ("agents", "fighter_ratings")) as seen:
        await read_stamps(platform)
        await fighter_classes(platform)  # the live table: its stamp, then every fighter
    stamps = [(statement, parameters) for statement, parameters in seen if "max(" in statement]
    assert len(stamps) == 2
    for statement, parameters in stamps:
        explained = await plan(platform, statement, parameters)
        assert not reads_whole(explained, ("agents", "fighter_ratings")), (statement, explained)


async def test_a_write_committed_after_a_later_one_moves_the_stamps(platform: Platform) -> None:
    owner = await add_owner(platform)
    now = platform.clock.now()
    await many_agents(platform, owner, 2, now)
    before = await read_stamps(platform)
    table_before = await fighter_classes(platform)
    # Written a second before the latest write, committed after it: the latest time stays.
    await many_agents(platform, owner, 1, now - 1, fighter_class="late")
    after = await read_stamps(platform)
    assert after.agents != before.agents
    assert after.ratings != before.ratings
    assert after.runs == before.runs
    assert await fighter_classes(platform) == {*table_before, "late"}


def reads_whole(explained: str, tables: tuple[str, ...]) -> bool:
    """Whether a plan reads one of ``tables`` whole: SQLite's SCAN of it, PostgreSQL's
    scan of it, or of one of its indexes, with no condition to search by."""
    lines = explained.splitlines()
    for i, line in enumerate(lines):
        if any(re.search(rf"\bSCAN {table}\b", line) for table in tables):
            return True
        if "Scan" in line and any(f" on {table} " in f"{line} " for table in tables):
            details = itertools.takewhile(lambda d: "->" not in d, lines[i + 1 :])
            if not any("Index Cond:" in d for d in details):
                return True
    return False


async def test_the_live_table_reads_its_fighters_again_within_a_minute(
    platform: Platform, clock: FrozenClock
) -> None:
    """A fighter whose write committed long after a later one leaves the stamps as they
    were; the live table still reads it within a minute, as the live pages redraw."""
    clock.advance(61.0 - clock.now() % 60.0)  # a second into a minute: the reads below in it
    owner = await add_owner(platform)
    now = platform.clock.now()
    await many_agents(platform, owner, 2, now)
    assert await fighter_classes(platform) == set()
    await many_agents(platform, owner, 1, now - 2 * RECENT_S, fighter_class="late")
    clock.advance(1.0)
    assert await fighter_classes(platform) == set()  # unseen: the stamps are as they were
    clock.advance(60.0)
    assert await fighter_classes(platform) == {"late"}
