"""The statuses of a cage.v1 match and of its turns."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MatchStatus", "TurnStatus"]


class MatchStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SCORED = "SCORED"
    VOIDED = "VOIDED"

    @property
    def finished(self) -> bool:
        return self in (MatchStatus.SCORED, MatchStatus.VOIDED)


class TurnStatus(StrEnum):
    RUNNING = "RUNNING"
    OK = "OK"
    FAILED = "FAILED"
