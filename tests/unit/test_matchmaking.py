"""Pair selection: who is eligible, who may meet, and which pairs come first."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.rules.cage import matchmaking
from palaestra.rules.cage.matchmaking import (
    EligibleFighter,
    Pairing,
    eligible,
    pair_key,
    select_pairings,
)
from palaestra.rules.ratings import Rating

STATUSES = ["PENDING", "ACTIVE", "DEGRADED", "PROBATION", "SUSPENDED", "PAUSED"]
TYPES = ["harness", "model", "house", None]


def test_public_names() -> None:
    assert set(matchmaking.__all__) == {
        "ELIGIBLE_STATUS",
        "PLAYABLE_TYPES",
        "EligibleFighter",
        "Pairing",
        "eligible",
        "pair_key",
        "select_pairings",
    }


@pytest.mark.parametrize(
    ("status", "hold", "entrant_type", "endpoint"),
    list(itertools.product(STATUSES, [False, True], TYPES, [None, "https://agent.example/cage"])),
)
def test_eligibility(
    status: str, hold: bool, entrant_type: str | None, endpoint: str | None
) -> None:
    expected = (
        status == "ACTIVE"
        and not hold
        and (entrant_type in ("model", "house") or (entrant_type == "harness" and bool(endpoint)))
    )
    assert eligible(status, hold, entrant_type, endpoint) is expected


def fighter(
    name: str, owner: str | None = None, mu: float = 25.0, sigma: float = 8.0, busy: int = 0
) -> EligibleFighter:
    return EligibleFighter(
        name, owner or f"owner-{name}", Rating(mu, sigma), Rating(mu, sigma), busy
    )


def test_both_seat_orders() -> None:
    assert Pairing("a", "b", 1.0).matches == (("a", "b"), ("b", "a"))


def test_pair_key_is_order_free() -> None:
    assert pair_key("b", "a") == pair_key("a", "b") == ("a", "b")


def test_fewer_than_two_fighters_make_no_pairing() -> None:
    assert select_pairings([], max_per_fighter=2, limit=5) == []
    assert select_pairings([fighter("a")], max_per_fighter=2, limit=5) == []


def test_no_room_makes_no_pairing() -> None:
    assert select_pairings([fighter("a"), fighter("b")], max_per_fighter=2, limit=0) == []


def test_never_a_fighter_against_itself_nor_co_owned_fighters() -> None:
    entrants = [fighter("a", "o1"), fighter("b", "o1"), fighter("c", "o1")]
    assert select_pairings(entrants, max_per_fighter=2, limit=5) == []
    entrants.append(fighter("d", "o2"))
    (pairing,) = select_pairings(entrants, max_per_fighter=2, limit=5)
    assert "d" in (pairing.first, pairing.second)


def test_busy_fighters_wait_for_room_for_both_seat_orders() -> None:
    entrants = [fighter("a", busy=1), fighter("b"), fighter("c")]
    (pairing,) = select_pairings(entrants, max_per_fighter=2, limit=5)
    assert {pairing.first, pairing.second} == {"b", "c"}
    (pairing,) = select_pairings([fighter("a", busy=1), fighter("b")], max_per_fighter=3, limit=5)
    assert {pairing.first, pairing.second} == {"a", "b"}


def test_the_most_uncertain_pairs_come_first() -> None:
    entrants = [
        fighter("strong", mu=40.0, sigma=2.0),
        fighter("weak", mu=10.0, sigma=2.0),
        fighter("even-1", mu=25.0, sigma=2.0),
        fighter("even-2", mu=25.5, sigma=2.0),
    ]
    pairings = select_pairings(entrants, max_per_fighter=2, limit=1)
    assert [{p.first, p.second} for p in pairings] == [{"even-1", "even-2"}]


def test_uncertain_ratings_are_worth_more() -> None:
    entrants = [
        fighter("known-1", sigma=1.0),
        fighter("known-2", sigma=1.0),
        fighter("new-1", sigma=8.0),
        fighter("new-2", sigma=8.0),
    ]
    first = select_pairings(entrants, max_per_fighter=2, limit=2)
    assert {first[0].first, first[0].second} <= {"new-1", "new-2", "known-1", "known-2"}
    assert "new" in first[0].first
    assert "new" in first[0].second
    assert first[0].score > first[1].score


def test_pairs_already_played_give_way() -> None:
    entrants = [fighter(name) for name in "abcd"]
    fresh = select_pairings(entrants, max_per_fighter=2, limit=1)
    assert {fresh[0].first, fresh[0].second} == {"a", "b"}  # ties: the smaller ids
    later = select_pairings(entrants, max_per_fighter=2, limit=1, played={("a", "b"): 4})
    assert {later[0].first, later[0].second} != {"a", "b"}


def test_each_fighter_plays_once_per_round_and_the_limit_holds() -> None:
    entrants = [fighter(f"f{i}") for i in range(9)]
    pairings = select_pairings(entrants, max_per_fighter=4, limit=10)
    assert len(pairings) == 4
    seen = [name for p in pairings for name in (p.first, p.second)]
    assert len(seen) == len(set(seen))
    assert len(select_pairings(entrants, max_per_fighter=4, limit=2)) == 2


def test_selection_is_deterministic_whatever_the_input_order() -> None:
    entrants = [fighter(f"f{i}", mu=20 + i, sigma=3 + i % 3) for i in range(8)]
    forward = select_pairings(entrants, max_per_fighter=2, limit=4)
    backward = select_pairings(list(reversed(entrants)), max_per_fighter=2, limit=4)
    assert forward == backward


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["o1", "o2", "o3", "o4"]),
            st.floats(0, 50),
            st.floats(0.5, 9),
            st.integers(0, 3),
        ),
        max_size=10,
    ),
    st.integers(2, 4),
    st.integers(0, 6),
)
def test_selection_rules_always_hold(
    rows: list[tuple[str, float, float, int]], max_per_fighter: int, limit: int
) -> None:
    entrants = [
        EligibleFighter(f"f{i}", owner, Rating(mu, sigma), Rating(mu, sigma), busy)
        for i, (owner, mu, sigma, busy) in enumerate(rows)
    ]
    by_id = {e.fighter_id: e for e in entrants}
    pairings = select_pairings(entrants, max_per_fighter=max_per_fighter, limit=limit)
    assert len(pairings) <= limit
    seen: list[str] = []
    for pairing in pairings:
        first, second = by_id[pairing.first], by_id[pairing.second]
        assert first.fighter_id != second.fighter_id
        assert first.owner_id != second.owner_id
        for chosen in (first, second):
            assert chosen.busy + 2 <= max_per_fighter
        seen += [pairing.first, pairing.second]
    assert len(seen) == len(set(seen))
    assert [p.score for p in pairings] == sorted((p.score for p in pairings), reverse=True)
