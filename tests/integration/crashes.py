"""A retention pass killed mid-way, for the tests that check it loses nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

__all__ = ["Crash", "dies_at"]


class Crash(Exception):
    """The process dies mid-pass."""


def dies_at(crash_at: int) -> Callable[[float], Awaitable[None]]:
    """A pause between batches that kills the pass at its ``crash_at``-th call."""
    pauses = 0

    async def dies(_seconds: float) -> None:
        nonlocal pauses
        pauses += 1
        if pauses == crash_at:
            raise Crash

    return dies
