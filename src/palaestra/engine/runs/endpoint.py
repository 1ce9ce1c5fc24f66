"""Where the completion endpoint stands, for the runs' steppers to judge a missed callback.

An agent that answers a dispatch 202 delivers its answer to the API's completion endpoint. If
that endpoint is down while the answer is due, the callback is refused, and the task's
timeout would be the platform's fault charged to the agent. So each API process records when
it started (``up_since``) and, when the runs are stepped elsewhere (scale-out: workers step
them while the API may be down), beats every :data:`BEAT_S` seconds (``alive_at``). The
stepper reads both with a batch's facts (:func:`read_endpoint`), and ``rules.runplan``
decides whose fault the missed callback was (:class:`CallbackEndpoint`).

With many API processes, any one restarting counts: a missed callback near it is voided,
in the agent's favour.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, delete, select
from sqlalchemy.exc import IntegrityError

from palaestra.platform import Platform
from palaestra.rules.runplan import CallbackEndpoint
from palaestra.store.models import Meta

__all__ = ["BEAT_S", "announce_up", "beat", "read_endpoint"]

#: How often an API process serving apart from the steppers says it is alive.
BEAT_S: Final = 1.0
_UP_SINCE: Final = "completion_endpoint.up_since"
_ALIVE_AT: Final = "completion_endpoint.alive_at"
_READ: Final = select(Meta.key, Meta.value).where(Meta.key.in_((_UP_SINCE, _ALIVE_AT)))


async def announce_up(platform: Platform, *, beating: bool) -> None:
    """Record that the completion endpoint starts serving now; ``beating``: it will beat
    (else any earlier beat is forgotten, since nothing will renew it)."""
    now = repr(platform.clock.now())
    await _put(platform, {_UP_SINCE: now, _ALIVE_AT: now if beating else None})


async def beat(platform: Platform) -> None:
    """Record that the completion endpoint is alive now."""
    await _put(platform, {_ALIVE_AT: repr(platform.clock.now())})


async def _put(platform: Platform, values: dict[str, str | None]) -> None:
    """Write (``None``: delete) the rows; two API processes starting at once may both insert
    one: the loser merges again, onto the winner's row."""
    for attempt in range(2):
        try:
            async with platform.db.session() as session, session.begin():
                for key, value in values.items():
                    if value is None:
                        await session.execute(delete(Meta).where(Meta.key == key))
                    else:
                        await session.merge(Meta(key=key, value=value))
            return
        except IntegrityError:
            if attempt:
                raise


def read_endpoint(connection: Connection) -> CallbackEndpoint | None:
    """The endpoint as last recorded; None when no API process ever said it started."""
    found: dict[str, str] = dict(connection.execute(_READ).all())
    if _UP_SINCE not in found:
        return None
    alive = found.get(_ALIVE_AT)
    return CallbackEndpoint(float(found[_UP_SINCE]), None if alive is None else float(alive))
