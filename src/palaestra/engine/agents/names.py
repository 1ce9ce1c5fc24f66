"""An owner's names: one agent of a name per arena, so that two registrations of the same
name are a mistake said at once, not two agents told apart by their ids."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.errors import Conflict, InvalidRequest
from palaestra.protocol.constants import Arena
from palaestra.store.models import Agent

__all__ = ["ensure_unused", "valid_name"]


def valid_name(name: str) -> str:
    """``name`` without surrounding spaces, if 1 to 200 characters remain."""
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidRequest("name must be 1 to 200 characters")
    return name


async def ensure_unused(session: AsyncSession, owner_id: str, arena: Arena, name: str) -> None:
    """Raise :class:`Conflict` if the owner already has an agent (or, in the cage, a
    fighter) of this name, letter case aside."""
    taken = await session.scalar(
        select(Agent.id)
        .where(
            Agent.owner_id == owner_id,
            Agent.arena == arena,
            func.lower(Agent.name) == name.lower(),
        )
        .limit(1)
    )
    if taken is not None:
        what = "an agent" if arena is Arena.EDGEARENA else "a fighter"
        raise Conflict(
            f"You already have {what} named {name!r} ({taken}); give this one another name"
        )
