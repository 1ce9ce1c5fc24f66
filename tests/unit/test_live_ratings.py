"""Live OpenSkill ratings: which matches count, and what one match does to two ratings."""

from __future__ import annotations

import itertools

import pytest
from openskill.models import BradleyTerryFull

from palaestra.rules.cage.outcome import Winner
from palaestra.rules.ratings import MU, SIGMA, Rating, rate, result_of
from palaestra.rules.ratings import live as ratings
from palaestra.rules.ratings.live import live_score

STATUSES = ["PENDING", "RUNNING", "SCORED", "VOIDED"]
OUTCOMES = [None, "attacker", "defender", "draw", "forfeit", ""]


def test_public_names() -> None:
    assert set(ratings.__all__) == {
        "BETA",
        "MU",
        "SIGMA",
        "FighterRatings",
        "Rating",
        "Record",
        "Skill",
        "live_score",
        "rate",
        "result_of",
    }


@pytest.mark.parametrize(("status", "outcome"), list(itertools.product(STATUSES, OUTCOMES)))
def test_only_scored_matches_with_a_known_outcome_are_rated(
    status: str, outcome: str | None
) -> None:
    expected = None
    if status == "SCORED" and outcome in ("attacker", "defender", "draw"):
        expected = Winner(outcome)
    assert result_of(status, outcome) == expected


def test_a_forfeit_is_a_loss_for_the_side_that_forfeited() -> None:
    # The referee records a forfeit as a win of the other side (decided_by "forfeit").
    attacker_forfeited = result_of("SCORED", "defender")
    assert attacker_forfeited is Winner.DEFENDER
    attack, defence = rate(Rating(), Rating(), attacker_forfeited)
    assert attack.mu < MU < defence.mu


def test_scores() -> None:
    assert [r.score for r in Winner] == [1.0, 0.0, 0.5]


def test_attacker_win_moves_both_ratings_apart_and_shrinks_uncertainty() -> None:
    attack, defence = rate(Rating(), Rating(), Winner.ATTACKER)
    assert attack.mu > MU > defence.mu
    assert attack.mu - MU == pytest.approx(MU - defence.mu)
    assert attack.sigma < SIGMA
    assert defence.sigma < SIGMA


def test_defender_win_is_the_mirror_image() -> None:
    won = rate(Rating(), Rating(), Winner.ATTACKER)
    lost = rate(Rating(), Rating(), Winner.DEFENDER)
    assert lost[0].mu == pytest.approx(won[1].mu)
    assert lost[1].mu == pytest.approx(won[0].mu)


def test_a_draw_between_equals_is_a_tie() -> None:
    attack, defence = rate(Rating(), Rating(), Winner.DRAW)
    assert attack.mu == pytest.approx(MU)
    assert defence.mu == pytest.approx(MU)
    assert attack.sigma < SIGMA


def test_a_draw_against_a_stronger_defence_raises_the_attack() -> None:
    attack, defence = rate(Rating(20.0, 3.0), Rating(30.0, 3.0), Winner.DRAW)
    assert attack.mu > 20.0
    assert defence.mu < 30.0


@pytest.mark.parametrize("result", list(Winner))
def test_rate_is_openskill_bradley_terry_full(result: Winner) -> None:
    model = BradleyTerryFull()
    ranks = {Winner.ATTACKER: [0.0, 1.0], Winner.DEFENDER: [1.0, 0.0], Winner.DRAW: [0.0, 0.0]}[
        result
    ]
    (a,), (d,) = model.rate(
        [[model.rating(mu=27.0, sigma=4.0)], [model.rating(mu=24.0, sigma=6.0)]], ranks=ranks
    )
    attack, defence = rate(Rating(27.0, 4.0), Rating(24.0, 6.0), result)
    assert (attack.mu, attack.sigma) == pytest.approx((a.mu, a.sigma))
    assert (defence.mu, defence.sigma) == pytest.approx((d.mu, d.sigma))


def test_rate_is_deterministic() -> None:
    assert rate(Rating(26.0, 5.0), Rating(23.0, 2.0), Winner.ATTACKER) == rate(
        Rating(26.0, 5.0), Rating(23.0, 2.0), Winner.ATTACKER
    )


def test_conservative_estimate_and_live_score() -> None:
    assert Rating(30.0, 2.0).conservative == pytest.approx(24.0)
    assert Rating().conservative == pytest.approx(0.0)
    assert live_score(Rating(30.0, 2.0), Rating(20.0, 1.0)) == pytest.approx((24.0 + 17.0) / 2)


def test_a_sure_but_modest_fighter_outranks_a_lucky_newcomer() -> None:
    newcomer = Rating()
    for _ in range(2):
        newcomer, _ = rate(newcomer, Rating(), Winner.ATTACKER)
    veteran = Rating(27.0, 1.5)
    assert newcomer.mu > veteran.mu
    assert newcomer.conservative < veteran.conservative
