"""Where the completion endpoint stands, for the runs' steppers to judge a missed callback.

An agent that answers a dispatch 202 delivers its answer to the API's completion endpoint. If
that endpoint is down while the answer is due, the callback is refused, and the task's
timeout would be the platform's fault charged to the agent. So each API process records when
it started (``up_since``) and, when the runs are stepped elsewhere (scale-out: workers step
them while the API may be down), beats every :data:`BEAT_S` seconds (``alive_at``); a
process starting keeps its predecessor's last beat (``down_since``), so that the gap between
them is known. The stepper reads these with a batch's facts (:func:`read_endpoint`), as does
the completion endpoint for a callback past its deadline, and ``rules.runs.runplan`` decides
whose fault the missed (or late) callback was (:class:`CallbackEndpoint`).

With many API processes, any one restarting counts: a callback due near it is the
platform's to answer for, in the agent's favour.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, delete, select
from sqlalchemy.exc import IntegrityError

from palaestra.platform import Platform
from palaestra.rules.runs.runplan import CallbackEndpoint
from palaestra.store.models import Meta

__all__ = ["BEAT_S", "announce_up", "beat", "read_endpoint"]

#: How often an API process serving apart from the steppers says it is alive.
BEAT_S: Final = 1.0
_UP_SINCE: Final = "completion_endpoint.up_since"
_ALIVE_AT: Final = "completion_endpoint.alive_at"
_DOWN_SINCE: Final = "completion_endpoint.down_since"
_READ: Final = select(Meta.key, Meta.value).where(Meta.key.in_((_UP_SINCE, _ALIVE_AT, _DOWN_SINCE)))


async def announce_up(platform: Platform, *, beating: bool) -> None:
    """Record that the completion endpoint starts serving now; ``beating``: it will beat
    (else any earlier beat is forgotten, since nothing will renew it). The last beat before
    now, if any, is when it went down (else that is not known)."""
    async with platform.db.read() as connection:
        before = await connection.run_sync(read_endpoint)
    last = None if before is None or before.alive_at is None else repr(before.alive_at)
    now = repr(platform.clock.now())
    await _put(platform, {_UP_SINCE: now, _ALIVE_AT: now if beating else None, _DOWN_SINCE: last})


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
    alive, down = found.get(_ALIVE_AT), found.get(_DOWN_SINCE)
    return CallbackEndpoint(
        float(found[_UP_SINCE]),
        None if alive is None else float(alive),
        None if down is None else float(down),
    )
