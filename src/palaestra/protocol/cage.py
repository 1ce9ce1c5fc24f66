"""cage.v1 messages: the ownership challenge and the match turn."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from palaestra.protocol.models import InvalidMessage, WireModel
from palaestra.protocol.violations import json_type

__all__ = [
    "CageRequest",
    "ChallengeReply",
    "ChallengeRequest",
    "Side",
    "TurnReply",
    "TurnRequest",
    "challenge_problem",
    "idempotency_key",
    "parse_cage_request",
    "turn_problem",
]


class Side(StrEnum):
    """Which side of a match an entrant plays."""

    ATTACKER = "attacker"
    DEFENDER = "defender"


class ChallengeRequest(WireModel):
    """Sent once at registration: the endpoint proves control by echoing the nonce."""

    type: Literal["challenge"] = "challenge"
    nonce: str


class ChallengeReply(WireModel):
    nonce: str


class TurnRequest(WireModel):
    """One move of a match: the whole context the entrant gets for this turn."""

    type: Literal["turn"] = "turn"
    match_id: str
    turn: Annotated[int, Field(ge=1)]
    your_role: Literal["attacker", "defender"]
    ruleset: Literal["cage.v1"] = "cage.v1"
    deadline_ms: Annotated[int, Field(ge=0)]
    payload: str

    @property
    def side(self) -> Side:
        return Side(self.your_role)


class TurnReply(WireModel):
    message: str


CageRequest = ChallengeRequest | TurnRequest


def idempotency_key(match_id: str, turn: int) -> str:
    """The ``idempotency-key`` header of a turn: ``<match_id>:<turn>``."""
    return f"{match_id}:{turn}"


def parse_cage_request(body: Any) -> CageRequest:
    """Tell a cage.v1 POST body apart by its ``type`` and validate it."""
    kind = body.get("type") if isinstance(body, dict) else None
    if kind == "challenge":
        return ChallengeRequest.parse(body)
    if kind == "turn":
        return TurnRequest.parse(body)
    raise InvalidMessage(f"Validation failed: type: unknown message type {kind!r}")


def challenge_problem(reply: Any, nonce: str) -> str | None:
    """Why a parsed challenge reply does not prove control of the endpoint (``None``: it does)."""
    if not isinstance(reply, dict):
        return f"Validation failed: body: expected an object, got {json_type(reply)}"
    if "nonce" not in reply:
        return "Validation failed: Missing nonce"
    if reply["nonce"] != nonce:
        return "Challenge failed: the reply did not echo the nonce"
    return None


def turn_problem(reply: Any) -> str | None:
    """Why a parsed turn reply is not a move (``None``: it is): an object with a string message."""
    if not isinstance(reply, dict):
        return f"Validation failed: body: expected an object, got {json_type(reply)}"
    if "message" not in reply:
        return "Validation failed: Missing message"
    if not isinstance(reply["message"], str):
        return f"Validation failed: message: expected a string, got {json_type(reply['message'])}"
    return None
