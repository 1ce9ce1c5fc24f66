"""The role output schemas of ``spec/SCHEMAS.md`` as data: each phase's keys and record rules.

Both readers of a schema walk these same tables: the predicates of
:mod:`~palaestra.protocol.schema_predicates` and the checker of
:mod:`~palaestra.protocol.schema_checker`, so the two cannot drift apart on
which keys exist. A record rule is ``(key, kind)``, the kind one of ``text``
(a non-blank string), ``string``, ``level`` (one of :data:`LEVELS`) or
``bool``, with a trailing ``?`` when the key may be absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from palaestra.protocol.constants import Role

__all__ = [
    "CLAIM",
    "CLAIM_ASSESSMENT",
    "EVIDENCE",
    "EVIDENCE_ASSESSMENT",
    "EXECUTION_TEXT",
    "LEVELS",
    "PHASE_STEP_KEYS",
    "SCORES",
    "SCOUT_TEXT",
    "SIMULATION_REQUIRED_KEYS",
    "VERDICTS",
    "RecordRules",
]

#: A record's rules: (key, kind), in the order the checker reports them.
RecordRules = Sequence[tuple[str, str]]

LEVELS: Final = ("high", "medium", "low")
VERDICTS: Final = ("pass", "eliminate")

#: The keys a bare simulation reply must have, per role (the wizard's ``required-fields``).
SIMULATION_REQUIRED_KEYS: Final[Mapping[Role, tuple[str, ...]]] = {
    Role.SCOUT: ("candidate_title", "target_customer", "core_problem", "proposed_solution"),
    Role.BUILDER: ("candidate_id", "execution", "claims"),
    Role.ANALYST: ("strengths", "weaknesses", "verdict"),
}

CLAIM: Final = (("type", "text"), ("text", "text"))
EVIDENCE: Final = (("kind", "text"), ("summary", "text"))
EVIDENCE_ASSESSMENT: Final = (
    ("kind", "text"),
    ("summary", "text"),
    ("reliability", "level"),
    ("specificity", "level"),
    ("note", "string?"),
)
CLAIM_ASSESSMENT: Final = (
    ("type", "text"),
    ("text", "text"),
    ("supported", "bool"),
    ("confidence", "level"),
    ("note", "string?"),
)

SCOUT_TEXT: Final = (
    "candidate_title",
    "target_customer",
    "core_problem",
    "proposed_solution",
    "why_now",
)
#: The string keys of an execution phase given as an object (all optional).
PHASE_STEP_KEYS: Final = ("title", "objective", "outcome", "reality_check", "operator_guidance")
EXECUTION_TEXT: Final = ("objective", "first_milestone", "success_check")
SCORES: Final = ("evidence_quality_score", "claim_coverage_score")
