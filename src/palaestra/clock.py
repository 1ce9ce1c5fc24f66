"""The one clock. Every "now" in Palaestra comes from here, so tests can freeze and advance it."""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["Clock", "FrozenClock", "SystemClock"]


class Clock:
    """Wall time in seconds since the epoch, and a monotonic time for measuring durations."""

    def now(self) -> float:
        raise NotImplementedError

    def monotonic(self) -> float:
        raise NotImplementedError


class SystemClock(Clock):
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


@dataclass
class FrozenClock(Clock):
    """A clock that only moves when told to."""

    current: float = 1_767_225_600.0  # 2026-01-01T00:00:00Z

    def now(self) -> float:
        return self.current

    def monotonic(self) -> float:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += seconds
