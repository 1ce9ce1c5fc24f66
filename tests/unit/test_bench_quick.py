"""The benchmarks' shared ``--quick`` option, and how bench/scale.py judges a schedule."""

from __future__ import annotations

import argparse

import pytest
from bench._support import parse_args
from bench.scale import BOUNDS, Measured


def options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=200)
    return parser


def test_without_quick_a_benchmark_keeps_its_full_size() -> None:
    args = parse_args(options(), {"rounds": 1, "rows": 20}, [])
    assert (args.quick, args.rounds, args.rows) == (False, 5, 200)


def test_quick_gives_the_small_size() -> None:
    args = parse_args(options(), {"rounds": 1, "rows": 20}, ["--quick"])
    assert (args.quick, args.rounds, args.rows) == (True, 1, 20)


def test_an_option_given_wins_over_the_quick_size() -> None:
    args = parse_args(options(), {"rounds": 1, "rows": 20}, ["--rows", "7", "--quick"])
    assert (args.rounds, args.rows) == (1, 7)


def test_a_quick_size_must_name_an_option() -> None:
    with pytest.raises(ValueError, match="rouns"):
        parse_args(options(), {"rouns": 1}, ["--quick"])


def measured(
    lags: dict[float, int],
    backlog: dict[float, int] | None = None,
    *,
    failed: float = 0.0,
    not_active: int = 0,
) -> Measured:
    """1 worker, 1,000 agents: ``lags`` pings done at most each bound late, and ``backlog``
    pings still due at the end, at most each bound late so far."""
    backlog = backlog or {}
    done = [sum(n for bound, n in lags.items() if bound <= b) for b in BOUNDS]
    due = [sum(n for bound, n in backlog.items() if bound <= b) for b in BOUNDS]
    return Measured(
        workers=1,
        agents=1000,
        seconds=10.0,
        interval=10.0,
        pings=float(sum(lags.values())),
        failed=failed,
        failures=f"timeout {failed:g}" if failed else "",
        not_active=not_active,
        backlog=sum(backlog.values()),
        cumulative=tuple(float(d + b) for d, b in zip(done, due, strict=True)),
    )


def test_pings_done_on_time_are_within_schedule() -> None:
    result = measured({0.25: 900, 1.0: 95, 2.0: 5})
    assert (result.quantile(0.5), result.quantile(0.99)) == (0.25, 1.0)
    assert result.within(2.0)
    assert not result.within(0.5)
    assert result.problems(2.0) == []


def test_pings_still_due_count_at_their_lag_so_far() -> None:
    # Every ping done was on time, but 2% of those due were never started: workers behind.
    result = measured({0.25: 1000}, backlog={float("inf"): 20})
    assert result.quantile(0.5) == 0.25
    assert result.quantile(0.99) == float("inf")
    assert not result.within(10.0)


def test_a_failed_ping_is_not_kept_and_while_on_time_a_fault() -> None:
    on_time = measured({0.25: 1000}, failed=3.0)
    assert not on_time.within(2.0)
    assert on_time.problems(2.0) == ["3 pings failed (timeout 3) on time"]
    moved = measured({0.25: 1000}, not_active=2)
    assert not moved.within(2.0)
    assert moved.problems(2.0) == ["2 agents no longer ACTIVE"]
    assert measured({}).problems(2.0) == ["no ping was done"]


def test_pings_that_fail_behind_schedule_are_a_figure() -> None:
    # A machine too busy for the workers is too busy to serve the agents in time as well.
    behind = measured({0.25: 900, 10.0: 100}, failed=30.0, not_active=1)
    assert not behind.within(2.0)
    assert behind.problems(2.0) == []
