"""The turn desk: one process's claims and records, gathered into batches."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from palaestra.engine.batcher import Batcher
from palaestra.engine.cage.claims import claim_turns
from palaestra.engine.cage.records import record_then_claim
from palaestra.engine.cage.turns import Claim, Played, Recorded, Waiting
from palaestra.platform import Platform

__all__ = ["TurnDesk"]

T = TypeVar("T")
R = TypeVar("R")


class TurnDesk:
    """Claims and records turns for one process, gathering concurrent calls into batches
    (:class:`~palaestra.engine.batcher.Batcher`): a busy referee claims and records
    hundreds of turns in one transaction each, an idle one each turn at once.

    A batch that fails is tried again one item at a time, so a match the store cannot
    take fails alone rather than with its batch.
    """

    def __init__(self, platform: Platform, *, max_batch: int = 256) -> None:
        self.platform = platform
        self._claims: Batcher[str, Claim | Waiting | None] = Batcher(
            partial(self._transact, claim_turns, single=False),
            max_batch=max_batch,
            alone_on_failure=True,
        )
        # A batch's records are one statement on PostgreSQL: it needs no transaction around.
        self._records: Batcher[tuple[Played, bool], tuple[Recorded, Claim | None]] = Batcher(
            partial(self._transact, record_then_claim, single=True),
            max_batch=max_batch,
            alone_on_failure=True,
        )

    async def claim(self, match_id: str) -> Claim | Waiting | None:
        """The match's next turn to play, or why there is none (``None``: no such match)."""
        return await self._claims.submit(match_id)

    async def record(
        self, played: Played, *, then_claim: bool = False
    ) -> tuple[Recorded, Claim | None]:
        """Store ``played`` and move its match on; with ``then_claim``, claim the match's
        next turn in the same transaction if it goes on (else the claim is ``None``)."""
        return await self._records.submit((played, then_claim))

    async def close(self) -> None:
        """Wait for the claims and records submitted so far."""
        await self._claims.close()
        await self._records.close()

    async def _transact(
        self, write: Callable[..., list[R]], items: list[T], *, single: bool
    ) -> list[R]:
        now, lock = self.platform.clock.now(), not self.platform.db.is_sqlite
        # A turn lost with its record is re-sent under the same idempotency key.
        return await self.platform.db.transact(
            lambda c: write(c, items, now, lock=lock), durable=False, single=single
        )
