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
  mean-zero subspace; each Newton system is solved by preconditioned
  conjugate gradients with Hessian-vector products through a sparse
  attacker-by-defender matrix, so a step costs O(pairs played), never
  O(fighters ** 3). Steps are halved when they would not decrease the
  objective, so the fit converges from any start.
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
import scipy.sparse as sp
from numpy.typing import NDArray

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

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
_Vector = tuple[float, Floats, Floats]  # (advantage, attack, defence)

#: Stop when no parameter moves by more than this (log-odds).
FIT_TOLERANCE: Final = 1e-8
#: Resamples only feed percentiles, whose own noise is far larger than this.
RESAMPLE_TOLERANCE: Final = 1e-4
_MAX_NEWTON: Final = 200
_CG_RELATIVE: Final = 1e-4


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


class _Pairs:
    """The distinct (attacker, defender) pairs of a set of games, and a sparse matrix over them."""

    def __init__(self, games: Games) -> None:
        n = games.fighters
        codes = games.attackers.astype(np.int64) * n + games.defenders
        pairs, inverse = np.unique(codes, return_inverse=True)
        self.fighters = n
        self.inverse: Indices = inverse.astype(np.intp).ravel()
        self.rows: Indices = (pairs // n).astype(np.intp)
        self.cols: Indices = (pairs % n).astype(np.intp)
        # Rows and columns come sorted, so the CSR data array is in pair order.
        self.matrix = sp.csr_matrix(
            (np.ones(len(pairs)), (self.rows, self.cols)), shape=(n, n), dtype=np.float64
        )
        assert self.matrix.nnz == len(pairs)
        self.transposed = self.matrix.T  # shares the data array: one update serves both
        self._ones = np.ones(n)
        self.scores = games.scores

    def __len__(self) -> int:
        return len(self.rows)

    def counts(self, picks: Indices | None = None) -> tuple[Floats, Floats]:
        """Per pair: games played and the attacker's total score (of ``picks`` when given)."""
        inverse, scores = self.inverse, self.scores
        if picks is not None:
            inverse, scores = inverse[picks], scores[picks]
        played = np.bincount(inverse, minlength=len(self)).astype(np.float64)
        won = np.bincount(inverse, weights=scores, minlength=len(self)).astype(np.float64)
        return played, won

    def sums(self, values: Floats) -> tuple[Floats, Floats]:
        """Per attacker and per defender: the sums of a value given per pair.

        Leaves ``values`` in the matrix, where Hessian products read the weights.
        """
        self.matrix.data[:] = values
        return self.matrix @ self._ones, self.transposed @ self._ones


@dataclass
class _State:
    advantage: float
    attack: Floats
    defence: Floats


def _dot(x: _Vector, y: _Vector) -> float:
    return float(x[0] * y[0] + x[1] @ y[1] + x[2] @ y[2])


def _centre(values: Floats) -> Floats:
    return values - values.mean() if len(values) else values


def _solve(
    pairs: _Pairs,
    played: Floats,
    won: Floats,
    prior: Prior,
    start: _State,
    tolerance: float,
) -> _State:
    """Newton's method in the mean-zero subspace, with halving steps."""
    n = pairs.fighters
    rows, cols = pairs.rows, pairs.cols
    lam = 1.0 / prior.strength_sd**2
    lam_h = 1.0 / prior.advantage_sd**2
    h, a, d = start.advantage, start.attack.copy(), start.defence.copy()

    def evaluate(h: float, a: Floats, d: Floats) -> tuple[float, Floats]:
        eta = h + a[rows] - d[cols]
        tail = np.exp(-np.abs(eta))
        softplus = np.maximum(eta, 0.0) + np.log1p(tail)
        p = 0.5 + 0.5 * np.tanh(0.5 * eta)
        penalty = 0.5 * (lam * float(a @ a + d @ d) + lam_h * h * h)
        # Plain ufunc sums, not BLAS: threaded BLAS stalls on these sizes on a busy machine.
        return float((played * softplus).sum() - (won * eta).sum()) + penalty, p

    value, p = evaluate(h, a, d)
    for _ in range(_MAX_NEWTON):
        residual = played * p - won
        g_h = float(residual.sum()) + lam_h * h
        by_attacker, by_defender = pairs.sums(residual)
        g_a = _centre(by_attacker + lam * a)
        g_d = _centre(lam * d - by_defender)
        weight = played * p * (1.0 - p)
        w_a, w_d = pairs.sums(weight)
        w_all = float(weight.sum())

        s_h, s_a, s_d = _conjugate_gradient(
            _Curvature(pairs.matrix, pairs.transposed, w_a, w_d, w_all, lam, lam_h),
            (g_h, g_a, g_d),
            (1.0 / (w_all + lam_h), np.reciprocal(w_a + lam), np.reciprocal(w_d + lam)),
            limit=2 * n + 2,
        )
        biggest = max(
            abs(s_h), float(np.abs(s_a).max(initial=0.0)), float(np.abs(s_d).max(initial=0.0))
        )
        scale = 1.0
        while True:
            new_h, new_a, new_d = h - scale * s_h, a - scale * s_a, d - scale * s_d
            new_value, new_p = evaluate(new_h, new_a, new_d)
            if new_value <= value + 1e-12 * abs(value) or scale * biggest < tolerance:
                break
            scale /= 2.0
        h, a, d, value, p = new_h, new_a, new_d, new_value, new_p
        if scale * biggest < tolerance:
            break
    return _State(h, a, d)


@dataclass(frozen=True, slots=True)
class _Curvature:
    """Hessian-vector products of the penalised objective, projected to the mean-zero subspace."""

    matrix: sp.csr_matrix  # pair weights, attacker by defender
    transposed: sp.csc_matrix
    w_a: Floats
    w_d: Floats
    w_all: float
    lam: float
    lam_h: float

    def __call__(self, v_h: float, v_a: Floats, v_d: Floats) -> _Vector:
        w_a, w_d, lam = self.w_a, self.w_d, self.lam
        out_h = v_h * (self.w_all + self.lam_h) + w_a @ v_a - w_d @ v_d
        out_a = w_a * (v_h + v_a) - self.matrix @ v_d + lam * v_a
        out_d = (w_d + lam) * v_d - w_d * v_h - self.transposed @ v_a
        return float(out_h), _centre(out_a), _centre(out_d)


def _conjugate_gradient(
    hessian: _Curvature,
    gradient: _Vector,
    inverse_diagonal: _Vector,
    limit: int,
) -> _Vector:
    """Solve ``H s = g`` in the mean-zero subspace, preconditioned by the diagonal."""
    m_h, m_a, m_d = inverse_diagonal
    r_h, r_a, r_d = gradient[0], gradient[1].copy(), gradient[2].copy()
    x_h, x_a, x_d = 0.0, np.zeros_like(r_a), np.zeros_like(r_d)
    z_h, z_a, z_d = r_h * m_h, _centre(r_a * m_a), _centre(r_d * m_d)
    p_h, p_a, p_d = z_h, z_a.copy(), z_d.copy()
    rz = _dot((r_h, r_a, r_d), (z_h, z_a, z_d))
    target = _CG_RELATIVE * _dot((r_h, r_a, r_d), (r_h, r_a, r_d)) ** 0.5
    if target == 0.0:
        return x_h, x_a, x_d
    for _ in range(limit):
        q_h, q_a, q_d = hessian(p_h, p_a, p_d)
        curvature = _dot((p_h, p_a, p_d), (q_h, q_a, q_d))
        if curvature <= 0.0:
            break
        alpha = rz / curvature
        x_h, x_a, x_d = x_h + alpha * p_h, x_a + alpha * p_a, x_d + alpha * p_d
        r_h, r_a, r_d = r_h - alpha * q_h, r_a - alpha * q_a, r_d - alpha * q_d
        if _dot((r_h, r_a, r_d), (r_h, r_a, r_d)) ** 0.5 <= target:
            break
        z_h, z_a, z_d = r_h * m_h, _centre(r_a * m_a), _centre(r_d * m_d)
        rz_next = _dot((r_h, r_a, r_d), (z_h, z_a, z_d))
        beta = rz_next / rz
        rz = rz_next
        p_h, p_a, p_d = z_h + beta * p_h, z_a + beta * p_a, z_d + beta * p_d
    return float(x_h), x_a, x_d


def _zeros(n: int) -> _State:
    return _State(0.0, np.zeros(n), np.zeros(n))


def _strengths(state: _State) -> Strengths:
    # The subspace keeps both means at zero; re-centring only removes rounding.
    return Strengths(state.advantage, _centre(state.attack), _centre(state.defence))


def fit(games: Games, *, prior: Prior | None = None, tolerance: float = FIT_TOLERANCE) -> Strengths:
    """The penalised maximum-likelihood strengths of ``games``."""
    prior = prior or Prior()
    if len(games) == 0:
        return _strengths(_zeros(games.fighters))
    pairs = _Pairs(games)
    played, won = pairs.counts()
    return _strengths(_solve(pairs, played, won, prior, _zeros(games.fighters), tolerance))


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
    pairs = _Pairs(games)
    played, won = pairs.counts()
    full = _solve(pairs, played, won, prior, _zeros(n), FIT_TOLERANCE)
    estimate = _strengths(full)
    warm = _State(estimate.advantage, estimate.attack, estimate.defence)
    rng = np.random.default_rng(seed)
    for b in range(resamples):
        picks = rng.integers(0, total, size=total)
        state = _solve(pairs, *pairs.counts(picks), prior, warm, RESAMPLE_TOLERANCE)
        advantage[b] = state.advantage
        attack[b] = _centre(state.attack)
        defence[b] = _centre(state.defence)
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
