"""cage.v1 matches, pure.

- ``matchflow``: the statuses of a match and of its turns; ``challenges``: the consent an
  owner's match needs; ``entrants``: the kinds of entrant;
- ``material``: a match's secret material from its seed; ``payloads``: the text of every turn;
- ``outcome``: who won, from the turn records; ``rejudge``: a finished match judged again;
- ``matchmaking``: which fighters meet next (imported from its module, never from here:
  it reads the ratings, which read the matches' statuses, so the package importing it
  would import itself half-made when ``palaestra.rules.ratings`` is imported first);
- ``baseline``: the built-in offline entrant; ``house``: the local model's prompts and grammars.

``__all__`` holds what other packages use; the rest is imported from its module.
"""

from __future__ import annotations

from palaestra.rules.cage.baseline import BASELINE_NAME, baseline_move
from palaestra.rules.cage.challenges import (
    Challenged,
    accepts_friendlies_by_default,
    challenge_refusal,
)
from palaestra.rules.cage.entrants import EntrantType
from palaestra.rules.cage.house import DEFENDER_GRAMMAR, HOUSE_SYSTEM_PROMPTS, attacker_grammar
from palaestra.rules.cage.matchflow import OPEN_MATCH_STATUSES, MatchKind, MatchStatus, TurnStatus
from palaestra.rules.cage.material import Material, draw_material
from palaestra.rules.cage.outcome import TURNS, UTILITY_TO_WIN, TurnRecord, decide, side_of_turn
from palaestra.rules.cage.payloads import SYSTEM_PROMPT, payload_for
from palaestra.rules.cage.rejudge import PlayedTurn, RejudgeChange, Rejudged, rejudge

__all__ = [
    "BASELINE_NAME",
    "DEFENDER_GRAMMAR",
    "HOUSE_SYSTEM_PROMPTS",
    "OPEN_MATCH_STATUSES",
    "SYSTEM_PROMPT",
    "TURNS",
    "UTILITY_TO_WIN",
    "Challenged",
    "EntrantType",
    "MatchKind",
    "MatchStatus",
    "Material",
    "PlayedTurn",
    "RejudgeChange",
    "Rejudged",
    "TurnRecord",
    "TurnStatus",
    "accepts_friendlies_by_default",
    "attacker_grammar",
    "baseline_move",
    "challenge_refusal",
    "decide",
    "draw_material",
    "payload_for",
    "rejudge",
    "side_of_turn",
]
