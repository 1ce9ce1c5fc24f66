"""Ratings at scale: the published Bradley-Terry fit with its bootstrap, and the live update.

    .venv/bin/python bench/ratings.py [--fighters 500] [--matches 100000] [--resamples 1000]
                                      [--solver-refits 60] [--solver-rounds 5] [--quick]

1. Published: one fit over ``--matches`` synthetic matches among
   ``--fighters`` fighters (attack and defence strengths drawn from a normal,
   draws included), then ``--resamples`` bootstrap refits: what a leaderboard
   recomputation costs. Target: under 30 s. The fit's rank correlation with
   the true strengths and its intervals' coverage are printed beside it.
   Then the solver against ``scipy.optimize.minimize`` (Newton-CG and
   trust-ncg, given the same objective, gradient and Hessian-vector products,
   the variables scaled by the Hessian's diagonal as our solver preconditions
   by it): CPU per bootstrap refit from the same warm start, and the largest
   error against a refit solved to 1e-12, ``--solver-rounds`` rounds in
   alternating order, medians; each minimiser's ratio to the solver in use.
2. Live: one OpenSkill update per scored match (``rules.ratings.live.rate``),
   timed one by one. Target: median under 1 ms. Then the stored path:
   ``rate_pending`` applying a backlog of ``--stored`` matches in a fresh
   SQLite store (read, update, marker, all in batched transactions).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.stats import spearmanr
from sqlalchemy import insert

from palaestra.engine.ratings.live import rate_pending
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.cage.outcome import Winner
from palaestra.rules.ratings import Rating, rate, solver
from palaestra.rules.ratings.bradley_terry import (
    FIT_TOLERANCE,
    RESAMPLE_TOLERANCE,
    Games,
    Prior,
    Strengths,
    bootstrap,
    simulate,
)
from palaestra.store.models import Agent, Match, Owner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import agent_row, bench_settings, parse_args

OUTCOMES = {1.0: "attacker", 0.5: "draw", 0.0: "defender"}


def arena(fighters: int, matches: int, seed: int = 1) -> tuple[Strengths, Games]:
    rng = np.random.default_rng(seed)
    attack = rng.normal(0.0, 1.0, fighters)
    defence = rng.normal(0.0, 1.0, fighters)
    truth = Strengths(0.3, attack - attack.mean(), defence - defence.mean())
    attackers = rng.integers(0, fighters, matches)
    defenders = (attackers + rng.integers(1, fighters, matches)) % fighters
    scores = simulate(truth, attackers, defenders, rng)
    return truth, Games(fighters, attackers, defenders, scores)


def published(fighters: int, matches: int, resamples: int) -> None:
    truth, games = arena(fighters, matches)
    started, cpu = time.perf_counter(), time.process_time()
    result = bootstrap(games, resamples=resamples, seed=7)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    low, high = result.bounds(result.overall)
    coverage = float(np.mean((low <= truth.overall) & (truth.overall <= high)))
    rho = spearmanr(result.estimate.overall, truth.overall).statistic
    print(
        f"published fit: {matches:,} matches, {fighters:,} fighters, {resamples:,} bootstrap "
        f"resamples in {elapsed:.1f} s ({elapsed / max(resamples, 1) * 1000:.1f} ms per refit; "
        f"CPU {cpu:.1f} s) (target: < 30 s); Spearman vs truth {rho:.3f}, 95% interval "
        f"coverage {coverage:.0%}"
    )


def minimised(
    pairs: solver.Pairs,
    played: solver.Floats,
    won: solver.Floats,
    penalties: tuple[float, float],
    start: solver.State,
    method: str,
    tolerance: float,
) -> solver.State:
    """The fit by ``scipy.optimize.minimize``: the objective of ``solver.solve``, its
    gradient and Hessian-vector products, over ``(h, a, d)`` stacked and scaled by the
    square root of the Hessian's diagonal at the start; the means of ``a`` and ``d``
    (which the likelihood does not see) held at zero by a quadratic term."""
    n, rows, cols = pairs.fighters, pairs.rows, pairs.cols
    lam, lam_h = penalties
    last: dict[str, Any] = {}

    def split(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        return float(x[0]), x[1 : n + 1], x[n + 1 :]

    def value_and_gradient(x: np.ndarray) -> tuple[float, np.ndarray]:
        h, a, d = split(x)
        mean_a, mean_d = a.mean(), d.mean()
        a, d = a - mean_a, d - mean_d
        eta = h + a[rows] - d[cols]
        softplus = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
        p = 0.5 + 0.5 * np.tanh(0.5 * eta)
        value = float((played * softplus).sum() - (won * eta).sum())
        value += 0.5 * (lam * float(a @ a + d @ d) + lam_h * h * h)
        value += 0.5 * n * (mean_a**2 + mean_d**2)
        residual = played * p - won
        by_attacker, by_defender = pairs.sums(residual)
        gradient = np.concatenate(
            (
                [float(residual.sum()) + lam_h * h],
                solver.centre(by_attacker + lam * a) + mean_a,
                solver.centre(lam * d - by_defender) + mean_d,
            )
        )
        last.update(x=x.copy(), p=p, weights=None)
        return value, gradient

    def weights(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        if "x" not in last or not np.array_equal(last["x"], x):
            value_and_gradient(x)
        if last["weights"] is None:
            weight = played * last["p"] * (1.0 - last["p"])
            w_a, w_d = pairs.sums(weight)  # leaves the weights in the matrix
            last["weights"] = (w_a, w_d, float(weight.sum()))
        result: tuple[np.ndarray, np.ndarray, float] = last["weights"]
        return result

    def hessp(x: np.ndarray, v: np.ndarray) -> np.ndarray:
        w_a, w_d, w_all = weights(x)
        v_h, v_a, v_d = split(v)
        mean_a, mean_d = v_a.mean(), v_d.mean()
        v_a, v_d = v_a - mean_a, v_d - mean_d
        return np.concatenate(
            (
                [v_h * (w_all + lam_h) + w_a @ v_a - w_d @ v_d],
                solver.centre(w_a * (v_h + v_a) - pairs.matrix @ v_d + lam * v_a) + mean_a,
                solver.centre((w_d + lam) * v_d - w_d * v_h - pairs.transposed @ v_a) + mean_d,
            )
        )

    x0 = np.concatenate(([start.advantage], start.attack, start.defence))
    w_a, w_d, w_all = weights(x0)
    scale = np.sqrt(np.concatenate(([w_all + lam_h], w_a + lam, w_d + lam)))

    def scaled_value(y: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = value_and_gradient(y / scale)
        return value, gradient / scale

    def scaled_hessp(y: np.ndarray, v: np.ndarray) -> np.ndarray:
        product: np.ndarray = hessp(y / scale, v / scale) / scale
        return product

    options = {"xtol": tolerance} if method == "Newton-CG" else {"gtol": tolerance}
    result = minimize(
        scaled_value, x0 * scale, jac=True, hessp=scaled_hessp, method=method, options=options
    )
    h, a, d = split(result.x / scale)
    return solver.State(h, solver.centre(a), solver.centre(d))


#: (name, method, tolerance): each minimiser at the tolerance that gives refits as close
#: to the exact ones as the bootstrap needs (``RESAMPLE_TOLERANCE``) or closer.
MINIMISERS = [("Newton-CG", "Newton-CG", 1e-5), ("trust-ncg", "trust-ncg", 3e-4)]


def solvers(fighters: int, matches: int, refits: int, rounds: int) -> None:
    _, games = arena(fighters, matches)
    pairs = solver.Pairs(games.fighters, games.attackers, games.defenders, games.scores)
    played, won = pairs.counts()
    prior = Prior()
    penalties = (1.0 / prior.strength_sd**2, 1.0 / prior.advantage_sd**2)
    zero = solver.State(0.0, np.zeros(fighters), np.zeros(fighters))
    full = solver.solve(pairs, played, won, penalties, zero, FIT_TOLERANCE)
    rng = np.random.default_rng(7)
    resampled = [pairs.counts(rng.integers(0, len(games), len(games))) for _ in range(refits)]
    exact = [solver.solve(pairs, *c, penalties, full, 1e-12) for c in resampled]

    def refit_all(name: str, method: str, tolerance: float) -> tuple[float, float]:
        started = time.process_time()
        states = [
            solver.solve(pairs, *counts, penalties, full, tolerance)
            if name == "ours"
            else minimised(pairs, *counts, penalties, full, method, tolerance)
            for counts in resampled
        ]
        cpu = (time.process_time() - started) / refits
        error = max(
            float(np.abs(solver.centre(s.attack) - solver.centre(e.attack)).max())
            for s, e in zip(states, exact, strict=True)
        )
        return cpu, error

    contenders = [("ours", "", RESAMPLE_TOLERANCE), *MINIMISERS]
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    errors: dict[str, float] = {}
    for round_ in range(rounds):
        for name, method, tolerance in contenders if round_ % 2 == 0 else contenders[::-1]:
            cpu, errors[name] = refit_all(name, method, tolerance)
            cpus[name].append(cpu)
    base = statistics.median(cpus["ours"])
    print(
        f"solver ({fighters:,} fighters, {matches:,} matches, {refits} bootstrap refits from "
        f"the full fit, median of {rounds} alternating rounds):"
    )
    for name, _, tolerance in contenders:
        median = statistics.median(cpus[name])
        label = "solver.solve" if name == "ours" else f"minimize({name})"
        print(
            f"  {label:<22} tolerance {tolerance:g}: {median * 1000:6.2f} ms CPU per refit "
            f"({median / base:.2f}x), largest error {errors[name]:.1e}"
        )


def live(updates: int) -> None:
    rng = np.random.default_rng(3)
    ratings = [Rating() for _ in range(200)]
    results = list(Winner)
    timings = []
    for _ in range(updates):
        a, d = rng.integers(0, len(ratings), 2)
        result = results[int(rng.integers(0, 3))]
        started = time.perf_counter()
        ratings[a], ratings[d] = rate(ratings[a], ratings[d], result)
        timings.append(time.perf_counter() - started)
    timings.sort()
    median = statistics.median(timings)
    p99 = timings[int(len(timings) * 0.99)]
    print(
        f"live update: {updates:,} matches, median {median * 1e6:.0f} us, "
        f"p99 {p99 * 1e6:.0f} us per match (target: median < 1 ms)"
    )


async def stored(fighters: int, matches: int) -> None:
    with tempfile.TemporaryDirectory() as data:
        platform = await Platform.open(bench_settings(Path(data)))
        try:
            now = time.time()
            rng = np.random.default_rng(5)
            async with platform.db.session() as session, session.begin():
                owners = [new_id() for _ in range(fighters)]
                await session.execute(
                    insert(Owner),
                    [
                        {"id": o, "name": "bench", "token_hash": o, "created_at": now}
                        for o in owners
                    ],
                )
                ids = [new_id() for _ in range(fighters)]
                await session.execute(
                    insert(Agent),
                    [
                        agent_row(
                            owner,
                            f"fighter-{i}",
                            now,
                            id=fighter,
                            arena=Arena.CAGE.value,
                            role=None,
                            entrant_type="harness",
                            fighter_class="independent",
                        )
                        for i, (fighter, owner) in enumerate(zip(ids, owners, strict=True))
                    ],
                )
                rows = []
                for i in range(matches):
                    a, d = rng.choice(fighters, 2, replace=False)
                    rows.append(
                        {
                            "id": new_id(),
                            "attacker_id": ids[a],
                            "defender_id": ids[d],
                            "ruleset": "cage.v1",
                            "status": "SCORED",
                            "outcome": OUTCOMES[float(rng.choice([1.0, 0.5, 0.0]))],
                            "decided_by": "utility",
                            "seed": i,
                            "material": {},
                            "deadline_ms": 60_000,
                            "next_turn": 7,
                            "created_at": now,
                            "updated_at": now,
                            "finished_at": now + i,
                        }
                    )
                for start in range(0, len(rows), 1000):
                    await session.execute(insert(Match), rows[start : start + 1000])
            started = time.perf_counter()
            applied = await rate_pending(platform)
            elapsed = time.perf_counter() - started
            assert applied == matches, (applied, matches)
            again = await rate_pending(platform)
            print(
                f"stored live update: {matches:,} scored matches applied in {elapsed:.2f} s "
                f"({elapsed / matches * 1000:.2f} ms per match, SQLite, batches of 500); "
                f"a second pass applied {again}"
            )
        finally:
            await platform.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fighters", type=int, default=500)
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--stored", type=int, default=5_000)
    parser.add_argument("--solver-refits", type=int, default=60)
    parser.add_argument("--solver-rounds", type=int, default=5)
    quick = {
        "fighters": 20,
        "matches": 400,
        "resamples": 10,
        "updates": 200,
        "stored": 100,
        "solver_refits": 2,
        "solver_rounds": 1,
    }
    args = parse_args(parser, quick)
    published(args.fighters, args.matches, args.resamples)
    solvers(args.fighters, args.matches, args.solver_refits, args.solver_rounds)
    live(args.updates)
    asyncio.run(stored(min(args.fighters, 200), args.stored))


if __name__ == "__main__":
    main()
