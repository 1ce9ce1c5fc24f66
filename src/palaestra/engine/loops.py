"""Running an idempotent step on a period until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

__all__ = ["every"]

log = structlog.get_logger(__name__)


async def every(
    period_s: float, stop: asyncio.Event, step: Callable[[], Awaitable[object]], what: str
) -> None:
    """Run ``step`` every ``period_s`` (the first time after one period) until ``stop``.

    A failed step is logged and the loop goes on: the steps are idempotent, so a
    database hiccup costs one period, never the loop.
    """
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), period_s)
        if stop.is_set():
            return
        try:
            await step()
        except Exception:
            log.exception(f"{what} failed")
