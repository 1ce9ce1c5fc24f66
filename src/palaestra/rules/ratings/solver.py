"""The Newton solver behind the Bradley-Terry fit (:mod:`palaestra.rules.ratings.bradley_terry`).

The penalised negative log-likelihood of ``P(attacker wins) = logistic(h +
a[i] - d[j])`` is minimised by Newton's method restricted to the subspace
where both strength vectors have mean zero. Each Newton system is solved by
SciPy's conjugate gradients (``scipy.sparse.linalg.cg``) preconditioned by the
Hessian's diagonal, with Hessian-vector products through a sparse
attacker-by-defender matrix of the pairs that met, so a step of a large fit
costs O(pairs), never O(fighters ** 3). An arena of up to 64 fighters solves
each system directly instead, its (2n+1)-square matrix built whole (O(fighters
** 3), a few microseconds there): the conjugate gradients' fixed costs per
product (SciPy's operator calls and bookkeeping) made the published fit's 1,000
refits of a 12-fighter demo take 9 s of CPU (1.6 s now). A step is halved
until it decreases the objective, so the solver converges from any start; a
warm start (the full fit, for a bootstrap resample) needs a few steps.

Why the Newton loop is ours and not ``scipy.optimize.minimize``: given the
same objective, gradient and Hessian products (``bench/ratings.py``, 500
fighters, 100,000 matches, bootstrap refits from the full fit, medians of 5
to 7 alternating rounds, three runs), ``minimize`` took 1.6 to 2.0x the CPU
per refit with Newton-CG and 1.6 to 1.8x with trust-ncg, at tolerances that
leave it further from the exact refit (2e-6 and 4e-5 in log-odds against
2e-9): its inexact inner solves and line search or trust region take about
ten iterations, each with a full evaluation of the likelihood, where this
loop, solving each Newton system to a relative residual of 1e-4, takes four.
The published fit runs 1,000 refits against a 30 s target, and this loop's
22 s of CPU there (on a busy two-core machine) would become 35 s or more.
The inner solve is SciPy's: it costs 1.15x the conjugate gradients once
written here (CPU of the whole published fit, median of 4 alternating
rounds), with the same result to 1e-15, well within that target.

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.linalg import LinearOperator, cg

__all__ = ["Floats", "Indices", "Pairs", "State", "centre", "solve"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]

_MAX_NEWTON: Final = 200
_CG_RELATIVE: Final = 1e-4
#: Up to this many fighters, each Newton system is solved directly, its matrix built whole.
_DENSE_UP_TO: Final = 64


class Pairs:
    """The distinct (attacker, defender) pairs of a set of games, and a sparse matrix over them."""

    def __init__(
        self, fighters: int, attackers: Indices, defenders: Indices, scores: Floats
    ) -> None:
        n = fighters
        codes = attackers.astype(np.int64) * n + defenders
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
        self.scores = scores

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
class State:
    """Where a fit stands: the advantage and the two strengths per fighter."""

    advantage: float
    attack: Floats
    defence: Floats


def centre(values: Floats) -> Floats:
    """``values`` minus their mean."""
    return values - values.mean() if len(values) else values


def solve(
    pairs: Pairs,
    played: Floats,
    won: Floats,
    penalties: tuple[float, float],
    start: State,
    tolerance: float,
) -> State:
    """Minimise the penalised negative log-likelihood from ``start``.

    ``played`` and ``won`` are per pair (games, the attacker's total score);
    ``penalties`` are the ridge weights (1 / sd^2) of the strengths and of
    the advantage. Newton's method in the mean-zero subspace, with halving
    steps; stops when no parameter moves by more than ``tolerance``.
    """
    n = pairs.fighters
    rows, cols = pairs.rows, pairs.cols
    lam, lam_h = penalties
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
        by_attacker, by_defender = pairs.sums(residual)
        gradient = np.concatenate(
            (
                [float(residual.sum()) + lam_h * h],
                centre(by_attacker + lam * a),
                centre(lam * d - by_defender),
            )
        )
        weight = played * p * (1.0 - p)
        w_a, w_d = pairs.sums(weight)
        curvature = _Curvature(pairs, w_a, w_d, float(weight.sum()), lam, lam_h)
        if n <= _DENSE_UP_TO:
            # Positive definite, with the ridge on the strengths: one solution.
            step = np.asarray(np.linalg.solve(curvature.dense(), gradient), dtype=np.float64)
        else:
            shape = (2 * n + 1, 2 * n + 1)
            # Stopped by the iteration limit (info > 0), conjugate gradients still leave a
            # descent direction; the halving below takes only what decreases the objective.
            step, _info = cg(
                LinearOperator(shape, matvec=curvature, dtype=np.float64),
                gradient,
                rtol=_CG_RELATIVE,
                maxiter=2 * n + 2,
                M=LinearOperator(shape, matvec=curvature.precondition, dtype=np.float64),
            )
        # The step lies in the subspace; centring only removes rounding.
        s_h, s_a, s_d = float(step[0]), centre(step[1 : n + 1]), centre(step[n + 1 :])
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
    return State(h, a, d)


class _Curvature:
    """Hessian-vector products of the penalised objective on ``(h, a, d)`` stacked.

    Within the mean-zero subspace, the objective's Hessian projected to it;
    along the two directions out of it (a common shift of ``a``, of ``d``),
    where the fit never moves, the identity: the system then has one solution,
    and it lies in the subspace. Reads the pair weights that ``Pairs.sums``
    left in the matrix.
    """

    def __init__(
        self, pairs: Pairs, w_a: Floats, w_d: Floats, w_all: float, lam: float, lam_h: float
    ) -> None:
        self.matrix, self.transposed = pairs.matrix, pairs.transposed
        self.n = pairs.fighters
        self.w_a, self.w_d, self.w_all, self.lam, self.lam_h = w_a, w_d, w_all, lam, lam_h
        self.inverse_diagonal: Floats = np.reciprocal(
            np.concatenate(([w_all + lam_h], w_a + lam, w_d + lam))
        )

    def __call__(self, v: Floats) -> Floats:
        n, w_a, w_d, lam = self.n, self.w_a, self.w_d, self.lam
        v_h, v_a, v_d = float(v[0]), v[1 : n + 1], v[n + 1 :]
        mean_a, mean_d = v_a.mean(), v_d.mean()
        v_a, v_d = v_a - mean_a, v_d - mean_d
        out = np.empty_like(v)
        out[0] = v_h * (self.w_all + self.lam_h) + w_a @ v_a - w_d @ v_d
        out[1 : n + 1] = centre(w_a * (v_h + v_a) - self.matrix @ v_d + lam * v_a) + mean_a
        out[n + 1 :] = centre((w_d + lam) * v_d - w_d * v_h - self.transposed @ v_a) + mean_d
        return out

    def dense(self) -> Floats:
        """The operator as a matrix, for a direct solve: the Hessian projected to the
        subspace (``C H C``, ``C`` the centring of each strength vector: a block's row
        and column means taken off, its mean added back), plus the identity across it (a
        mean's direction, ``J / n``). Built with sums, not products of matrices (threaded
        BLAS stalls on these sizes on a busy machine)."""
        n, lam = self.n, self.lam

        def centred(block: Floats) -> Floats:
            rows, columns = block.mean(axis=1), block.mean(axis=0)
            out: Floats = block - rows[:, None] - columns[None, :] + float(block.mean())
            return out

        out = np.empty((2 * n + 1, 2 * n + 1))
        out[0, 0] = self.w_all + self.lam_h
        out[0, 1:] = np.concatenate((centre(self.w_a), -centre(self.w_d)))
        out[1:, 0] = out[0, 1:]
        a, d = slice(1, n + 1), slice(n + 1, None)
        out[a, a] = centred(np.diag(self.w_a + lam)) + 1.0 / n
        out[d, d] = centred(np.diag(self.w_d + lam)) + 1.0 / n
        out[a, d] = -centred(self.matrix.toarray())
        out[d, a] = out[a, d].T
        return out

    def precondition(self, residual: Floats) -> Floats:
        """The inverse of the Hessian's diagonal, applied within the subspace (identity across)."""
        n = self.n
        out: Floats = self.inverse_diagonal * residual
        for side in (slice(1, n + 1), slice(n + 1, None)):
            out[side] += residual[side].mean() - out[side].mean()
        return out
