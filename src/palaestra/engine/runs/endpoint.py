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
    async with platform.db.session() as session, session.begin():
        await session.merge(Meta(key=_UP_SINCE, value=now))
        if beating:
            await session.merge(Meta(key=_ALIVE_AT, value=now))
        else:
            await session.execute(delete(Meta).where(Meta.key == _ALIVE_AT))


async def beat(platform: Platform) -> None:
    """Record that the completion endpoint is alive now."""
    async with platform.db.session() as session, session.begin():
        await session.merge(Meta(key=_ALIVE_AT, value=repr(platform.clock.now())))


def read_endpoint(connection: Connection) -> CallbackEndpoint | None:
    """The endpoint as last recorded; None when no API process ever said it started."""
    found: dict[str, str] = dict(connection.execute(_READ).all())
    if _UP_SINCE not in found:
        return None
    alive = found.get(_ALIVE_AT)
    return CallbackEndpoint(float(found[_UP_SINCE]), None if alive is None else float(alive))
