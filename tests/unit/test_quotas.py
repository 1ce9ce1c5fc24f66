"""Quota decisions: in flight, per window, both off at 0."""

from __future__ import annotations

import pytest

from palaestra.rules.quotas import IN_FLIGHT_RETRY_S, Quota, Refusal

NOW = 10_000.0
HOUR = 3600.0


def quota(in_flight: int = 0, per_window: int = 0) -> Quota:
    return Quota("runs", in_flight, per_window, HOUR)


@pytest.mark.parametrize(
    ("limits", "running", "started", "expected"),
    [
        # Both off: anything goes.
        ((0, 0), 1000, [NOW - 1] * 1000, None),
        # In flight: below, at.
        ((2, 0), 1, [], None),
        ((2, 0), 2, [], Refusal("at most 2 runs in flight at once", IN_FLIGHT_RETRY_S)),
        # Per window: below; at, with the oldest leaving in 600 s.
        ((0, 3), 0, [NOW - 10, NOW - 20], None),
        ((0, 3), 0, [NOW - 3000, NOW - 20, NOW - 10], Refusal("at most 3 runs per hour", 600.0)),
        # Starts older than the window do not count.
        ((0, 2), 0, [NOW - HOUR - 1, NOW - HOUR, NOW - 5], None),
        # Over the limit (a race let one more in): the wait is until enough have left.
        ((0, 2), 0, [NOW - 3500, NOW - 3000, NOW - 100], Refusal("at most 2 runs per hour", 600.0)),
        # Due any moment: never less than a second.
        ((0, 1), 0, [NOW - HOUR + 0.1], Refusal("at most 1 runs per hour", 1.0)),
        # In flight is decided first.
        ((1, 1), 1, [NOW - 1], Refusal("at most 1 runs in flight at once", IN_FLIGHT_RETRY_S)),
    ],
)
def test_decide(
    limits: tuple[int, int], running: int, started: list[float], expected: Refusal | None
) -> None:
    assert quota(*limits).decide(running, started, NOW) == expected


def test_a_day_window_is_spelled() -> None:
    refusal = Quota("rated matches", 0, 1, 86400).decide(0, [NOW - 1], NOW)
    assert refusal is not None
    assert refusal.reason == "at most 1 rated matches per 24 hours"
    assert refusal.retry_after_s == pytest.approx(86399)
