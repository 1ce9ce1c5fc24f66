"""The published fit: recovery of known strengths, honest intervals, ties, ranks and groups."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.stats import kendalltau, spearmanr

from palaestra.rules.ratings import bradley_terry as bt
from palaestra.rules.ratings import solver
from palaestra.rules.ratings.bradley_terry import (
    Games,
    Prior,
    Strengths,
    bootstrap,
    fit,
    group_differences,
    group_estimates,
    interval_ranks,
    simulate,
)

Floats = NDArray[np.float64]
TYPES = ("harness", "model", "house")
#: The planted gap: harnesses are stronger than bare models, the house weaker.
TYPE_SHIFT = {"harness": 0.6, "model": 0.0, "house": -0.5}


def centred(values: Floats) -> Floats:
    return values - float(values.mean())


def arena(
    seed: int, fighters: int = 36, matches: int = 8000, draw_share: float = 0.3
) -> tuple[Strengths, list[str], Games]:
    """Known strengths with a gap between entrant types, and matches drawn from the model."""
    rng = np.random.default_rng(seed)
    labels = [TYPES[i % 3] for i in range(fighters)]
    shift = np.array([TYPE_SHIFT[label] for label in labels])
    attack = rng.normal(0.0, 0.7, fighters) + shift
    defence = rng.normal(0.0, 0.7, fighters) + shift
    truth = Strengths(0.4, centred(attack), centred(defence))
    attackers = rng.integers(0, fighters, matches)
    defenders = (attackers + rng.integers(1, fighters, matches)) % fighters  # never itself
    scores = simulate(truth, attackers, defenders, rng, draw_share=draw_share)
    return truth, labels, Games(fighters, attackers, defenders, scores)


Planted = tuple[Strengths, list[str], bt.Bootstrap]


@pytest.fixture(scope="module")
def planted() -> Planted:
    truth, labels, games = arena(seed=11)
    return truth, labels, bootstrap(games, resamples=300, seed=5)


def test_public_names() -> None:
    assert set(bt.__all__) == {
        "Bootstrap",
        "Estimate",
        "Games",
        "GroupDifference",
        "GroupEstimate",
        "Prior",
        "Strengths",
        "bootstrap",
        "fit",
        "group_differences",
        "group_estimates",
        "interval_ranks",
        "simulate",
    }


# -- the fit ---------------------------------------------------------------------------------


def test_the_fitted_order_recovers_the_true_order(planted: Planted) -> None:
    truth, _, result = planted
    estimate = result.estimate
    assert spearmanr(estimate.overall, truth.overall).statistic > 0.9
    assert kendalltau(estimate.overall, truth.overall).statistic > 0.75
    assert spearmanr(estimate.attack, truth.attack).statistic > 0.9
    assert spearmanr(estimate.defence, truth.defence).statistic > 0.9
    assert estimate.advantage == pytest.approx(truth.advantage, abs=0.1)


def test_the_intervals_cover_the_true_values_at_about_their_nominal_rate(planted: Planted) -> None:
    truth, _, result = planted
    for true, samples in [
        (truth.overall, result.overall),
        (truth.attack, result.attack),
        (truth.defence, result.defence),
    ]:
        low, high = result.bounds(samples)
        coverage = np.mean((low <= true) & (true <= high))
        assert 0.8 <= coverage <= 1.0, coverage
    low, high = result.bounds(result.advantage[:, None])
    assert low[0] <= truth.advantage <= high[0]


def test_coverage_holds_across_arenas() -> None:
    covered = total = 0
    for seed in range(4):
        truth, _, games = arena(seed=100 + seed, fighters=24, matches=4000)
        result = bootstrap(games, resamples=200, seed=seed)
        low, high = result.bounds(result.overall)
        covered += int(np.sum((low <= truth.overall) & (truth.overall <= high)))
        total += len(truth.overall)
    assert 0.85 <= covered / total <= 1.0


def test_strengths_have_mean_zero_on_each_side(planted: Planted) -> None:
    _, _, result = planted
    assert abs(result.estimate.attack.mean()) < 1e-9
    assert abs(result.estimate.defence.mean()) < 1e-9
    assert np.abs(result.attack.mean(axis=1)).max() < 1e-9
    assert np.abs(result.defence.mean(axis=1)).max() < 1e-9


def test_no_games_fit_to_zero_with_unbounded_intervals() -> None:
    games = Games(3, np.array([], np.intp), np.array([], np.intp), np.array([]))
    assert fit(games).attack.tolist() == [0.0, 0.0, 0.0]
    result = bootstrap(games, resamples=0)
    low, high = result.bounds(result.overall)
    assert np.isneginf(low).all()
    assert np.isposinf(high).all()


def test_an_all_win_record_stays_finite() -> None:
    # Fighter 0 beats everyone as attacker and as defender, five times each.
    attackers, defenders, scores = [], [], []
    for other in (1, 2, 3):
        for _ in range(5):
            attackers += [0, other]
            defenders += [other, 0]
            scores += [1.0, 0.0]
    games = Games(4, np.array(attackers), np.array(defenders), np.array(scores))
    estimate = fit(games)
    assert np.isfinite(estimate.overall).all()
    assert estimate.overall[0] == estimate.overall.max()
    assert 1.0 < estimate.overall[0] < 6.0
    result = bootstrap(games, resamples=50, seed=1)
    assert np.isfinite(result.overall).all()


def test_a_weaker_prior_lets_an_all_win_record_go_further() -> None:
    games = Games(2, np.array([0, 1] * 4), np.array([1, 0] * 4), np.array([1.0, 0.0] * 4))
    strong = fit(games, prior=Prior(strength_sd=0.5)).overall[0]
    weak = fit(games, prior=Prior(strength_sd=4.0)).overall[0]
    assert 0 < strong < weak


def test_a_draw_is_half_a_win_each() -> None:
    # Two draws weigh exactly as much as one win and one loss.
    draws = Games(2, np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), np.array([0.5] * 4))
    split = Games(2, np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0.0]))
    a, b = fit(draws), fit(split)
    assert a.attack == pytest.approx(b.attack, abs=1e-7)
    assert a.defence == pytest.approx(b.defence, abs=1e-7)
    assert a.advantage == pytest.approx(b.advantage, abs=1e-7)
    # ... and between two fighters who only ever draw, neither is stronger.
    assert a.overall[0] == pytest.approx(a.overall[1], abs=1e-9)


def test_draws_between_unequal_fighters_pull_them_together() -> None:
    wins = Games(2, np.array([0, 1] * 10), np.array([1, 0] * 10), np.array([1.0, 0.0] * 10))
    mixed = Games(
        2, np.array([0, 1] * 10), np.array([1, 0] * 10), np.array([1.0, 0.0] * 5 + [0.5] * 10)
    )
    assert 0 < fit(mixed).overall[0] < fit(wins).overall[0]


def test_the_fit_is_the_same_whatever_the_order_of_the_matches() -> None:
    _, _, games = arena(seed=3, fighters=12, matches=600)
    order = np.random.default_rng(0).permutation(len(games))
    shuffled = Games(
        games.fighters, games.attackers[order], games.defenders[order], games.scores[order]
    )
    assert fit(shuffled).overall == pytest.approx(fit(games).overall, abs=1e-7)


def test_relabelling_fighters_permutes_the_fit() -> None:
    _, _, games = arena(seed=4, fighters=10, matches=500)
    perm = np.random.default_rng(1).permutation(10)  # old index i becomes perm[i]
    relabelled = Games(10, perm[games.attackers], perm[games.defenders], games.scores)
    assert fit(relabelled).attack[perm] == pytest.approx(fit(games).attack, abs=1e-7)


def test_bootstrap_is_reproducible_from_its_seed() -> None:
    _, _, games = arena(seed=6, fighters=8, matches=300)
    first = bootstrap(games, resamples=20, seed=9)
    again = bootstrap(games, resamples=20, seed=9)
    other = bootstrap(games, resamples=20, seed=10)
    assert np.array_equal(first.attack, again.attack)
    assert not np.array_equal(first.attack, other.attack)


def test_games_are_validated() -> None:
    with pytest.raises(ValueError, match="same length"):
        Games(2, np.array([0]), np.array([1, 0]), np.array([1.0]))
    with pytest.raises(ValueError, match="indices"):
        Games(2, np.array([0]), np.array([2]), np.array([1.0]))
    with pytest.raises(ValueError, match="scores"):
        Games(2, np.array([0]), np.array([1]), np.array([1.5]))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap(Games(2, np.array([0]), np.array([1]), np.array([1.0])), confidence=1.0)


def test_games_are_indexed_by_sorted_fighter_id() -> None:
    ids, games = Games.of([("b", "a", 1.0), ("c", "b", 0.5), ("a", "c", 0.0)])
    assert ids == ["a", "b", "c"]
    assert games.attackers.tolist() == [1, 2, 0]
    assert games.defenders.tolist() == [0, 1, 2]
    assert games.scores.tolist() == [1.0, 0.5, 0.0]


# -- ranks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("intervals", "ranks"),
    [
        ([], []),
        ([(0, 1)], [1]),
        ([(0, 1), (2, 3)], [2, 1]),  # disjoint: separated
        ([(0, 2), (1, 3)], [1, 1]),  # overlapping: shared
        ([(0, 1), (1, 2)], [1, 1]),  # touching counts as overlapping
        ([(0, 2), (1, 3), (2.5, 4)], [2, 1, 1]),  # a chain: only the clear gap counts
        ([(5, 6), (0, 1), (2, 3), (2.5, 3.5)], [1, 4, 2, 2]),
    ],
)
def test_interval_ranks(intervals: list[tuple[float, float]], ranks: list[int]) -> None:
    low = np.array([lo for lo, _ in intervals], dtype=float)
    high = np.array([hi for _, hi in intervals], dtype=float)
    assert interval_ranks(low, high).tolist() == ranks


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-5, 5), st.floats(0, 3)).map(lambda t: (t[0], t[0] + t[1])),
        max_size=12,
    )
)
def test_ranks_only_count_fighters_clearly_above(intervals: list[tuple[float, float]]) -> None:
    low = np.array([lo for lo, _ in intervals], dtype=float)
    high = np.array([hi for _, hi in intervals], dtype=float)
    ranks = interval_ranks(low, high)
    for i in range(len(intervals)):
        above = [j for j in range(len(intervals)) if low[j] > high[i]]
        assert ranks[i] == 1 + len(above)
        for j in above:  # a clearly better fighter always ranks strictly better
            assert ranks[j] < ranks[i]
        for j in range(len(intervals)):
            if low[j] <= high[i] and low[i] <= high[j] and ranks[j] < ranks[i]:
                # overlapping yet ranked apart: only because a third is clearly above i
                assert any(low[k] > high[i] and low[k] <= high[j] for k in range(len(low)))


# -- groups: the question of the seed -------------------------------------------------------


def test_the_type_summary_finds_the_planted_gap(planted: Planted) -> None:
    truth, labels, result = planted
    summary = {g.group: g for g in group_estimates(result, labels, TYPES)}
    assert [g.group for g in group_estimates(result, labels, TYPES)] == list(TYPES)
    assert {g.fighters for g in summary.values()} == {12}
    column = np.array(labels)
    for group in TYPES:
        true_mean = truth.overall[column == group].mean()
        estimate = summary[group].overall
        assert estimate.low <= true_mean <= estimate.high
    assert summary["harness"].overall.value > summary["model"].overall.value
    assert summary["model"].overall.value > summary["house"].overall.value


def test_type_differences_exclude_zero_where_a_gap_was_planted(planted: Planted) -> None:
    truth, labels, result = planted
    column = np.array(labels)
    differences = {(d.first, d.second): d for d in group_differences(result, labels, TYPES)}
    assert list(differences) == [("harness", "model"), ("harness", "house"), ("model", "house")]
    for (first, second), difference in differences.items():
        true = truth.overall[column == first].mean() - truth.overall[column == second].mean()
        assert difference.overall.low <= true <= difference.overall.high
        assert difference.overall.low > 0  # every planted gap is there
        assert difference.defence.value > 0
        assert difference.attack.value > 0


def test_groups_follow_the_given_order_then_the_rest() -> None:
    _, _, games = arena(seed=8, fighters=6, matches=200)
    result = bootstrap(games, resamples=10)
    labels = ["b", "a", "c", "a", "b", "c"]
    assert [g.group for g in group_estimates(result, labels, ["c"])] == ["c", "a", "b"]
    with pytest.raises(ValueError, match="one label per fighter"):
        group_estimates(result, ["a"])


def test_fighters_labelled_none_are_left_out_of_every_group() -> None:
    _, _, games = arena(seed=8, fighters=6, matches=200)
    result = bootstrap(games, resamples=10)
    labels = ["a", None, "a", "b", None, "b"]
    groups = group_estimates(result, labels)
    assert [(g.group, g.fighters) for g in groups] == [("a", 2), ("b", 2)]
    expected = result.estimate.overall[[0, 2]].mean()
    assert groups[0].overall.value == pytest.approx(expected)
    (difference,) = group_differences(result, labels)
    assert difference.overall.value == pytest.approx(
        expected - result.estimate.overall[[3, 5]].mean()
    )


def test_estimates_per_fighter() -> None:
    _, _, games = arena(seed=9, fighters=5, matches=300)
    result = bootstrap(games, resamples=40)
    rows = result.estimates(result.estimate.overall, result.overall)
    assert len(rows) == 5
    assert all(r.low <= r.value <= r.high for r in rows)
    assert result.advantage_estimate().low <= result.advantage_estimate().high
    assert rows[0].as_dict() == {"value": rows[0].value, "low": rows[0].low, "high": rows[0].high}


def test_simulated_scores_average_the_win_probability() -> None:
    rng = np.random.default_rng(2)
    truth = Strengths(0.0, np.array([1.0, -1.0]), np.array([0.0, 0.0]))
    attackers = np.zeros(200_000, dtype=np.intp)
    defenders = np.ones(200_000, dtype=np.intp)
    scores = simulate(truth, attackers, defenders, rng, draw_share=0.4)
    assert scores.mean() == pytest.approx(1 / (1 + np.exp(-1.0)), abs=0.005)
    assert set(np.unique(scores)) == {0.0, 0.5, 1.0}


def test_the_solver_exports() -> None:
    from palaestra.rules.ratings import solver as bradley_terry_solver

    assert set(bradley_terry_solver.__all__) == {
        "Floats",
        "Indices",
        "Pairs",
        "State",
        "centre",
        "solve",
    }


@pytest.mark.parametrize("prior", [Prior(), Prior(strength_sd=0.5, advantage_sd=1.0)])
def test_the_fit_is_a_stationary_point_of_the_penalised_likelihood(prior: Prior) -> None:
    # The gradient, computed here from the model's definition, vanishes within the
    # mean-zero subspace (the constraint absorbs a common shift of each side).
    _, _, games = arena(seed=21, fighters=15, matches=2000)
    estimate = fit(games, prior=prior)
    eta = estimate.advantage + estimate.attack[games.attackers] - estimate.defence[games.defenders]
    residual = 1.0 / (1.0 + np.exp(-eta)) - games.scores
    lam, lam_h = 1.0 / prior.strength_sd**2, 1.0 / prior.advantage_sd**2
    g_h = residual.sum() + lam_h * estimate.advantage
    g_a = np.bincount(games.attackers, residual, minlength=15) + lam * estimate.attack
    g_d = -np.bincount(games.defenders, residual, minlength=15) + lam * estimate.defence
    assert abs(g_h) < 1e-6
    assert np.abs(g_a - g_a.mean()).max() < 1e-6
    assert np.abs(g_d - g_d.mean()).max() < 1e-6


@pytest.mark.parametrize("fighters", [2, 5, 12, 40])
def test_the_newton_matrix_solved_directly_is_the_operator_conjugate_gradients_use(
    fighters: int,
) -> None:
    """A small fit solves each Newton system with the matrix built whole: it is the
    operator the conjugate gradients of a large fit apply, column for column."""
    rng = np.random.default_rng(fighters)
    games = 6 * fighters
    pairs = solver.Pairs(
        fighters,
        rng.integers(0, fighters, games),
        rng.integers(0, fighters, games),
        rng.random(games),
    )
    weights = rng.random(len(pairs)) + 0.1
    w_a, w_d = pairs.sums(weights)
    curvature = solver._Curvature(pairs, w_a, w_d, float(weights.sum()), 0.7, 0.3)
    matrix = curvature.dense()
    for column in np.eye(2 * fighters + 1):
        assert matrix @ column == pytest.approx(curvature(column), abs=1e-12)


def test_a_small_fit_solved_directly_is_the_fit_conjugate_gradients_find(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, games = arena(seed=8, fighters=20, matches=900)
    direct = fit(games)
    monkeypatch.setattr(solver, "_DENSE_UP_TO", 0)
    iterative = fit(games)
    assert direct.attack == pytest.approx(iterative.attack, abs=1e-6)
    assert direct.defence == pytest.approx(iterative.defence, abs=1e-6)
    assert direct.advantage == pytest.approx(iterative.advantage, abs=1e-6)
