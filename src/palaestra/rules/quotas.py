"""Quotas as decisions: may one more start now, and if not, when.

A quota has two parts, either of which may be off (0 = unlimited): how many may be
in flight at once, and how many may start within a moving window. The decision
is a pure function of the counts and the start times the store read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["IN_FLIGHT_RETRY_S", "Quota", "Refusal"]

#: What ``Retry-After`` says when only finishing work frees a place (nothing tells when).
IN_FLIGHT_RETRY_S: Final = 30.0


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one more may not start, and in how many seconds to try again."""

    reason: str
    retry_after_s: float


@dataclass(frozen=True, slots=True)
class Quota:
    """``in_flight`` at once and ``per_window`` per ``window_s`` seconds; 0 = unlimited."""

    what: str
    in_flight: int
    per_window: int
    window_s: float

    def decide(self, running: int, started: Sequence[float], now: float) -> Refusal | None:
        """None when one more may start; ``started`` are the start times within the window."""
        if self.in_flight and running >= self.in_flight:
            return Refusal(
                f"at most {self.in_flight} {self.what} in flight at once", IN_FLIGHT_RETRY_S
            )
        if not self.per_window:
            return None
        recent = sorted(t for t in started if t > now - self.window_s)
        if len(recent) < self.per_window:
            return None
        # The start that must leave the window before one more fits in it.
        leaving = recent[len(recent) - self.per_window]
        window = _spelled(self.window_s)
        return Refusal(
            f"at most {self.per_window} {self.what} per {window}",
            max(leaving + self.window_s - now, 1.0),
        )


def _spelled(seconds: float) -> str:
    if seconds == 3600:
        return "hour"
    if seconds == 86400:
        return "24 hours"
    return f"{seconds:g} s"
