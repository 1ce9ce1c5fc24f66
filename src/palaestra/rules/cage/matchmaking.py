"""Which cage.v1 fighters meet next: the pairs whose outcome is most uncertain.

- **Eligible**: ACTIVE, not held, and able to play: a harness whose endpoint
  passed the nonce challenge (only then is its URL stored), or a model or
  house entrant.
- **Never**: a fighter against itself, or two fighters of the same owner.
- **Both seat orders**: a pairing is played twice, sides swapped, so a pairing
  takes two match slots of each of its fighters; a fighter already in
  ``max_per_fighter - 1`` or more matches is left out this round.
- **Score** of a pairing, summed over its two seat orders: ``4 p (1 - p)``
  (1 when the live ratings give the attacker an even chance, near 0 for a
  foregone match) times ``sqrt(sigma_attack^2 + sigma_defence^2)`` (how much
  the match can teach), divided by ``1 + times already played``, so that two
  evenly matched fighters do not meet forever while others wait.
- **Greedy**: best score first, each fighter at most once per round, at most
  ``limit`` pairings. Ties go to the smaller pair of ids (deterministic).

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from scipy.special import ndtr

from palaestra.rules.cage.entrants import EntrantType
from palaestra.rules.ratings import BETA, Rating
from palaestra.rules.status import Status

__all__ = [
    "ELIGIBLE_STATUS",
    "PLAYABLE_TYPES",
    "EligibleFighter",
    "Pairing",
    "eligible",
    "pair_key",
    "select_pairings",
]

ELIGIBLE_STATUS: Final = Status.ACTIVE
#: Entrant types that need no endpoint of their own.
PLAYABLE_TYPES: Final = frozenset({EntrantType.MODEL, EntrantType.HOUSE})
_SEATS_PER_PAIRING: Final = 2
_UNRATED: Final = Rating()


def eligible(status: str, hold: bool, entrant_type: str | None, endpoint_url: str | None) -> bool:
    """May this fighter be scheduled now?"""
    if status != ELIGIBLE_STATUS or hold:
        return False
    if entrant_type == EntrantType.HARNESS:
        return bool(endpoint_url)
    return entrant_type in PLAYABLE_TYPES


@dataclass(frozen=True, slots=True)
class EligibleFighter:
    """An eligible fighter as the scheduler sees it."""

    fighter_id: str
    owner_id: str
    attack: Rating = _UNRATED
    defence: Rating = _UNRATED
    busy: int = 0  # matches it is in now (pending or running)


@dataclass(frozen=True, slots=True)
class Pairing:
    """Two fighters who meet twice: ``first`` attacks ``second``, then the reverse."""

    first: str
    second: str
    score: float

    @property
    def matches(self) -> tuple[tuple[str, str], tuple[str, str]]:
        """The two (attacker, defender) seat orders."""
        return (self.first, self.second), (self.second, self.first)


def pair_key(x: str, y: str) -> tuple[str, str]:
    """The order-free key of a pair of fighters."""
    return (x, y) if x <= y else (y, x)


def select_pairings(
    entrants: Sequence[EligibleFighter],
    *,
    max_per_fighter: int,
    limit: int,
    played: Mapping[tuple[str, str], int] | None = None,
) -> list[Pairing]:
    """The pairings to start now, best first.

    ``played`` counts the matches already played per :func:`pair_key`.
    """
    if limit <= 0:
        return []
    free = [e for e in entrants if e.busy + _SEATS_PER_PAIRING <= max_per_fighter]
    free.sort(key=lambda e: e.fighter_id)
    n = len(free)
    if n < 2:
        return []
    mu_a = np.array([e.attack.mu for e in free])
    sd_a = np.array([e.attack.sigma for e in free])
    mu_d = np.array([e.defence.mu for e in free])
    sd_d = np.array([e.defence.sigma for e in free])
    # score[i, j]: i attacks j
    var = sd_a[:, None] ** 2 + sd_d[None, :] ** 2
    p = ndtr((mu_a[:, None] - mu_d[None, :]) / np.sqrt(2.0 * BETA**2 + var))
    seat = 4.0 * p * (1.0 - p) * np.sqrt(var)
    score = seat + seat.T
    owners = np.array([e.owner_id for e in free], dtype=object)
    allowed = np.triu(owners[:, None] != owners[None, :], k=1)  # i < j, never co-owned
    first, second = np.nonzero(allowed)
    values = score[first, second]
    if played:
        ids = [e.fighter_id for e in free]
        repeats = np.array(
            [played.get((ids[i], ids[j]), 0) for i, j in zip(first, second, strict=True)],
            dtype=np.float64,
        )
        values = values / (1.0 + repeats)
    # Best score first; np.lexsort's last key is the primary one.
    order = np.lexsort((second, first, -values))
    taken = np.zeros(n, dtype=bool)
    chosen: list[Pairing] = []
    for k in order:
        i, j = int(first[k]), int(second[k])
        if taken[i] or taken[j]:
            continue
        taken[i] = taken[j] = True
        chosen.append(Pairing(free[i].fighter_id, free[j].fighter_id, float(values[k])))
        if len(chosen) >= limit or taken.sum() >= n - 1:
            break
    return chosen
