"""Selection: who is eligible for a slot, and in which order agents are offered one."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from palaestra.rules.runs.selection import (
    EXPLORATION_BAND,
    Contender,
    HashDraw,
    Roster,
    eligible,
    rank,
    select,
)
from palaestra.rules.status import Status

NOW = 1_000.0


def agent(
    name: str, status: Status = Status.ACTIVE, reputation: float = 0.0, **kw: object
) -> Contender:
    return Contender(
        agent_id=name,
        role=str(kw.pop("role", "SCOUT")),
        status=status,
        reputation=reputation,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("status", "allowed"),
    [
        (Status.PENDING, False),
        (Status.ACTIVE, True),
        (Status.DEGRADED, True),
        (Status.PROBATION, True),
        (Status.SUSPENDED, False),
        (Status.PAUSED, False),
    ],
)
def test_only_dispatchable_statuses_are_eligible(status: Status, allowed: bool) -> None:
    assert bool(eligible([agent("a", status)], "SCOUT", NOW)) is allowed


def test_a_hold_overrides_every_status() -> None:
    assert eligible([agent("a", hold=True)], "SCOUT", NOW) == []


def test_the_role_must_match() -> None:
    assert eligible([agent("a", role="ANALYST")], "SCOUT", NOW) == []
    assert eligible([agent("a", role="ANALYST")], "ANALYST", NOW) != []


@pytest.mark.parametrize(
    ("cooldown_until", "allowed"),
    [(None, True), (NOW - 1, True), (NOW, True), (NOW + 0.001, False), (NOW + 60, False)],
)
def test_an_agent_cooling_down_is_skipped_until_the_cooldown_ends(
    cooldown_until: float | None, allowed: bool
) -> None:
    assert bool(eligible([agent("a", cooldown_until=cooldown_until)], "SCOUT", NOW)) is allowed


def test_agents_failed_in_this_run_and_agents_holding_a_sibling_slot_are_skipped() -> None:
    pool = [agent("a"), agent("b"), agent("c")]
    chosen = eligible(pool, "SCOUT", NOW, failed_in_run={"a"}, taken={"b"})
    assert [c.agent_id for c in chosen] == ["c"]


def test_status_tier_comes_before_reputation() -> None:
    pool = [
        agent("probation", Status.PROBATION, reputation=1.0),
        agent("degraded", Status.DEGRADED, reputation=0.9),
        agent("active", Status.ACTIVE, reputation=-0.9),
    ]
    ranked = rank(pool, random.Random(1))
    assert [c.agent_id for c in ranked] == ["active", "degraded", "probation"]


def test_reputation_orders_a_tier_when_reputations_are_far_apart() -> None:
    pool = [agent("low", reputation=-0.5), agent("high", reputation=0.5), agent("mid")]
    for seed in range(200):
        ranked = rank(pool, random.Random(seed))
        assert [c.agent_id for c in ranked] == ["high", "mid", "low"]


def test_close_reputations_are_explored_and_the_draw_is_seeded() -> None:
    newcomer = agent("newcomer", reputation=0.0)
    veteran = agent("veteran", reputation=EXPLORATION_BAND * 0.9)
    firsts = Counter(
        rank([veteran, newcomer], random.Random(seed))[0].agent_id for seed in range(400)
    )
    assert firsts["newcomer"] > 150
    assert firsts["veteran"] > 150
    again = [rank([veteran, newcomer], random.Random(seed))[0].agent_id for seed in range(50)]
    assert again == [
        rank([veteran, newcomer], random.Random(seed))[0].agent_id for seed in range(50)
    ]  # the same seed, the same draw


def test_select_returns_the_best_eligible_agent_or_none() -> None:
    pool = [agent("a", Status.DEGRADED), agent("b", cooldown_until=NOW + 5)]
    assert select(pool, "SCOUT", NOW, random.Random(0)) == pool[0]
    assert select(pool, "SCOUT", NOW, random.Random(0), failed_in_run={"a"}) is None
    assert select([], "SCOUT", NOW, random.Random(0)) is None


def test_select_is_the_head_of_the_ranking() -> None:
    pool = [
        agent("far-behind", reputation=0.5 - EXPLORATION_BAND),
        agent("close", reputation=0.5 - EXPLORATION_BAND / 2),
        agent("best", reputation=0.5),
        agent("degraded-star", Status.DEGRADED, reputation=1.0),
        agent("late", cooldown_until=NOW + 1, reputation=1.0),
        agent("x", role="ANALYST", reputation=1.0),
    ]
    winners = Counter(select(pool, "SCOUT", NOW, random.Random(seed)) for seed in range(400))
    names = {c.agent_id: n for c, n in winners.items() if c is not None}
    assert set(names) == {"close", "best"}
    for seed in range(100):
        head = rank(eligible(pool, "SCOUT", NOW), random.Random(seed))[0]
        assert select(pool, "SCOUT", NOW, random.Random(seed)) == head
    ranked = rank(eligible(pool, "SCOUT", NOW), random.Random(1))
    assert [a.agent_id for a in ranked][2:] == ["far-behind", "degraded-star"]


def test_a_roster_prepared_once_picks_as_select_does_slot_after_slot() -> None:
    statuses = [Status.ACTIVE, Status.DEGRADED, Status.PROBATION, Status.SUSPENDED]
    for seed in range(50):
        draw = random.Random(seed)
        pool = [
            agent(
                f"a{n}",
                draw.choice(statuses),
                round(draw.uniform(-1, 1), 2),
                cooldown_until=NOW + 1 if draw.random() < 0.1 else None,
            )
            for n in range(12)
        ]
        roster = Roster.of(pool, "SCOUT", NOW)
        failed = {f"a{n}" for n in range(12) if draw.random() < 0.2}
        taken: set[str] = set()
        for slot in range(6):
            expected = select(
                pool, "SCOUT", NOW, random.Random(slot), failed_in_run=failed, taken=taken
            )
            got = roster.pick(random.Random(slot), failed_in_run=failed, taken=taken)
            assert got == expected
            if got is None:
                break
            taken.add(got.agent_id)


def test_the_best_remaining_reputation_sets_the_band() -> None:
    pool = [agent("star", reputation=0.9), agent("a", reputation=0.3), agent("b", reputation=0.2)]
    roster = Roster.of(pool, "SCOUT", NOW)
    picks = {roster.pick(random.Random(s), taken={"star"}) for s in range(100)}
    assert {c.agent_id for c in picks if c} == {"a", "b"}  # within 0.15 of 0.3, the best left


def test_a_hash_draw_is_reproducible_from_its_seed_and_spreads_evenly() -> None:
    first = HashDraw("run:SCOUT:None:3:0")
    again = HashDraw("run:SCOUT:None:3:0")
    draws = [first.randrange(5) for _ in range(5000)]
    assert draws == [again.randrange(5) for _ in range(5000)]
    assert [HashDraw("other").randrange(5) for _ in range(20)] != draws[:20]
    counts = Counter(draws)
    assert set(counts) == {0, 1, 2, 3, 4}
    assert all(850 < n < 1150 for n in counts.values()), counts
    with pytest.raises(ValueError, match="empty range"):
        first.randrange(0)


def test_a_pick_stays_uniform_over_the_band_when_most_of_it_is_excluded() -> None:
    pool = [agent(f"a{n}", reputation=0.5 - n / 1000) for n in range(40)]
    pool.append(agent("behind", reputation=0.5 - 2 * EXPLORATION_BAND))
    roster = Roster.prepared(pool)
    taken = {f"a{n}" for n in range(40) if n % 10}  # 36 of the 40 close agents excluded
    picks = Counter(
        roster.pick(HashDraw(f"slot-{n}"), taken=taken).agent_id  # type: ignore[union-attr]
        for n in range(4000)
    )
    assert set(picks) == {"a0", "a10", "a20", "a30"}
    assert all(850 < n < 1150 for n in picks.values()), picks
    everyone_close = {f"a{n}" for n in range(40)}
    assert roster.pick(HashDraw("x"), taken=everyone_close).agent_id == "behind"  # type: ignore[union-attr]
