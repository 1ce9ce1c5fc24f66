"""Published cage.v1 ratings: a Bradley-Terry fit over every scored match, bootstrap intervals.

Modelling decisions:

- **One strength per side.** Fighter ``i`` has an attack strength ``a[i]`` and
  a defence strength ``d[i]``; a global ``advantage`` ``h`` is the log-odds
  that the average attacker beats the average defender (attacking may simply
  be easier or harder than defending). When ``i`` attacks ``j``::

      P(attacker wins) = logistic(h + a[i] - d[j])

  A fighter's **overall** strength is ``(a[i] + d[i]) / 2``: its mean log-odds
  gain over the average fighter, across both seats. Leaderboards rank by it.
- **Draws are half a win each.** The attacker's score is 1, 0.5 or 0 and the
  likelihood is ``p ** score * (1 - p) ** (1 - score)`` per match. A cage
  draw (no breach, but the defender failed its user's task) really lies
  between the two, and this keeps one parameter per side (Davidson ties would
  add a draw propensity that the arena does not need to publish).
- **Identifiability: mean zero.** The likelihood only sees ``h + a[i] - d[j]``,
  so the fit is constrained to ``mean(a) == 0`` and ``mean(d) == 0`` over the
  fighters in the fit; every strength is relative to the average fighter.
- **Regularisation.** A weak Gaussian prior (ridge), sd 2 on every strength
  and sd 3 on the advantage, so that fighters with few matches or an all-win
  record stay finite; with tens of matches per fighter its pull is a few
  percent of one standard error.
- **Fit.** Newton's method on the penalised log-likelihood within the
  mean-zero subspace, each step solved by SciPy's preconditioned conjugate
  gradients over a sparse attacker-by-defender matrix, so a step costs
  O(pairs played), never O(fighters ** 3)
  (:mod:`palaestra.rules.ratings.solver`, which says why the Newton
  loop is not ``scipy.optimize``'s).
- **Intervals.** A nonparametric bootstrap: matches are resampled with
  replacement, aggregated into per-pair counts with ``np.bincount``, and each
  resample is refitted from the full fit's estimate (warm start). Intervals
  are the percentile intervals of the resampled, re-centred strengths.
- **Ranks.** A fighter's rank is one plus the number of fighters whose
  overall interval lies wholly above its own: a rank only counts fighters
  separated from it by non-overlapping intervals, so fighters that nobody
  clearly beats share rank 1, and if one interval lies wholly above another
  its fighter ranks strictly better. Two overlapping fighters can still
  differ in rank when a third is clearly above one and not the other. (Tiers
  of chained overlapping intervals would never separate overlapping fighters,
  but with hundreds of fighters every interval chains to the next and all
  would share one rank.)
- **Groups.** The summary of a group of fighters (an entrant type, a class) is
  the mean strength of its members, with the percentile interval of that mean
  over the same resamples; differences between groups likewise.

Pure: no I/O, no clock reads; randomness comes from the seed given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Final

import numpy as np

from palaestra.rules.ratings.solver import Floats, Indices, Pairs, State, centre, solve

__all__ = [
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
]

#: Stop when no parameter moves by more than this (log-odds).
FIT_TOLERANCE: Final = 1e-8
#: Resamples only feed percentiles, whose own noise is far larger than this.
RESAMPLE_TOLERANCE: Final = 1e-4


@dataclass(frozen=True, slots=True)
class Games:
    """Scored matches as arrays: attacker index, defender index, attacker's score (1, 0.5, 0)."""

    fighters: int
    attackers: Indices
    defenders: Indices
    scores: Floats

    def __post_init__(self) -> None:
        if not len(self.attackers) == len(self.defenders) == len(self.scores):
            raise ValueError("attackers, defenders and scores must have the same length")
        for side in (self.attackers, self.defenders):
            if len(side) and (side.min() < 0 or side.max() >= self.fighters):
                raise ValueError("fighter indices must lie in [0, fighters)")
        if len(self.scores) and (self.scores.min() < 0 or self.scores.max() > 1):
            raise ValueError("scores must lie in [0, 1]")

    def __len__(self) -> int:
        return len(self.scores)

    @classmethod
    def of(cls, records: Iterable[tuple[str, str, float]]) -> tuple[list[str], Games]:
        """Index ``(attacker_id, defender_id, score)`` records; fighter ids come back sorted."""
        rows = list(records)
        ids = sorted({a for a, _, _ in rows} | {d for _, d, _ in rows})
        index = {fighter: i for i, fighter in enumerate(ids)}
        games = cls(
            fighters=len(ids),
            attackers=np.fromiter((index[a] for a, _, _ in rows), np.intp, len(rows)),
            defenders=np.fromiter((index[d] for _, d, _ in rows), np.intp, len(rows)),
            scores=np.fromiter((s for _, _, s in rows), np.float64, len(rows)),
        )
        return ids, games


@dataclass(frozen=True, slots=True)
class Prior:
    """The weak Gaussian prior (ridge) that keeps sparse and all-win records finite."""

    strength_sd: float = 2.0
    advantage_sd: float = 3.0


@dataclass(frozen=True, slots=True)
class Strengths:
    """Fitted strengths in log-odds, each side with mean zero over the fighters."""

    advantage: float
    attack: Floats
    defence: Floats

    @property
    def overall(self) -> Floats:
        return (self.attack + self.defence) / 2.0


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its interval."""

    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """The full fit and its resampled refits (one row per resample)."""

    estimate: Strengths
    advantage: Floats
    attack: Floats
    defence: Floats
    confidence: float

    @property
    def resamples(self) -> int:
        return len(self.advantage)

    @property
    def overall(self) -> Floats:
        return (self.attack + self.defence) / 2.0

    def bounds(self, samples: Floats) -> tuple[Floats, Floats]:
        """Percentile interval of ``samples`` along the resample axis."""
        if len(samples) == 0:
            shape = samples.shape[1:]
            return np.full(shape, -np.inf), np.full(shape, np.inf)
        tail = (1.0 - self.confidence) / 2.0
        low, high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
        return np.asarray(low, np.float64), np.asarray(high, np.float64)

    def estimates(self, point: Floats, samples: Floats) -> list[Estimate]:
        low, high = self.bounds(samples)
        return [
            Estimate(float(v), float(lo), float(hi))
            for v, lo, hi in zip(point, low, high, strict=True)
        ]

    def advantage_estimate(self) -> Estimate:
        low, high = self.bounds(self.advantage[:, None])
        return Estimate(self.estimate.advantage, float(low[0]), float(high[0]))


@dataclass(frozen=True, slots=True)
class GroupEstimate:
    """The mean strengths of one group of fighters, with intervals."""

    group: str
    fighters: int
    overall: Estimate
    attack: Estimate
    defence: Estimate


@dataclass(frozen=True, slots=True)
class GroupDifference:
    """``first`` minus ``second``: differences of the group means, with intervals."""

    first: str
    second: str
    overall: Estimate
    attack: Estimate
    defence: Estimate


def _zeros(n: int) -> State:
    return State(0.0, np.zeros(n), np.zeros(n))


def _penalties(prior: Prior) -> tuple[float, float]:
    return 1.0 / prior.strength_sd**2, 1.0 / prior.advantage_sd**2


def _strengths(state: State) -> Strengths:
    # The subspace keeps both means at zero; re-centring only removes rounding.
    return Strengths(state.advantage, centre(state.attack), centre(state.defence))


def fit(games: Games, *, prior: Prior | None = None, tolerance: float = FIT_TOLERANCE) -> Strengths:
    """The penalised maximum-likelihood strengths of ``games``."""
    prior = prior or Prior()
    if len(games) == 0:
        return _strengths(_zeros(games.fighters))
    pairs = Pairs(games.fighters, games.attackers, games.defenders, games.scores)
    played, won = pairs.counts()
    start = _zeros(games.fighters)
    return _strengths(solve(pairs, played, won, _penalties(prior), start, tolerance))


def bootstrap(
    games: Games,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    prior: Prior | None = None,
) -> Bootstrap:
    """The fit and ``resamples`` refits on matches resampled with replacement."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    prior = prior or Prior()
    n, total = games.fighters, len(games)
    advantage = np.zeros(resamples)
    attack = np.zeros((resamples, n))
    defence = np.zeros((resamples, n))
    if total == 0:
        return Bootstrap(_strengths(_zeros(n)), advantage, attack, defence, confidence)
    pairs = Pairs(games.fighters, games.attackers, games.defenders, games.scores)
    played, won = pairs.counts()
    penalties = _penalties(prior)
    full = solve(pairs, played, won, penalties, _zeros(n), FIT_TOLERANCE)
    estimate = _strengths(full)
    warm = State(estimate.advantage, estimate.attack, estimate.defence)
    rng = np.random.default_rng(seed)
    for b in range(resamples):
        picks = rng.integers(0, total, size=total)
        state = solve(pairs, *pairs.counts(picks), penalties, warm, RESAMPLE_TOLERANCE)
        advantage[b] = state.advantage
        attack[b] = centre(state.attack)
        defence[b] = centre(state.defence)
    return Bootstrap(estimate, advantage, attack, defence, confidence)


def interval_ranks(low: Floats, high: Floats) -> Indices:
    """One plus the number of fighters whose interval lies wholly above this one's."""
    sorted_low = np.sort(low)
    above = len(low) - np.searchsorted(sorted_low, high, side="right")
    return (above + 1).astype(np.intp)


def _members(
    labels: Sequence[str | None], order: Sequence[str] | None
) -> list[tuple[str, Indices]]:
    found = sorted({label for label in labels if label is not None})
    names = [g for g in order if g in found] if order is not None else found
    names += [g for g in found if g not in names]
    column = np.asarray(labels, dtype=object)
    return [(g, np.flatnonzero(column == g).astype(np.intp)) for g in names]


def group_estimates(
    result: Bootstrap, labels: Sequence[str | None], order: Sequence[str] | None = None
) -> list[GroupEstimate]:
    """Mean strengths of each group, with intervals.

    ``labels[i]`` is fighter ``i``'s group, or ``None`` to leave it out.
    """
    if len(labels) != len(result.estimate.attack):
        raise ValueError("one label per fighter")
    out = []
    for group, members in _members(labels, order):
        out.append(
            GroupEstimate(
                group,
                len(members),
                *(
                    _mean_estimate(result, point, samples, members)
                    for point, samples in _sides(result)
                ),
            )
        )
    return out


def group_differences(
    result: Bootstrap, labels: Sequence[str | None], order: Sequence[str] | None = None
) -> list[GroupDifference]:
    """Every pair of groups, in ``order``: the first's mean strengths minus the second's."""
    groups = _members(labels, order)
    out = []
    for (first, in_first), (second, in_second) in combinations(groups, 2):
        out.append(
            GroupDifference(
                first,
                second,
                *(
                    _difference(result, point, samples, in_first, in_second)
                    for point, samples in _sides(result)
                ),
            )
        )
    return out


def _sides(result: Bootstrap) -> list[tuple[Floats, Floats]]:
    estimate = result.estimate
    return [
        (estimate.overall, result.overall),
        (estimate.attack, result.attack),
        (estimate.defence, result.defence),
    ]


def _mean_estimate(result: Bootstrap, point: Floats, samples: Floats, members: Indices) -> Estimate:
    low, high = result.bounds(samples[:, members].mean(axis=1)[:, None])
    return Estimate(float(point[members].mean()), float(low[0]), float(high[0]))


def _difference(
    result: Bootstrap, point: Floats, samples: Floats, first: Indices, second: Indices
) -> Estimate:
    spread = samples[:, first].mean(axis=1) - samples[:, second].mean(axis=1)
    low, high = result.bounds(spread[:, None])
    return Estimate(
        float(point[first].mean() - point[second].mean()), float(low[0]), float(high[0])
    )


def simulate(
    truth: Strengths,
    attackers: Indices,
    defenders: Indices,
    rng: np.random.Generator,
    *,
    draw_share: float = 0.3,
) -> Floats:
    """Attacker scores drawn from the model: each match's expected score is its win probability.

    A match is drawn with probability ``2 * draw_share * min(p, 1 - p)``, so
    that draws happen most between evenly matched fighters and the expected
    score stays exactly ``p``. For tests and benchmarks.
    """
    eta = truth.advantage + truth.attack[attackers] - truth.defence[defenders]
    p = 1.0 / (1.0 + np.exp(-eta))
    draw = 2.0 * draw_share * np.minimum(p, 1.0 - p)
    win = p - draw / 2.0
    u = rng.random(len(p))
    return np.where(u < win, 1.0, np.where(u < win + draw, 0.5, 0.0))
