"""Which agent gets a slot, pure.

Eligible: the slot's role, a dispatchable status (ACTIVE, DEGRADED,
PROBATION), no admin hold, not cooling down, not failed earlier in this run,
and not already holding another slot of the same phase for the same
candidate (so that, say, five scout slots reach five distinct scouts).

Ranking: status tier first (ACTIVE, then DEGRADED, then PROBATION); inside a
tier, reputation, highest first, with exploration: the agents whose reputation
is within ``band`` of the tier's best are equally likely to be offered the
slot (one draw from the caller's seeded generator). A newcomer (reputation 0,
neutral) therefore gets tried beside established agents of similar standing,
while an agent ``band`` or more behind the best is never preferred by chance.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from palaestra.rules.status import DISPATCHABLE, Status

__all__ = ["EXPLORATION_BAND", "Contender", "Roster", "eligible", "rank", "select"]

#: Reputations (in [-1, 1]) closer than this may swap places by chance.
EXPLORATION_BAND: Final = 0.15

_TIER: Final = {status: index for index, status in enumerate(DISPATCHABLE)}


@dataclass(frozen=True, slots=True)
class Contender:
    """What selection needs to know of an agent."""

    agent_id: str
    role: str
    status: Status
    reputation: float = 0.0
    hold: bool = False
    cooldown_until: float | None = None


def eligible(
    agents: Iterable[Contender],
    role: str,
    now: float,
    *,
    failed_in_run: Collection[str] = (),
    taken: Collection[str] = (),
) -> list[Contender]:
    """The agents that may receive a slot of ``role`` at ``now``."""
    # Written out rather than calling _is_eligible: this runs for every agent of every slot.
    return [
        a
        for a in agents
        if a.role == role
        and a.status in _TIER
        and not a.hold
        and (a.cooldown_until is None or a.cooldown_until <= now)
        and a.agent_id not in failed_in_run
        and a.agent_id not in taken
    ]


@dataclass(frozen=True, slots=True)
class Roster:
    """The agents of one role that may be chosen at one moment, prepared once for many slots.

    Each tier (ACTIVE, DEGRADED, PROBATION) holds its agents by reputation, highest
    first (ties in the order given).
    """

    tiers: tuple[tuple[Contender, ...], ...]
    band: float = EXPLORATION_BAND

    @classmethod
    def of(
        cls, agents: Iterable[Contender], role: str, now: float, band: float = EXPLORATION_BAND
    ) -> Roster:
        """The agents eligible for ``role`` at ``now`` (before per-run exclusions)."""
        return cls.prepared(eligible(agents, role, now), band)

    @classmethod
    def prepared(cls, agents: Iterable[Contender], band: float = EXPLORATION_BAND) -> Roster:
        """A roster of agents already known to be eligible."""
        tiers: list[list[Contender]] = [[] for _ in DISPATCHABLE]
        for agent in agents:
            tiers[_TIER[agent.status]].append(agent)
        return cls(tuple(tuple(sorted(t, key=lambda a: -a.reputation)) for t in tiers), band)

    def pick(
        self,
        rng: random.Random,
        *,
        failed_in_run: Collection[str] = (),
        taken: Collection[str] = (),
    ) -> Contender | None:
        """The agent for one slot: the best tier with anyone left, then one draw among
        those within ``band`` of its best remaining reputation."""
        for tier in self.tiers:
            top: float | None = None
            close: list[Contender] = []
            for agent in tier:
                if agent.agent_id in failed_in_run or agent.agent_id in taken:
                    continue
                if top is None:
                    top = agent.reputation
                elif agent.reputation <= top - self.band:
                    break
                close.append(agent)
            if close:
                return close[0] if len(close) == 1 else close[rng.randrange(len(close))]
        return None


def rank(
    agents: Sequence[Contender], rng: random.Random, band: float = EXPLORATION_BAND
) -> list[Contender]:
    """``agents`` (already eligible) in the order they would be offered slots, one by one."""
    roster = Roster.prepared(agents, band)
    order: list[Contender] = []
    chosen: set[str] = set()
    while (head := roster.pick(rng, taken=chosen)) is not None:
        order.append(head)
        chosen.add(head.agent_id)
    return order


def select(
    agents: Iterable[Contender],
    role: str,
    now: float,
    rng: random.Random,
    *,
    failed_in_run: Collection[str] = (),
    taken: Collection[str] = (),
    band: float = EXPLORATION_BAND,
) -> Contender | None:
    """The best eligible agent for a slot, or ``None`` (then a house agent serves it).

    ``rank(eligible(...), rng, band)[0]``, with the same draw.
    """
    return Roster.of(agents, role, now, band).pick(rng, failed_in_run=failed_in_run, taken=taken)
