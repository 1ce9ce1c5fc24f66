"""One retention runner at a time, across processes and stores: a lease in ``meta``.

The lease is a row (``retention.lease`` -> "<holder> <until>"), taken by compare-and-set,
renewed between batches and given back at the end; a runner that died leaves a lease
that runs out after :data:`LEASE_S`, so the next pass after that takes it over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from palaestra.errors import PalaestraError
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.store.models import Meta

__all__ = ["LEASE_S", "Lease", "LeaseLost"]

LEASE_S: Final = 300.0
_KEY: Final = "retention.lease"


class LeaseLost(PalaestraError):
    """Another retention runner took over the lease: this pass stops where it is."""


@dataclass
class Lease:
    platform: Platform
    holder: str = ""
    until: float = 0.0

    async def take(self) -> bool:
        """``True`` if this runner now holds the lease."""
        self.holder = self.holder or new_id()
        now = self.platform.clock.now()
        until = now + LEASE_S
        mine = f"{self.holder} {until!r}"

        def work(connection: Connection) -> bool:
            held = connection.execute(select(Meta.value).where(Meta.key == _KEY)).scalar()
            if held is None:
                try:
                    with connection.begin_nested():
                        connection.execute(insert(Meta).values(key=_KEY, value=mine))
                except IntegrityError:
                    return False
                return True
            holder, _, held_until = held.partition(" ")
            if holder != self.holder and float(held_until or 0) > now:
                return False
            swapped = connection.execute(
                update(Meta).where(Meta.key == _KEY, Meta.value == held).values(value=mine)
            )
            return swapped.rowcount == 1

        taken = await self.platform.db.transact(work)
        if taken:
            self.until = until
        return taken

    async def keep(self) -> None:
        """Renew the lease once half of it has passed; :class:`LeaseLost` if it was taken."""
        if self.platform.clock.now() < self.until - LEASE_S / 2:
            return
        if not await self.take():
            raise LeaseLost

    async def release(self) -> None:
        def work(connection: Connection) -> None:
            connection.execute(
                delete(Meta).where(Meta.key == _KEY, Meta.value.startswith(self.holder + " "))
            )

        await self.platform.db.transact(work)
