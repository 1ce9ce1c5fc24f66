"""Runs and matches stored before their arena-wide roll-up existed are rolled up by the
migration that adds it, on both stores: the overview's counts stay what they were."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from palaestra.settings import Settings
from palaestra.store import history
from palaestra.store.db import migrate
from palaestra.store.rollup_models import DAY, HOUR
from palaestra.store.rollups import UNTIL_KEY
from tests.integration.platform_fixtures import store_at

pytestmark = pytest.mark.asyncio

BEFORE, AFTER = "0015", "0016"
START = 1_790_000_000 - 1_790_000_000 % DAY  # a day's start
#: Runs created over three days, seven hours apart.
CREATED = [START + 7 * HOUR * i + 60.0 for i in range(11)]
#: The roll-ups closed until the hour after the second day's tenth hour.
UNTIL = START + DAY + 10 * HOUR


async def test_runs_stored_before_the_roll_up_are_rolled_up_and_counted_the_same(
    settings: Settings,
) -> None:
    async with store_at(settings, BEFORE) as db:
        async with db.engine.begin() as connection:
            for i, at in enumerate(CREATED):
                await connection.execute(
                    text(
                        "INSERT INTO runs (id, goal, launchpad, status, phase, config, "
                        "created_at, updated_at, kicks) VALUES (:id, 'g', 'l', 'COMPLETED', "
                        "'REPORT', '{}', :at, :at, 0)"
                    ),
                    {"id": f"run-{i}", "at": at},
                )
            await connection.execute(
                text("INSERT INTO meta (key, value) VALUES (:key, :value)"),
                {"key": UNTIL_KEY, "value": str(int(UNTIL))},
            )
        async with db.engine.begin() as connection:
            await connection.run_sync(lambda c: migrate(c, AFTER))
            rows = {
                (span, start): (runs, matches)
                for span, start, runs, matches in await connection.execute(
                    text("SELECT span, start, runs, matches FROM arena_rollups")
                )
            }
        closed = [at for at in CREATED if at < UNTIL]
        hours = {(HOUR, int(at - at % HOUR)): (1, 0) for at in closed}
        day = sum(1 for at in closed if at < START + DAY)
        assert rows == {**hours, (DAY, START): (day, 0)}
        async with db.session() as session:
            assert await history.runs_total(session) == len(CREATED)
            assert await history.matches_total(session) == 0
