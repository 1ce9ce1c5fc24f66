"""Ratings at scale: the published Bradley-Terry fit with its bootstrap, and the live update.

    .venv/bin/python bench/ratings.py [--fighters 500] [--matches 100000] [--resamples 1000]

1. Published: one fit over ``--matches`` synthetic matches among
   ``--fighters`` fighters (attack and defence strengths drawn from a normal,
   draws included), then ``--resamples`` bootstrap refits: what a leaderboard
   recomputation costs. Target: under 30 s. The fit's rank correlation with
   the true strengths and its intervals' coverage are printed beside it.
2. Live: one OpenSkill update per scored match (``rules.ratings.rate``),
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

import numpy as np
from scipy.stats import spearmanr
from sqlalchemy import insert

from palaestra.engine.ratings.live import rate_pending
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.bradley_terry import Games, Strengths, bootstrap, simulate
from palaestra.rules.ratings import Rating, Result, rate
from palaestra.store.models import Agent, Match, Owner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import agent_row, bench_settings

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
    started = time.perf_counter()
    result = bootstrap(games, resamples=resamples, seed=7)
    elapsed = time.perf_counter() - started
    low, high = result.bounds(result.overall)
    coverage = float(np.mean((low <= truth.overall) & (truth.overall <= high)))
    rho = spearmanr(result.estimate.overall, truth.overall).statistic
    print(
        f"published fit: {matches:,} matches, {fighters:,} fighters, {resamples:,} bootstrap "
        f"resamples in {elapsed:.1f} s ({elapsed / max(resamples, 1) * 1000:.1f} ms per refit) "
        f"(target: < 30 s); Spearman vs truth {rho:.3f}, 95% interval coverage {coverage:.0%}"
    )


def live(updates: int) -> None:
    rng = np.random.default_rng(3)
    ratings = [Rating() for _ in range(200)]
    results = list(Result)
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
    args = parser.parse_args()
    published(args.fighters, args.matches, args.resamples)
    live(args.updates)
    asyncio.run(stored(min(args.fighters, 200), args.stored))


if __name__ == "__main__":
    main()
