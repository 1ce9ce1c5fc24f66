"""Migration 0020 merges an agent's roll-up rows of one kind, outcome and failure kind into
one with its latency histogram, on both stores: every count, sum and time the reads use
is kept, and they read what they read before; its downgrade writes a row per bucket again.
"""

# The SQL here is built from this module's constants only.
# ruff: noqa: S608

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncConnection

import palaestra.store
from palaestra.protocol.failures import CallFailure
from palaestra.settings import Settings
from palaestra.store import history
from palaestra.store.db import Database, migrate
from palaestra.store.rollup_models import DAY, HOUR, histogram_counts, percentile
from palaestra.store.rollups import UNTIL_KEY
from tests.integration.platform_fixtures import store_at
from tests.integration.test_rollups import Arena

pytestmark = pytest.mark.asyncio

BEFORE, AFTER = "0019", "0020"
START = 1_790_000_000 - 1_790_000_000 % DAY  # a day's start
#: Closed: the first day, and the second day's first two hours.
UNTIL = START + DAY + 2 * HOUR
TIMEOUT = CallFailure.TIMEOUT.value
#: Rows as 0014 to 0019 kept them, a row per bucket: (agent, span, start, kind, outcome,
#: failure, bucket, events, latency_ms_sum, first_at, last_at); agents are numbered.
ROWS = [
    (0, DAY, START, "ping", "success", "", -1, 2, 0.0, START + 10.0, START + 20.0),
    (0, DAY, START, "ping", "success", "", 5, 3, 6.5, START + 5.0, START + 30.0),
    (0, DAY, START, "ping", "success", "", 12, 1, 20.25, START + 40.0, START + 40.0),
    (0, DAY, START, "ping", "failure", TIMEOUT, 40, 4, 4e5, START + 50.0, START + 900.0),
    (0, DAY, START, "ping", "failure", TIMEOUT, 41, 1, 2e5, START + 60.0, START + 60.0),
    (0, DAY, START, "dispatch", "success", "", 20, 7, 700.0, START + 1.0, START + 80.0),
    (0, HOUR, START + DAY, "ping", "success", "", 3, 1, 1.5, START + DAY + 3.0, START + DAY + 3.0),
    (0, HOUR, START + DAY, "ping", "success", "", 9, 2, 13.0, START + DAY + 1.0, START + DAY + 9.0),
    (1, HOUR, START + DAY + HOUR, "dispatch", "failure", "other", 30, 2, 60.0, START + DAY + HOUR,
     START + DAY + HOUR + 5.0),
]  # fmt: skip
COLUMNS = "agent_id, span, start, kind, outcome, failure"
SUMS = "events, latency_ms_sum, first_at, last_at"


def _config(connection: Connection) -> Config:
    config = Config()
    migrations = Path(palaestra.store.__file__).parent / "migrations"
    config.set_main_option("script_location", str(migrations))
    config.attributes["connection"] = connection
    return config


def _group(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row[:6]


def _merged(rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The rows of each (agent, span, start, kind, outcome, failure) summed, with their
    buckets' counts."""
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        groups[_group(row)].append(row)
    return {
        key: (
            sum(r[7] for r in found),
            sum(r[8] for r in found),
            min(r[9] for r in found),
            max(r[10] for r in found),
            {r[6]: r[7] for r in found},
        )
        for key, found in groups.items()
    }


async def _stored(db: Database) -> list[tuple[Any, ...]]:
    """:data:`ROWS` written as 0014 to 0019 kept them, for agents of their own, with the
    roll-ups' watermark; the rows, their agents' ids in place of their numbers."""
    arena = Arena(db)
    await arena.open()
    rows = [(arena.agents[r[0]], *r[1:]) for r in ROWS]
    async with db.engine.begin() as connection:
        await connection.execute(
            text(
                f"INSERT INTO agent_rollups ({COLUMNS}, bucket, {SUMS}) VALUES (:a, :span, "
                ":start, :kind, :outcome, :failure, :bucket, :events, :ms, :first, :last)"
            ),
            [dict(zip(("a", "span", "start", "kind", "outcome", "failure", "bucket",
                       "events", "ms", "first", "last"), row, strict=True))
             for row in rows],
        )  # fmt: skip
        await connection.execute(
            text("INSERT INTO meta (key, value) VALUES (:key, :value)"),
            {"key": UNTIL_KEY, "value": str(int(UNTIL))},
        )
    return rows


async def _merged_found(connection: AsyncConnection) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The upgraded rows as :func:`_merged` gives them, their histograms read."""
    return {
        tuple(r[:6]): (*r[6:10], histogram_counts(r[10]))
        for r in await connection.execute(
            text(f"SELECT {COLUMNS}, {SUMS}, latency_histogram FROM agent_rollups")
        )
    }


async def test_the_rows_of_a_group_become_one_with_its_histogram_and_come_back(
    settings: Settings,
) -> None:
    async with store_at(settings, BEFORE) as db:
        rows = await _stored(db)
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, AFTER))
            found = await _merged_found(connection)
            texts = set(
                await connection.scalars(text("SELECT latency_histogram FROM agent_rollups"))
            )
        assert found == _merged(rows)
        assert "-1:2,5:3,12:1" in texts  # the buckets ascending, on both stores
        async with db.session() as session:  # the reads are those of the rows per bucket
            for agent in dict.fromkeys(r[0] for r in rows):  # the agents of ROWS, in order
                mine = [r for r in rows if r[0] == agent]
                for kinds in (("ping",), ("ping", "dispatch")):
                    histogram = Counter[int]()
                    for r in mine:
                        if r[3] in kinds:
                            histogram[r[6]] += r[7]
                    expected = [percentile(histogram.items(), f) for f in (0.5, 0.95, 0.99)]
                    assert await history.latency_percentiles(session, agent, kinds) == expected
                failed = [r for r in mine if r[4] == "failure"]
                assert await history.failures_total(session, agent) == sum(r[7] for r in failed)
                tallies = await history.agent_failures(session, agent, ("ping", "dispatch"))
                assert {
                    key: (tally.count, tally.first, tally.last) for key, tally in tallies.items()
                } == {
                    (r[3], CallFailure(r[5])): (
                        sum(x[7] for x in failed if x[3] == r[3]),
                        min(x[9] for x in failed if x[3] == r[3]),
                        max(x[10] for x in failed if x[3] == r[3]),
                    )
                    for r in failed
                }
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: command.downgrade(_config(c), BEFORE))
            back = [
                tuple(r)
                for r in await connection.execute(
                    text(f"SELECT {COLUMNS}, bucket, {SUMS} FROM agent_rollups")
                )
            ]
        # A row per bucket again, with its count; its group's sums and times as they were.
        assert sorted(r[:8] for r in back) == sorted(r[:8] for r in rows)
        assert _merged(back) == _merged(rows)
        alone = [r for r in rows if sum(_group(x) == _group(r) for x in rows) == 1]
        assert alone
        assert set(alone) <= set(back)  # a group of one bucket comes back as it was
        merged = _merged(rows)
        for r in back:  # the group's latency sum on its highest bucket, none on the others
            group = merged[_group(r)]
            assert r[8] == (group[1] if r[6] == max(group[4]) else 0)


async def test_an_upgrade_cut_short_during_its_copy_is_run_again(settings: Settings) -> None:
    """SQLite commits the statements before the copy on their own: an upgrade stopped
    during it leaves the rows aside and a half-made table, and is run again from them."""
    async with store_at(settings, BEFORE) as db:
        rows = await _stored(db)
        async with db.engine.begin() as connection:
            # Where the upgrade stopped: the rows aside, the new table made, nothing copied.
            await connection.execute(text("DROP INDEX ix_agent_rollups_span_start"))
            await connection.execute(
                text("ALTER TABLE agent_rollups RENAME TO agent_rollups_aside")
            )
            if connection.dialect.name == "postgresql":
                await connection.execute(
                    text(
                        "ALTER TABLE agent_rollups_aside "
                        "RENAME CONSTRAINT agent_rollups_pkey TO agent_rollups_aside_pkey"
                    )
                )
            await connection.execute(text("CREATE TABLE agent_rollups (half_made INTEGER)"))
            await connection.run_sync(lambda c: migrate(c, AFTER))
            found = await _merged_found(connection)
            aside = await connection.run_sync(lambda c: inspect(c).has_table("agent_rollups_aside"))
            indexes = await connection.run_sync(
                lambda c: [i["name"] for i in inspect(c).get_indexes("agent_rollups")]
            )
        assert found == _merged(rows)
        assert not aside
        assert "ix_agent_rollups_span_start" in indexes
