"""Live cage.v1 ratings: an OpenSkill (Weng-Lin) attack and defence rating per fighter.

Decisions, as ``spec/CAGE_V1.md`` asks:

- Model: ``openskill``'s ``BradleyTerryFull`` with its defaults (mu 25,
  sigma 25/3, beta 25/6, tau 25/300), the Bayesian cousin of the published
  Bradley-Terry fit. ``tau`` adds a little uncertainty before every update so
  that a fighter whose owner improves it is not frozen by its own history.
- A match is a game of two one-player teams: the attacker's *attack* rating
  against the defender's *defence* rating. Only those two ratings move.
- The result comes from the match row: ``attacker`` or ``defender`` wins, a
  ``draw`` is a tie. A forfeit is a loss for the side that forfeited, which
  the referee already records as a win for the other side. A voided match
  (status VOIDED) was never scored and is never rated; neither is anything
  not yet SCORED.
- The conservative estimate is ``mu - 3 sigma``; a fighter's live score (the
  live table's order) is the mean of its two conservative estimates.

Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from openskill.models import BradleyTerryFull

from palaestra.rules.cage.matchflow import MatchStatus
from palaestra.rules.cage.outcome import Winner

__all__ = [
    "BETA",
    "MU",
    "SIGMA",
    "FighterRatings",
    "Rating",
    "Record",
    "Skill",
    "live_score",
    "rate",
    "result_of",
]

_MODEL: Final = BradleyTerryFull()
MU: Final[float] = float(_MODEL.mu)
SIGMA: Final[float] = float(_MODEL.sigma)
BETA: Final[float] = float(_MODEL.beta)


class Skill(StrEnum):
    """Which of a fighter's two ratings: in attack or in defence."""

    ATTACK = "attack"
    DEFENCE = "defence"


#: openskill ranks (lower is better) of (attacker, defender) for each result.
_RANKS: Final = {Winner.ATTACKER: [0, 1], Winner.DEFENDER: [1, 0], Winner.DRAW: [0, 0]}


@dataclass(frozen=True, slots=True)
class Rating:
    """An OpenSkill rating: a mean and its uncertainty."""

    mu: float = MU
    sigma: float = SIGMA

    @property
    def conservative(self) -> float:
        """``mu - 3 sigma``: what the fighter is very probably at least worth."""
        return self.mu - 3.0 * self.sigma


def result_of(status: str, outcome: str | None) -> Winner | None:
    """What a match row counts as for ratings, or ``None`` when it must not be rated."""
    if status != MatchStatus.SCORED or outcome is None:
        return None
    try:
        return Winner(outcome)
    except ValueError:
        return None


def rate(attack: Rating, defence: Rating, result: Winner) -> tuple[Rating, Rating]:
    """The attacker's attack rating and the defender's defence rating after one match."""
    teams = [
        [_MODEL.rating(mu=attack.mu, sigma=attack.sigma)],
        [_MODEL.rating(mu=defence.mu, sigma=defence.sigma)],
    ]
    (new_attack,), (new_defence,) = _MODEL.rate(teams, ranks=list(_RANKS[result]))
    return (
        Rating(float(new_attack.mu), float(new_attack.sigma)),
        Rating(float(new_defence.mu), float(new_defence.sigma)),
    )


def live_score(attack: Rating, defence: Rating) -> float:
    """The live table's order: the mean of the two conservative estimates."""
    return (attack.conservative + defence.conservative) / 2.0


@dataclass(frozen=True, slots=True)
class Record:
    """Rated matches on one side and how they ended for this fighter."""

    matches: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0


_UNRATED = Rating()
_NO_RECORD = Record()


@dataclass(frozen=True, slots=True)
class FighterRatings:
    """A fighter's two live ratings and records (defaults until it has played)."""

    attack: Rating = _UNRATED
    defence: Rating = _UNRATED
    attack_record: Record = _NO_RECORD
    defence_record: Record = _NO_RECORD
