"""The kinds of cage.v1 entrant, one closed set from the database to the API. Pure."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EntrantType"]


class EntrantType(StrEnum):
    """What plays a fighter's turns, in the order the leaderboard compares them."""

    HARNESS = "harness"  # the owner's endpoint
    MODEL = "model"  # a model the owner names (a provider's, or the local one)
    HOUSE = "house"  # the platform's own model
