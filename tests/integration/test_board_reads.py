"""The leaderboard page reads no history, and decodes a published snapshot once.

Its statements are explained on both stores: none reads the history tables, the
snapshots are read through ``ix_leaderboard_snapshots_arena_at`` or by primary key, and
the live table's stamp (read on every view) reads the fighters and their ratings
through indexes only, never a table scan (on PostgreSQL sequential scans are priced out
first, so that the small test tables show which index each read could use). A second
view reads no snapshot's data, and neither the page nor the API reads the live ratings
again while none moved; a new publication, a rating that moves and a new fighter are
shown at once.
"""

from __future__ import annotations

import itertools

import pytest
from sqlalchemy import text, update

from palaestra.engine.ratings.leaderboard import recompute
from palaestra.engine.ratings.live import rate_pending
from palaestra.engine.ratings.live_table import live_table
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.store.rating_models import FighterRating
from palaestra.web.board_queries import cage_board, edgearena_board
from tests.integration.arena_rows import add_fighter, add_matches, add_owner
from tests.integration.plans import plan, selects

pytestmark = pytest.mark.asyncio

HISTORY = ("agent_events", "tasks", "matches", "runs", "turns", "rated_matches")


async def published_arena(platform: Platform, fighters: int = 6) -> list[str]:
    owner = await add_owner(platform)
    ids = [await add_fighter(platform, owner, f"f{i}") for i in range(fighters)]
    outcomes = itertools.cycle(["attacker", "defender", "draw"])
    games = [(a, d, next(outcomes)) for a, d in itertools.permutations(ids, 2) for _ in range(2)]
    await add_matches(platform, games)
    await rate_pending(platform)
    for _ in range(2):  # an older snapshot beside the newest
        await recompute(platform, Arena.CAGE, resamples=10)
        await recompute(platform, Arena.EDGEARENA)
    async with platform.db.engine.begin() as connection:
        await connection.execute(text("ANALYZE"))
    return ids


async def test_the_leaderboard_reads_snapshots_by_index_and_no_history(
    platform: Platform,
) -> None:
    await published_arena(platform)
    with selects(platform) as seen:
        board = await cage_board(platform)
        await edgearena_board(platform)
    assert board.published
    assert board.fighters
    assert seen
    for statement, parameters in seen:
        for table in HISTORY:
            assert f"FROM {table}" not in statement
            assert f"JOIN {table}" not in statement
        explained = await plan(platform, statement, parameters)
        assert "Seq Scan" not in explained, (statement, explained)
        stamp = "max(fighter_ratings.updated_at)" in statement  # read on every view
        for line in explained.splitlines():
            if stamp and any(f"SCAN {t}" in line for t in ("agents", "fighter_ratings")):
                assert "INDEX" in line, (statement, explained)
        if "leaderboard_snapshots" not in statement:
            continue
        assert "Seq Scan" not in explained, (statement, explained)
        for line in explained.splitlines():
            if "leaderboard_snapshots" in line and ("SCAN" in line or "SEARCH" in line):
                assert "ix_leaderboard_snapshots_arena_at" in line or "PRIMARY KEY" in line, (
                    statement,
                    explained,
                )


async def test_a_second_view_decodes_no_snapshot_and_changes_show_at_once(
    platform: Platform,
) -> None:
    ids = await published_arena(platform)
    first = await cage_board(platform)
    await edgearena_board(platform)
    with selects(platform) as seen:
        again = await cage_board(platform)
        await edgearena_board(platform)
    assert again == first
    assert not [s for s, _ in seen if "leaderboard_snapshots.data" in s]
    # Nor any rating, nor the fighters: the live table is ranked once per change, for the
    # API as for the page.
    with selects(platform) as seen:
        await live_table(platform, limit=3)
        await live_table(platform, limit=3)
    assert not [s for s, _ in seen if "fighter_ratings.mu" in s or "agents.name" in s]
    # A rating that moves: the live table ranks again.
    top = first.live.items[0]["fighter_id"]
    async with platform.db.session() as session, session.begin():
        await session.execute(
            update(FighterRating)
            .where(FighterRating.fighter_id == top)
            .values(mu=-50.0, updated_at=platform.clock.now() + 1)
        )
    moved = await cage_board(platform)
    assert moved.live.items[0]["fighter_id"] != top
    assert moved.live.items[-1]["fighter_id"] == top
    # A new fighter of a new class: the filter's classes know it.
    owner = await add_owner(platform, "late")
    await add_fighter(platform, owner, "late", fighter_class="newcomer")
    assert "newcomer" in (await cage_board(platform)).classes
    # A new publication: the page shows it.
    await add_matches(platform, [(ids[0], ids[1], "attacker")] * 3)
    await rate_pending(platform)
    platform.clock.advance(5)  # type: ignore[attr-defined]
    snapshot = await recompute(platform, Arena.CAGE, resamples=10)
    newest = await cage_board(platform)
    assert newest.computed_at == snapshot.computed_at != first.computed_at
    assert newest.match_count == first.match_count + 3
