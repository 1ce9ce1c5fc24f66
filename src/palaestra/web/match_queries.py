"""What the match pages and the fighter page show about cage.v1, read straight from the tables.

A match's secrets follow the API (``api.match_schemas``): payloads, the seed
and the material stay hidden while the match is open and are shown once it
is scored or voided. Replies and the judge's findings are shown as they come.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import select

from palaestra.engine.ratings.live import live_ratings
from palaestra.platform import Platform
from palaestra.rules.cage.matchflow import MatchStatus, TurnStatus
from palaestra.rules.producers import BASELINE_UNRATED, counts_for_ratings, producer_label
from palaestra.rules.ratings import FighterRatings
from palaestra.rules.reasons import public_reason
from palaestra.store.models import Agent, Match, Turn
from palaestra.web.queries import MATCH_COLUMNS, stored
from palaestra.web.transcript import (
    Finding,
    PayloadPart,
    Segment,
    explain,
    findings_of,
    highlight,
    payload_parts,
)

__all__ = ["EntrantView", "MatchPage", "TurnView", "fighter_ratings", "match_page"]

FINISHED: Final = (MatchStatus.SCORED, MatchStatus.VOIDED)


@dataclass(frozen=True, slots=True)
class EntrantView:
    fighter_id: str
    name: str
    entrant_type: str | None
    fighter_class: str | None
    executor: str | None


@dataclass(frozen=True, slots=True)
class TurnView:
    turn: int
    side: str
    fighter_id: str
    status: str
    message: str | None
    segments: list[Segment]
    findings: list[Finding]
    utility: dict[str, Any] | None  # {held, answers}, defender turns only
    reason: str | None
    latency_ms: float | None
    payload: list[PayloadPart] | None  # shown once the match ended
    sends: int
    started_at: float
    finished_at: float | None
    producer: str | None = None  # rules.producers.Producer: who wrote the move
    produced_by: str = ""  # its label, e.g. "house model gemma-3-270m-q4_k_m"


@dataclass(frozen=True, slots=True)
class MatchPage:
    id: str
    ruleset: str
    kind: str
    status: str
    outcome: str | None
    decided_by: str | None
    void_reason: str | None
    explanation: str
    decisive_turn: int | None
    attacker: EntrantView
    defender: EntrantView
    turns: list[TurnView]
    deadline_ms: int
    created_at: float
    finished_at: float | None
    revealed: bool
    seed: int | None
    secret: dict[str, Any] | None
    unrated: str | None = None  # why a rated match moves no rating (the baseline played)

    @property
    def open(self) -> bool:
        return not self.revealed


def _entrant(stored: Any, fighter: Agent | None, fighter_id: str) -> EntrantView:
    data = stored if isinstance(stored, dict) else {}
    return EntrantView(
        fighter_id=fighter_id,
        name=str(data.get("name") or (fighter.name if fighter else fighter_id)),
        entrant_type=data.get("entrant_type") or (fighter.entrant_type if fighter else None),
        fighter_class=data.get("class") or (fighter.fighter_class if fighter else None),
        executor=data.get("executor"),
    )


def _utility(findings: dict[str, Any]) -> dict[str, Any] | None:
    utility = findings.get("utility")
    if not isinstance(utility, dict):
        return None
    answers = utility.get("answers")
    return {
        "held": bool(utility.get("held")),
        "answers": [str(a) for a in answers] if isinstance(answers, list) else [],
    }


def _turn(turn: Turn, reveal: bool) -> TurnView:
    stored = turn.findings if isinstance(turn.findings, dict) else {}
    message = turn.message
    found = findings_of(stored, len(message)) if message is not None else []
    sends = stored.get("sends")
    return TurnView(
        turn=turn.turn,
        side=turn.side,
        fighter_id=turn.fighter_id,
        status=turn.status,
        message=message,
        segments=highlight(message, found) if message is not None else [],
        findings=found,
        utility=_utility(stored) if turn.side == "defender" else None,
        reason=public_reason(turn.reason),  # a public page: the kind and status only
        latency_ms=turn.latency_ms,
        payload=payload_parts(turn.payload) if reveal else None,
        sends=sends if isinstance(sends, int) else 1,
        started_at=turn.started_at,
        finished_at=turn.finished_at,
        producer=turn.producer,
        produced_by=producer_label(turn.producer, turn.model_id),
    )


async def match_page(platform: Platform, match_id: str) -> MatchPage | None:
    async with platform.db.session() as session:
        match = await session.get(Match, match_id)
        if match is None:
            return None
        turns = list(
            await session.scalars(select(Turn).where(Turn.match_id == match_id).order_by(Turn.turn))
        )
        attacker = await session.get(Agent, match.attacker_id)
        defender = await session.get(Agent, match.defender_id)
    reveal = match.status in FINISHED
    material = match.material if isinstance(match.material, dict) else {}
    entrants = material.get("entrants") or {}
    views = [_turn(turn, reveal) for turn in turns]
    void_reason = public_reason(match.void_reason)
    explanation, decisive = explain(
        match.status,
        match.outcome,
        match.decided_by,
        void_reason,
        [
            (
                t.turn,
                t.side,
                t.status == TurnStatus.FAILED,
                t.findings,
                bool((t.utility or {}).get("held")),
            )
            for t in views
        ],
    )
    secret = material.get("secret") if reveal else None
    return MatchPage(
        **stored(match, (*MATCH_COLUMNS, "ruleset", "deadline_ms")),
        void_reason=void_reason,
        explanation=explanation,
        decisive_turn=decisive,
        attacker=_entrant(entrants.get("attacker"), attacker, match.attacker_id),
        defender=_entrant(entrants.get("defender"), defender, match.defender_id),
        turns=views,
        revealed=reveal,
        seed=match.seed if reveal else None,
        secret=secret if isinstance(secret, dict) else None,
        unrated=None if counts_for_ratings(t.producer for t in turns) else BASELINE_UNRATED,
    )


async def fighter_ratings(platform: Platform, fighter_id: str) -> FighterRatings | None:
    """The fighter's live attack and defence ratings; ``None`` before its first rated match."""
    return (await live_ratings(platform, [fighter_id])).get(fighter_id)
