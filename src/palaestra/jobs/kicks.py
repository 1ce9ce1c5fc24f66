"""The way a job's work asks for more work: kick a job by the id it works on.

The run step, the dispatcher and the sweeper are given a :class:`Kicks`
rather than the :class:`~palaestra.jobs.tasks.Jobs` that registers them, so
that the jobs' modules do not import one another; ``Jobs`` is the one that
sends these kicks to the broker.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

__all__ = ["Kicks"]


class Kicks(Protocol):
    """Sends jobs to the broker."""

    async def kick_step(self) -> None:
        """Send a ``step_runs`` job: a step of the due runs."""
        ...

    async def kick_turn(self, match_id: str) -> None:
        """Send a ``play_turn`` job for ``match_id``."""
        ...

    def soon(self, kick: Coroutine[Any, Any, Any]) -> None:
        """Send a job without waiting for the broker (from code that cannot wait)."""
        ...
