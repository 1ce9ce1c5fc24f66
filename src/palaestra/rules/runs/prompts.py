"""The production prompts: one system prompt per phase and a user prompt per task.

Agents forward ``messages`` to their model verbatim, so these are written for
a model to follow: the role, what good work looks like and how it is scored,
the exact JSON shape with every key and its type, and, for candidate phases,
the candidate's id with the instruction to return it as ``candidate_id``.
A launchpad (a named preset) supplies the mission, the scouts' angles and the
run's sizes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from palaestra.protocol.constants import Phase
from palaestra.rules.runs.runflow import DEFAULT_SIZES, RunSizes

__all__ = [
    "CONTEXT_LIMIT_CHARS",
    "DEFAULT_LAUNCHPAD",
    "LAUNCHPADS",
    "Launchpad",
    "messages_for",
    "system_prompt",
]

#: Each earlier output quoted in a user prompt is cut to this many characters.
CONTEXT_LIMIT_CHARS: Final = 8_000


@dataclass(frozen=True, slots=True)
class Launchpad:
    """A named preset: the mission the prompts pursue, and the run's sizes."""

    name: str
    title: str
    mission: str
    angles: tuple[str, ...]
    sizes: RunSizes = field(default_factory=lambda: DEFAULT_SIZES)


LAUNCHPADS: Final[Mapping[str, Launchpad]] = {
    "make-money": Launchpad(
        name="make-money",
        title="Make Money",
        mission=(
            "find a business that a founder or a small team can start with modest means "
            "and that can reach paying customers within months"
        ),
        angles=(
            "software or a service sold to small and medium businesses",
            "an underserved professional niche with a costly, recurring chore",
            "a product for consumers who already spend money on the problem",
            "a marketplace, brokerage or managed service that connects two sides",
            "a business enabled by a recent change in technology, regulation or habits",
        ),
    ),
}
DEFAULT_LAUNCHPAD: Final = "make-money"

_ONLY_JSON = (
    "Return only one JSON object: no prose before or after it, no Markdown fence, no comments. "
    "Every key listed is required unless marked optional; strings must not be empty."
)

_SCOUT_SHAPE = """{
  "candidate_title": string,     // a short, specific name for the business
  "target_customer": string,     // who pays: segment, size, situation
  "core_problem": string,        // the costly problem they have today
  "proposed_solution": string,   // what you would sell them and how it solves the problem
  "why_now": string,             // what changed recently that makes this possible or urgent
  "claims": [                    // factual statements the idea depends on (may be empty)
    {"type": string, "text": string}   // type: e.g. "market", "customer", "cost", "assumption"
  ],
  "evidence": [                  // what supports the claims (may be empty)
    {"kind": string, "summary": string} // kind: e.g. "statistic", "source", "observation"
  ]
}"""

_BUILD_SHAPE = """{
  "candidate_id": string,        // exactly the candidate id given in the user message
  "execution": {
    "objective": string,         // what the first 90 days must achieve
    "phases": [                  // at least one; in order
      {
        "title": string,
        "objective": string,
        "steps": [string],       // concrete actions
        "outcome": string,       // what exists when the phase is done
        "reality_check": string, // the risk or test that could stop the plan here
        "operator_guidance": string
      }
    ],
    "first_milestone": string,   // the first measurable milestone, with a number and a date
    "success_check": string      // how the founder knows the business works
  },
  "claims": [                    // claims your plan relies on (may be empty)
    {"type": string, "text": string}
  ]
}"""

_VERIFY_SHAPE = """{
  "candidate_id": string,        // exactly the candidate id given in the user message
  "evidence_assessments": [      // one per evidence item you were given (may be empty)
    {
      "kind": string,
      "summary": string,
      "reliability": "high" | "medium" | "low",
      "specificity": "high" | "medium" | "low",
      "note": string             // optional
    }
  ],
  "claim_assessments": [         // one per claim you were given (may be empty)
    {
      "type": string,
      "text": string,
      "supported": boolean,
      "confidence": "high" | "medium" | "low",
      "note": string             // optional
    }
  ],
  "evidence_quality_score": number,   // 0 to 100
  "claim_coverage_score": number,     // 0 to 100
  "overall_confidence": "high" | "medium" | "low",
  "red_flags": [string]          // may be empty
}"""

_CRITIQUE_SHAPE = """{
  "candidate_id": string,        // exactly the candidate id given in the user message
  "strengths": [string],         // may be empty
  "weaknesses": [string],        // may be empty
  "score_adjustments": {         // may be empty; each value a number from -20 to 20
    "<aspect>": number           // e.g. "market_size": -5, "founder_fit": 3
  },
  "penalty_points": number,      // 0 or more; 0 to 50 is the useful range
  "verdict": "pass" | "eliminate",
  "fatal_flaw": boolean,         // true only for a flaw no plan can fix
  "elimination_reason": string   // optional; required in spirit when verdict is "eliminate"
}"""


def _system(task: str, shape: str, *, candidate: bool = True) -> str:
    """A phase's system prompt: the role and its task, then the exact JSON shape to return
    and, for a candidate phase, the rule that its ``candidate_id`` is returned verbatim."""
    id_rule = '"candidate_id" must be exactly the candidate id from the user message.\n'
    return (
        f"{task}\n\nThe JSON object you return has exactly this shape:\n{shape}\n\n"
        f"{id_rule if candidate else ''}{_ONLY_JSON}"
    )


_SCOUT_SYSTEM = _system(
    """You are a SCOUT in Palaestra, an arena where independent agents turn a goal \
into ranked, critiqued business candidates. Your job: propose ONE concrete business candidate that \
serves the user's goal.

How your work is scored (the platform scores every scout output automatically before the best \
candidates are shortlisted):
- Structure: every field filled with a real sentence, not a label.
- Specificity: name the paying customer precisely (segment, size, situation) and use numbers \
where you can (team sizes, prices, hours lost, dates). Describe the solution concretely.
- Claims: state the facts your idea depends on as typed claims; two kinds or more is better.
- Evidence: support the claims with evidence items (statistics, sources, observations). Never \
invent sources; if something is your assumption, label the claim type "assumption".
Near-duplicates of another scout's idea are merged, so prefer a specific, less obvious niche to \
a generic one. Later, builders plan your candidate, analysts verify your claims and evidence and \
critics may eliminate it for a fatal flaw: honest claims fare better than inflated ones.""",
    _SCOUT_SHAPE,
    candidate=False,
)

_BUILD_SYSTEM = _system(
    """You are a BUILDER in Palaestra, an arena where independent agents turn a goal \
into ranked, critiqued business candidates. Your job: turn ONE shortlisted candidate into an \
execution plan a founder could start on Monday.

How your work is scored:
- The plan must be concrete: phases in order, each with steps someone can do this week, the \
outcome it produces and the reality check that could stop it.
- The first milestone is measurable (a number and a date); the success check says how the \
founder will know the business works.
- Your claims are passed to an analyst who verifies them against the scout's evidence; \
unsupported claims count against you, so claim only what the plan truly relies on.""",
    _BUILD_SHAPE,
)

_VERIFY_SYSTEM = _system(
    """You are an ANALYST in the VERIFY phase of Palaestra, an arena where \
independent agents turn a goal into ranked, critiqued business candidates. Your job: judge how \
well ONE candidate's claims are supported by the evidence given, as a sceptical due-diligence \
reviewer.

How to score:
- Assess every evidence item (reliability: can it be trusted; specificity: does it bear on this \
exact customer and problem) and every claim (supported: does the evidence given back it).
- evidence_quality_score (0-100): 80+ only for specific, checkable, reliable evidence; 50 for \
plausible but generic support; below 30 when there is little or none.
- claim_coverage_score (0-100): the share of the claims that the evidence supports, weighted by \
how much the business depends on each.
- overall_confidence: "high" only if you would bet on the candidate's premises; "low" when they \
rest on assumptions.
- red_flags: anything that looks invented, contradictory, illegal or unrealistic.
Your scores feed the candidate's final score directly: be calibrated, not generous.""",
    _VERIFY_SHAPE,
)

_CRITIQUE_SYSTEM = _system(
    """You are an ANALYST in the CRITIQUE phase of Palaestra, an arena where \
independent agents turn a goal into ranked, critiqued business candidates. Your job: critique ONE \
candidate with everything known about it (the scout's proposal, the builder's plan and the \
verification), as an experienced investor would.

How your critique is used:
- The candidate's final score starts from the scout's quality and the verification; your \
score_adjustments (each -20 to 20, summed and capped at 30 either way) and penalty_points \
(0-50) move it. Name each adjustment after the aspect it judges.
- verdict "eliminate" together with fatal_flaw true removes the candidate from the ranking: use \
it only for a flaw no plan can fix (illegal, impossible, no one would pay). "eliminate" without \
a fatal flaw costs the candidate 15 points. Give the reason in elimination_reason.
- List real strengths and weaknesses; a critique without weaknesses is not credible.""",
    _CRITIQUE_SHAPE,
)

_SYSTEM: Final = {
    Phase.SCOUT: _SCOUT_SYSTEM,
    Phase.BUILD: _BUILD_SYSTEM,
    Phase.VERIFY: _VERIFY_SYSTEM,
    Phase.CRITIQUE: _CRITIQUE_SYSTEM,
}


def system_prompt(phase: Phase) -> str:
    return _SYSTEM[phase]


def _quoted(label: str, value: Any) -> str:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    if len(text) > CONTEXT_LIMIT_CHARS:
        text = text[:CONTEXT_LIMIT_CHARS] + "\n... [truncated]"
    return f"{label}:\n{text}"


def _candidate_brief(candidate_id: str, scout: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": candidate_id,
        "title": scout.get("candidate_title"),
        "target_customer": scout.get("target_customer"),
        "core_problem": scout.get("core_problem"),
        "proposed_solution": scout.get("proposed_solution"),
        "why_now": scout.get("why_now"),
    }


def _return_id(candidate_id: str) -> str:
    return (
        f'The candidate id is {candidate_id}. Return it verbatim as "candidate_id" in your JSON '
        "object."
    )


def messages_for(
    phase: Phase,
    launchpad: Launchpad,
    goal: str,
    *,
    slot: int = 0,
    candidate_id: str | None = None,
    scout: Mapping[str, Any] | None = None,
    builds: Sequence[Mapping[str, Any]] = (),
    verifications: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, str]]:
    """The ``messages`` of one task: the phase's system prompt and the task's user prompt."""
    mission = f"Goal: {goal}\nLaunchpad: {launchpad.title}: {launchpad.mission}."
    if phase is Phase.SCOUT:
        angle = launchpad.angles[slot % len(launchpad.angles)]
        user = (
            f"{mission}\n\nPropose one business candidate for this goal. To keep the scouts "
            f"from converging on one idea, look first at: {angle}. If the goal points "
            "elsewhere, follow the goal."
        )
        return [{"role": "system", "content": _SCOUT_SYSTEM}, {"role": "user", "content": user}]
    if candidate_id is None or scout is None:
        raise ValueError(f"{phase} needs a candidate id and the scout's output")
    sections = [mission, _quoted("Candidate", _candidate_brief(candidate_id, scout))]
    if phase is Phase.BUILD:
        sections.append(
            _quoted("The scout's claims", scout.get("claims", []))
            + "\n\n"
            + _quoted("The scout's evidence", scout.get("evidence", []))
        )
        sections.append("Write the execution plan for this candidate.")
    elif phase is Phase.VERIFY:
        builder_claims = [claim for build in builds for claim in build.get("claims", [])]
        sections.append(_quoted("The scout's claims", scout.get("claims", [])))
        sections.append(_quoted("The builder's claims", builder_claims))
        sections.append(_quoted("The scout's evidence", scout.get("evidence", [])))
        sections.append("Verify every claim above against the evidence above.")
    else:
        sections.append(_quoted("The scout's proposal", scout))
        sections.append(_quoted("The builder's plan", list(builds)))
        sections.append(_quoted("The verification", list(verifications)))
        sections.append("Critique this candidate.")
    sections.append(_return_id(candidate_id))
    user = "\n\n".join(sections)
    return [{"role": "system", "content": _SYSTEM[phase]}, {"role": "user", "content": user}]
