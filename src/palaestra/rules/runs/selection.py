"""Which agent gets a slot, pure.

Eligible: the slot's role, a dispatchable status (ACTIVE, DEGRADED,
PROBATION), no admin hold, not cooling down, not failed earlier in this run,
and not already holding another slot of the same phase for the same
candidate (so that, say, five scout slots reach five distinct scouts).

Ranking: status tier first (ACTIVE, then DEGRADED, then PROBATION); inside a
tier, reputation, highest first, with exploration: the agents whose reputation
is within ``band`` of the tier's best are equally likely to be offered the
slot (a draw from the caller's seeded generator). A newcomer (reputation 0,
neutral) therefore gets tried beside established agents of similar standing,
while an agent ``band`` or more behind the best is never preferred by chance.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from palaestra.rules.status import DISPATCHABLE, Status

__all__ = [
    "EXPLORATION_BAND",
    "Contender",
    "Draw",
    "HashDraw",
    "Roster",
    "eligible",
    "rank",
    "select",
]

#: Reputations (in [-1, 1]) closer than this may swap places by chance.
EXPLORATION_BAND: Final = 0.15

_TIER: Final = {status: index for index, status in enumerate(DISPATCHABLE)}
#: Draws that land on an excluded agent before the band is listed out instead.
_REDRAWS: Final = 8


class Draw(Protocol):
    """What a pick needs of a random source (``random.Random`` is one)."""

    def randrange(self, stop: int, /) -> int: ...


class HashDraw:
    """A reproducible draw from ``seed`` alone. Seeding a ``random.Random`` fills its
    2.5 KB state (~5 us) for what is usually a single draw per slot; here the n-th
    draw is the BLAKE2b hash of the seed and n (~1 us), reduced to the range (bias
    below 2**-50 for the few hundred agents a roster holds)."""

    __slots__ = ("_count", "_seed")

    def __init__(self, seed: str) -> None:
        self._seed = seed.encode()
        self._count = 0

    def randrange(self, stop: int, /) -> int:
        if stop <= 0:
            raise ValueError("empty range for randrange()")
        self._count += 1
        digest = hashlib.blake2b(self._seed, digest_size=8, salt=self._count.to_bytes(16))
        return int.from_bytes(digest.digest()) % stop


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
        return cls(tuple(tuple(sorted(t, key=_behind)) for t in tiers), band)

    def pick(
        self,
        rng: Draw,
        *,
        failed_in_run: Collection[str] = (),
        taken: Collection[str] = (),
    ) -> Contender | None:
        """The agent for one slot: the best tier with anyone left, then one draw among
        those within ``band`` of its best remaining reputation (uniform: a draw that
        lands on an excluded agent is drawn again)."""

        def excluded(agent: Contender) -> bool:
            return agent.agent_id in failed_in_run or agent.agent_id in taken

        for tier in self.tiers:
            if tier and not excluded(tier[0]):
                start: int | None = 0  # the usual case, without walking the tier
            else:
                start = next((n for n, agent in enumerate(tier) if not excluded(agent)), None)
            if start is None:
                continue
            # The band ends at the first agent ``band`` or more behind the best remaining one.
            end = bisect_left(tier, self.band - tier[start].reputation, start + 1, key=_behind)
            if end - start == 1:
                return tier[start]
            for _ in range(_REDRAWS):
                agent = tier[start + rng.randrange(end - start)]
                if not excluded(agent):
                    return agent
            close = [agent for agent in tier[start:end] if not excluded(agent)]
            return close[rng.randrange(len(close))]
        return None


def _behind(agent: Contender) -> float:
    """A tier's sort key: reputation, highest first."""
    return -agent.reputation


def rank(agents: Sequence[Contender], rng: Draw, band: float = EXPLORATION_BAND) -> list[Contender]:
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
    rng: Draw,
    *,
    failed_in_run: Collection[str] = (),
    taken: Collection[str] = (),
    band: float = EXPLORATION_BAND,
) -> Contender | None:
    """The best eligible agent for a slot, or ``None`` (then a house agent serves it).

    ``rank(eligible(...), rng, band)[0]``, with the same draw.
    """
    return Roster.of(agents, role, now, band).pick(rng, failed_in_run=failed_in_run, taken=taken)
