"""Grouping concurrent calls into batches: whatever arrives while one batch is handled goes
into the next (group commit).

Under load one batch carries hundreds of items, so a burst costs a handful of round
trips to the store rather than one each; when idle each item is handled at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Batcher"]

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """Hands submitted items to ``handle`` in batches of up to ``max_batch``, in their order.

    ``handle`` returns one result per item, in the items' order. When it raises, every
    item of that batch gets the exception, or, with ``alone_on_failure``, each item is
    handled again alone, so that an item ``handle`` cannot take fails by itself; the next
    batch is handled all the same.
    """

    def __init__(
        self,
        handle: Callable[[list[T]], Awaitable[Sequence[R]]],
        *,
        max_batch: int = 500,
        alone_on_failure: bool = False,
    ) -> None:
        self.handle = handle
        self.max_batch = max_batch
        self.alone_on_failure = alone_on_failure
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._worker: asyncio.Task[None] | None = None

    def submit(self, item: T) -> asyncio.Future[R]:
        """Queue ``item`` for the next batch; the future tells its result.

        The item is handled even if nobody awaits the future (or the awaiting caller
        is cancelled).
        """
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return future

    async def close(self) -> None:
        """Wait until what was submitted has been handled."""
        if self._worker is not None:
            with contextlib.suppress(Exception):
                await self._worker

    async def _drain(self) -> None:
        while self._pending:
            batch = self._pending[: self.max_batch]
            del self._pending[: self.max_batch]
            await self._handled(batch)

    async def _handled(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self.handle([item for item, _ in batch])
        except Exception as exc:
            if self.alone_on_failure and len(batch) > 1:
                for pair in batch:
                    await self._handled([pair])
                return
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)
