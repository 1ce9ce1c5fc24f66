"""cage.v1: fighters, their entrants, matches and the referee that plays them.

- ``fighters``: create a fighter, prove and claim its endpoint;
- ``entrants``: what plays a turn: a harness endpoint, a model, the house;
- ``matches``: create and read matches and their transcripts;
- ``referee``: plays turns one at a time, judged as they come; ``claims``,
  ``records`` and ``desk`` claim and record the turns of many matches at once;
- ``matchmaker``: pairs fighters and starts rated matches on its own.
"""

from __future__ import annotations

from palaestra.engine.cage.desk import TurnDesk
from palaestra.engine.cage.entrants import (
    BaselineEntrant,
    Entrant,
    HarnessEntrant,
    ModelEntrant,
    Move,
    entrant_for,
    executor_of,
)
from palaestra.engine.cage.fighters import (
    ModelConfig,
    NewFighter,
    claim_endpoint,
    create_fighter,
    get_fighter,
    set_challenges,
)
from palaestra.engine.cage.matches import (
    MatchTranscript,
    create_match,
    get_match,
    list_matches,
    material_of,
)
from palaestra.engine.cage.matchmaker import (
    CreateMatch,
    Matchmaker,
    MatchmakingState,
    is_paused,
    matchmaking_state,
    set_paused,
    through_referee,
)
from palaestra.engine.cage.referee import Referee, Step, StepResult, play_match, play_next_turn
from palaestra.engine.cage.turns import LEASE_GRACE_S
from palaestra.protocol.constants import CHALLENGE_TIMEOUT_S

__all__ = [
    "CHALLENGE_TIMEOUT_S",
    "LEASE_GRACE_S",
    "BaselineEntrant",
    "CreateMatch",
    "Entrant",
    "HarnessEntrant",
    "MatchTranscript",
    "Matchmaker",
    "MatchmakingState",
    "ModelConfig",
    "ModelEntrant",
    "Move",
    "NewFighter",
    "Referee",
    "Step",
    "StepResult",
    "TurnDesk",
    "claim_endpoint",
    "create_fighter",
    "create_match",
    "entrant_for",
    "executor_of",
    "get_fighter",
    "get_match",
    "is_paused",
    "list_matches",
    "matchmaking_state",
    "material_of",
    "play_match",
    "play_next_turn",
    "set_challenges",
    "set_paused",
    "through_referee",
]
