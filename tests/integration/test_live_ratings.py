"""Live ratings on both stores: each scored match once, in finish order; re-running is a no-op."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, text

from palaestra.engine.ratings.live import LOOKBACK_S, RATED_THROUGH, live_ratings, rate_pending
from palaestra.platform import Platform
from palaestra.rules.cage.outcome import Winner
from palaestra.rules.ratings import Rating, Record, rate
from palaestra.store.models import Meta
from palaestra.store.rating_models import FighterRating, RatedMatch
from tests.integration.arena_rows import add_fighter, add_match, add_matches, add_owner
from tests.integration.plans import plan, selects

pytestmark = pytest.mark.asyncio


async def snapshot(platform: Platform) -> list[tuple[str, str, float, float, int]]:
    async with platform.db.session() as session:
        rows = await session.scalars(
            select(FighterRating).order_by(FighterRating.fighter_id, FighterRating.side)
        )
        return [(r.fighter_id, r.side, r.mu, r.sigma, r.matches) for r in rows]


async def three_fighters(platform: Platform) -> tuple[str, str, str]:
    ids = []
    for name in ("ash", "birch", "cedar"):
        ids.append(await add_fighter(platform, await add_owner(platform, name), name))
    return ids[0], ids[1], ids[2]


async def test_scored_matches_are_rated_once_in_finish_order(platform: Platform) -> None:
    a, b, c = await three_fighters(platform)
    # Created out of finish order on purpose.
    second = await add_match(platform, b, a, "draw", finished_at=2_000.0)
    first = await add_match(platform, a, b, "attacker", finished_at=1_000.0)
    third = await add_match(platform, a, c, "defender", decided_by="forfeit", finished_at=3_000.0)
    await add_match(platform, c, a, None, status="VOIDED")
    await add_match(platform, c, b, None, status="RUNNING")
    await add_match(platform, b, c, None, status="PENDING")

    assert await rate_pending(platform) == 3

    # The same sequence by hand: a attacks b (attacker wins), b attacks a (draw),
    # a attacks c and forfeits (defender wins).
    a_att, b_def = rate(Rating(), Rating(), Winner.ATTACKER)
    b_att, a_def = rate(Rating(), Rating(), Winner.DRAW)
    a_att, c_def = rate(a_att, Rating(), Winner.DEFENDER)
    ratings = await live_ratings(platform)
    assert ratings[a].attack == pytest.approx(a_att)
    assert ratings[a].defence == pytest.approx(a_def)
    assert ratings[b].attack == pytest.approx(b_att)
    assert ratings[b].defence == pytest.approx(b_def)
    assert ratings[c].defence == pytest.approx(c_def)
    assert ratings[c].attack == Rating()  # never attacked in a scored match
    assert ratings[a].attack_record == Record(matches=2, wins=1, draws=0, losses=1)
    assert ratings[a].defence_record == Record(matches=1, wins=0, draws=1, losses=0)
    assert ratings[c].defence_record == Record(matches=1, wins=1, draws=0, losses=0)

    async with platform.db.session() as session:
        markers = {m.match_id: m for m in await session.scalars(select(RatedMatch))}
    assert set(markers) == {first, second, third}
    assert markers[third].result == "defender"
    after_first, _ = rate(Rating(), Rating(), Winner.ATTACKER)
    assert markers[first].attack_mu_before == pytest.approx(25.0)
    assert markers[first].attack_mu_after == pytest.approx(after_first.mu)
    assert markers[third].attack_mu_before == pytest.approx(after_first.mu)
    assert markers[third].attack_sigma_before == pytest.approx(after_first.sigma)
    assert markers[third].attack_mu_after == pytest.approx(a_att.mu)
    assert markers[third].defence_mu_after == pytest.approx(c_def.mu)


async def test_rerunning_changes_nothing(platform: Platform) -> None:
    a, b, _ = await three_fighters(platform)
    for outcome in ("attacker", "defender", "draw", "attacker"):
        await add_match(platform, a, b, outcome)
    assert await rate_pending(platform) == 4
    before = await snapshot(platform)
    assert await rate_pending(platform) == 0
    assert await rate_pending(platform) == 0
    assert await snapshot(platform) == before


async def test_a_match_scored_later_is_rated_on_its_own(platform: Platform) -> None:
    a, b, _ = await three_fighters(platform)
    await add_match(platform, a, b, "attacker")
    await rate_pending(platform)
    earlier = await live_ratings(platform, [a, b])
    await add_match(platform, b, a, "attacker")
    assert await rate_pending(platform) == 1
    later = await live_ratings(platform, [a, b])
    assert later[a].attack == earlier[a].attack  # untouched by the new match
    assert later[b].defence == earlier[b].defence
    assert later[b].attack_record == Record(matches=1, wins=1)
    assert later[a].defence_record == Record(matches=1, losses=1)


async def test_batches_cover_everything(platform: Platform) -> None:
    a, b, c = await three_fighters(platform)
    for i in range(7):
        await add_match(platform, (a, b, c)[i % 3], (b, c, a)[i % 3], "draw")
    assert await rate_pending(platform, batch_size=3) == 7
    assert await rate_pending(platform, batch_size=3) == 0


async def test_an_unknown_outcome_is_marked_but_never_applied(platform: Platform) -> None:
    a, b, _ = await three_fighters(platform)
    odd = await add_match(platform, a, b, "mystery")
    assert await rate_pending(platform) == 1
    assert await snapshot(platform) == []
    async with platform.db.session() as session:
        marker = await session.get(RatedMatch, odd)
    assert marker is not None
    assert marker.result is None
    assert await rate_pending(platform) == 0


async def test_concurrent_workers_apply_each_match_once(platform: Platform) -> None:
    a, b, c = await three_fighters(platform)
    for i in range(30):
        await add_match(platform, (a, b, c)[i % 3], (b, c, a)[i % 3], ("attacker", "draw")[i % 2])
    counts = await asyncio.gather(*(rate_pending(platform, batch_size=5) for _ in range(4)))
    await rate_pending(platform)  # whatever a raced worker left
    assert sum(counts) <= 30
    async with platform.db.session() as session:
        assert len((await session.scalars(select(RatedMatch))).all()) == 30
    ratings = await live_ratings(platform)
    assert sum(r.attack_record.matches for r in ratings.values()) == 30
    assert sum(r.defence_record.matches for r in ratings.values()) == 30


async def test_live_ratings_of_unknown_fighters_are_empty(platform: Platform) -> None:
    assert await live_ratings(platform, ["nobody"]) == {}
    assert await live_ratings(platform, []) == {}


async def rated_through(platform: Platform) -> float | None:
    async with platform.db.session() as session:
        mark = await session.get(Meta, RATED_THROUGH)
    return None if mark is None else float(mark.value)


async def test_a_match_finished_behind_the_mark_is_still_rated(platform: Platform) -> None:
    a, b, _ = await three_fighters(platform)
    await add_match(platform, a, b, "attacker", finished_at=50_000.0)
    assert await rate_pending(platform) == 1
    assert await rated_through(platform) == 50_000.0
    # Committed after the pass that rated a newer one (a slow commit, another host's clock).
    late = await add_match(platform, b, a, "draw", finished_at=50_000.0 - LOOKBACK_S / 2)
    assert await rate_pending(platform) == 1
    assert await rated_through(platform) == 50_000.0  # the mark never moves back
    async with platform.db.session() as session:
        assert await session.get(RatedMatch, late) is not None


async def test_a_pass_reads_only_the_matches_finished_since_the_mark(platform: Platform) -> None:
    a, b, _ = await three_fighters(platform)
    await add_matches(platform, [(a, b, "draw")] * 300)
    async with platform.db.session() as session, session.begin():  # ten days, one in 48 min
        await session.execute(
            text("UPDATE matches SET finished_at = finished_at - 864000 + seed * 2880")
        )
    assert await rate_pending(platform) == 300  # the first pass, with no mark, reads them all
    await add_match(platform, b, a, "attacker")
    async with platform.db.engine.begin() as connection:
        await connection.execute(text("ANALYZE"))
    with selects(platform, ("matches",)) as seen:
        assert await rate_pending(platform) == 1
    reads = [(s, p) for s, p in seen if "FROM matches" in s]
    assert reads
    for statement, parameters in reads:
        explained = await plan(platform, statement, parameters)
        # A range of ix_matches_finished (SQLite's SEARCH, PostgreSQL's Index Cond), never a
        # walk of every scored match in finish order.
        searched = "(finished_at>?)" in explained or "Index Cond: (finished_at >=" in explained
        assert "ix_matches_finished" in explained, (statement, explained)
        assert searched, (statement, explained)
