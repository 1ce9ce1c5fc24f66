"""An owner's new agents and fighters: one of a name per arena, so that two registrations of
the same name are a mistake said at once, not two agents told apart by their ids."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.errors import Conflict, InvalidRequest
from palaestra.ids import new_id
from palaestra.protocol.constants import Arena
from palaestra.store.models import Agent

__all__ = ["choice", "ensure_unused", "new_entrant", "valid_name"]

E = TypeVar("E", bound=StrEnum)


def valid_name(name: str) -> str:
    """``name`` without surrounding spaces, if 1 to 200 characters remain."""
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidRequest("name must be 1 to 200 characters")
    return name


def choice(kind: type[E], value: str, field: str) -> E:
    """``value`` as one of ``kind``'s members; :class:`InvalidRequest` naming them if not."""
    try:
        return kind(value)
    except ValueError:
        raise InvalidRequest(f"{field} must be one of {', '.join(kind)}") from None


def new_entrant(owner_id: str, name: str, arena: Arena, now: float, **columns: Any) -> Agent:
    """A new agent or fighter of ``owner_id``'s, created ``now``: no failures, no hold and no
    reputation yet, not attested to run in a sandbox; ``columns`` give the rest."""
    return Agent(
        id=new_id(),
        owner_id=owner_id,
        name=name,
        arena=arena,
        sandbox_attested=False,
        consecutive_failures=0,
        hold=False,
        reputation=0.0,
        created_at=now,
        updated_at=now,
        **columns,
    )


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
