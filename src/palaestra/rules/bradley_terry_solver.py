"""The Newton-CG solver behind the Bradley-Terry fit (see :mod:`palaestra.rules.bradley_terry`).

The penalised negative log-likelihood of ``P(attacker wins) = logistic(h +
a[i] - d[j])`` is minimised by Newton's method restricted to the subspace
where both strength vectors have mean zero. Each Newton system is solved by
conjugate gradients preconditioned by the Hessian's diagonal, with
Hessian-vector products through a sparse attacker-by-defender matrix of the
pairs that met, so a step costs O(pairs) and never O(fighters ** 3). A step
is halved until it decreases the objective, so the solver converges from any
start; a warm start (the full fit, for a bootstrap resample) needs a few
steps.

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = ["Floats", "Indices", "Pairs", "State", "centre", "solve"]

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
_Vector = tuple[float, Floats, Floats]  # (advantage, attack, defence)

_MAX_NEWTON: Final = 200
_CG_RELATIVE: Final = 1e-4


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


def _dot(x: _Vector, y: _Vector) -> float:
    return float(x[0] * y[0] + x[1] @ y[1] + x[2] @ y[2])


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
        g_h = float(residual.sum()) + lam_h * h
        by_attacker, by_defender = pairs.sums(residual)
        g_a = centre(by_attacker + lam * a)
        g_d = centre(lam * d - by_defender)
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
    return State(h, a, d)


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
        return float(out_h), centre(out_a), centre(out_d)


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
    z_h, z_a, z_d = r_h * m_h, centre(r_a * m_a), centre(r_d * m_d)
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
        z_h, z_a, z_d = r_h * m_h, centre(r_a * m_a), centre(r_d * m_d)
        rz_next = _dot((r_h, r_a, r_d), (z_h, z_a, z_d))
        beta = rz_next / rz
        rz = rz_next
        p_h, p_a, p_d = z_h + beta * p_h, z_a + beta * p_a, z_d + beta * p_d
    return float(x_h), x_a, x_d
