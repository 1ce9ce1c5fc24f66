"""cage.v1 messages: the ownership challenge and the match turn."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from palaestra.protocol.jsonwire import dumps
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
    "turn_message",
    "turn_problem",
    "turn_warning",
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
    """Why a parsed turn reply is not a move (``None``: it is).

    The seed fails a turn for "a missing message" only: a reply without the key. Any
    value it holds is a message (see :func:`turn_message`), ``null`` included (an empty
    one); our stricter rule, a string, only warns (:func:`turn_warning`).
    """
    if not isinstance(reply, dict):
        return f"Validation failed: body: expected an object, got {json_type(reply)}"
    if "message" not in reply:
        return "Validation failed: Missing message"
    return None


def turn_message(reply: dict[str, Any]) -> str:
    """The text of a move :func:`turn_problem` passed: a string as sent, ``null`` as an
    empty message, any other value as its compact JSON text (``42`` is ``"42"``)."""
    message = reply["message"]
    if message is None:
        return ""
    return message if isinstance(message, str) else dumps(message).decode()


def turn_warning(reply: Any) -> str | None:
    """What our stricter rule (a string message) finds in a move the seed accepts, or None."""
    if turn_problem(reply) is not None or isinstance(reply["message"], str):
        return None
    if reply["message"] is None:
        return "message: expected a string, got null (taken as an empty message)"
    return f"message: expected a string, got {json_type(reply['message'])} (taken as its JSON text)"
