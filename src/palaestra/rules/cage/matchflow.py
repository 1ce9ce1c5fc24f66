"""The statuses of a cage.v1 match and of its turns."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["OPEN_MATCH_STATUSES", "MatchKind", "MatchStatus", "TurnStatus"]


class MatchKind(StrEnum):
    """Rated matches move the ratings and the leaderboard; friendlies are played, judged,
    shown and exported as friendlies, and never rated."""

    RATED = "rated"
    FRIENDLY = "friendly"


class MatchStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SCORED = "SCORED"
    VOIDED = "VOIDED"

    @property
    def finished(self) -> bool:
        return self in (MatchStatus.SCORED, MatchStatus.VOIDED)


#: The statuses of a match not finished yet: waiting for its first turn, or being played.
OPEN_MATCH_STATUSES: Final[tuple[str, ...]] = tuple(s.value for s in MatchStatus if not s.finished)


class TurnStatus(StrEnum):
    RUNNING = "RUNNING"
    OK = "OK"
    FAILED = "FAILED"
