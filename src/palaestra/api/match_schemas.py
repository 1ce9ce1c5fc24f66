"""Bodies of the match API. A running match never shows its secret material or payloads.

The defender's payload carries the access code and the attacker's carries
the hijack phrase, so both stay hidden, with the seed and the task, until the
match is scored or voided; then everything is shown, so that anyone can check
the judge. Fighters' keys and claim codes are never part of a match.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from palaestra.engine.cage.matches import MatchTranscript
from palaestra.rules.producers import Producer, counts_for_ratings, producer_of
from palaestra.rules.reasons import owner_reason, public_reason
from palaestra.store.models import Match, Turn

__all__ = ["EntrantOut", "MatchCreate", "MatchCreated", "MatchOut", "MatchSummary", "TurnOut"]


class MatchCreate(BaseModel):
    """Two fighters to match. An owner sets one of its fighters against another owner's,
    which must accept the challenge: friendly matches from other owners
    (``friendly_challenges``), or rated challenges for a rated one; 403 otherwise."""

    model_config = ConfigDict(extra="forbid", str_max_length=64, strict=True)

    attacker: str = Field(description="The attacking fighter's id.")
    defender: str = Field(
        description="The defending fighter's id: another fighter than the attacker, of "
        "another owner (400 otherwise)."
    )
    rated: bool | None = Field(
        default=None,
        description="Ask for a rated match. By default the admin's matches are rated and an "
        "owner's are friendlies (never rated); an owner's rated match needs the operator's "
        "PALAESTRA_OWNER_RATED_MATCHES, an opponent that accepts rated challenges, and room "
        "under the per-pair cap (403 or 429 otherwise).",
    )


class MatchCreated(BaseModel):
    match_id: str


class EntrantOut(BaseModel):
    """An entrant as it stood when the match was made."""

    fighter_id: str
    name: str
    entrant_type: str | None
    fighter_class: str | None = Field(serialization_alias="class")
    sandbox_attested: bool
    harness_name: str | None
    executor: str = Field(
        description="Who was to play for the fighter when the match was made: harness, "
        "model:<name> (an owner's model), house:<model id> (the house model) or "
        "house-baseline (canned lines); each turn's producer says who did"
    )

    @classmethod
    def of(cls, data: dict[str, Any]) -> EntrantOut:
        return cls(
            fighter_id=data["fighter_id"],
            name=data["name"],
            entrant_type=data.get("entrant_type"),
            fighter_class=data.get("class"),
            sandbox_attested=bool(data.get("sandbox_attested")),
            harness_name=data.get("harness_name"),
            executor=data.get("executor", ""),
        )


class TurnOut(BaseModel):
    turn: int
    side: str
    fighter_id: str
    status: str = Field(description="RUNNING, OK or FAILED")
    message: str | None
    reason: str | None = Field(description="Why the turn failed")
    latency_ms: float | None
    findings: dict[str, Any] | None = Field(
        description="The judge's findings on a defender's reply: leak, partial-disclosure "
        "and hijack evidence (secret, transformation: the chain of views, chain, rule, how, "
        "start, end, excerpt, decoded) and utility. A partial disclosure (two of the access "
        "code's three parts) is shown but decides nothing"
    )
    payload: str | None = Field(description="The turn's payload; shown once the match ended")
    producer: Producer | None = Field(
        description="Who wrote the move: agent (the fighter's harness or its owner's model), "
        "house_model (the platform's model, named by model_id) or house_baseline (canned, "
        "deterministic lines; a match it played in is never rated); null until played"
    )
    model_id: str | None = Field(
        description="The model that wrote the move, when a model did (the provider's or the "
        "local model's id); null for a harness and the house baseline"
    )
    started_at: float
    finished_at: float | None

    @classmethod
    def of(cls, turn: Turn, *, reveal: bool, whole_reason: bool = False) -> TurnOut:
        shown = {
            # Anyone reads the kind and status; the fighter's owner and the admin the line.
            "reason": owner_reason(turn.reason) if whole_reason else public_reason(turn.reason),
            "payload": turn.payload if reveal else None,
            "producer": producer_of(turn.producer),
        }
        return cls.model_validate(turn, from_attributes=True).model_copy(update=shown)


class MatchSummary(BaseModel):
    match_id: str
    ruleset: str
    kind: str = Field(description="rated, or friendly (played and shown, never rated)")
    status: str = Field(description="PENDING, RUNNING, SCORED or VOIDED")
    attacker: EntrantOut
    defender: EntrantOut
    outcome: str | None = Field(description="attacker, defender or draw, once scored")
    decided_by: str | None = Field(description="leak, hijack, utility or forfeit")
    void_reason: str | None
    next_turn: int
    deadline_ms: int
    created_at: float
    finished_at: float | None

    @classmethod
    def fields_of(cls, match: Match) -> dict[str, Any]:
        entrants = match.material.get("entrants", {})
        return {
            "match_id": match.id,
            "ruleset": match.ruleset,
            "kind": match.kind,
            "status": match.status,
            "attacker": EntrantOut.of(entrants["attacker"]),
            "defender": EntrantOut.of(entrants["defender"]),
            "outcome": match.outcome,
            "decided_by": match.decided_by,
            "void_reason": public_reason(match.void_reason),
            "next_turn": match.next_turn,
            "deadline_ms": match.deadline_ms,
            "created_at": match.created_at,
            "finished_at": match.finished_at,
        }

    @classmethod
    def of(cls, match: Match) -> MatchSummary:
        return cls(**cls.fields_of(match))


class MatchOut(MatchSummary):
    turns: list[TurnOut]
    seed: int | None = Field(description="The random source's seed; shown once the match ended")
    material: dict[str, Any] | None = Field(
        description="Access code, hijack phrase, user task with its answer, fence key; "
        "shown once the match ended"
    )
    baseline_played: bool = Field(
        description="The house baseline (canned lines, no model) played at least one turn: "
        "the match is scored and shown, but moves no rating and is left out of the "
        "published leaderboard"
    )

    @classmethod
    def of_transcript(
        cls, transcript: MatchTranscript, readers_of: frozenset[str] = frozenset()
    ) -> MatchOut:
        """``readers_of``: the fighters whose failed turns the caller reads in whole (its own;
        the admin all), and the void reason too when it reads both."""
        match = transcript.match
        reveal = transcript.finished
        fields = cls.fields_of(match)
        if {match.attacker_id, match.defender_id} <= readers_of:
            fields["void_reason"] = owner_reason(match.void_reason)
        return cls(
            **fields,
            turns=[
                TurnOut.of(turn, reveal=reveal, whole_reason=turn.fighter_id in readers_of)
                for turn in transcript.turns
            ],
            seed=match.seed if reveal else None,
            material=match.material["secret"] if reveal else None,
            baseline_played=not counts_for_ratings(t.producer for t in transcript.turns),
        )
