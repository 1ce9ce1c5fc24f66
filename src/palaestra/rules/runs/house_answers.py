"""The house's answers to run slots, pure: the executors and the offline baseline's outputs.

When no external agent can serve a slot the platform serves it itself
(:class:`~palaestra.engine.runs.house.HouseAgent`): with the operator's house
model, else with ``house-baseline``, whose outputs are built here. They are
plain and deterministic, pass every schema, and say openly that nothing was
researched or checked, so that a run always completes and its report never
passes off a template as analysis. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from palaestra.protocol.constants import Phase

__all__ = ["BASELINE", "HOUSE_EXECUTORS", "HOUSE_MODEL", "HouseTask", "baseline_output"]

#: Executor and model id of the offline baseline.
BASELINE: Final = "house-baseline"
#: Executor of the operator's house model.
HOUSE_MODEL: Final = "house-model"
#: The executors of tasks the platform served itself.
HOUSE_EXECUTORS: Final = frozenset({BASELINE, HOUSE_MODEL})

_NOTHING_RESEARCHED = (
    "Picked from the house baseline's fixed list of niches; nothing was researched."
)
_NOT_CHECKED = "house baseline: nothing was checked independently"

_NICHES: Final = (
    (
        "Timesheet-to-invoice autopilot for small agencies",
        "Design and marketing agencies with 5 to 20 people",
        "Turning timesheets into invoices takes hours of admin every month",
        "A tool that reads timesheets and drafts ready-to-send invoices for review",
        "Accounting and time-tracking APIs are stable and well documented",
    ),
    (
        "Compliance calendar for independent clinics",
        "Independent medical and dental clinics with one to three sites",
        "Licence, inspection and training deadlines live in scattered emails",
        "A shared calendar that tracks every regulatory deadline and sends reminders",
        "Regulators publish deadlines online and clinics already work in the cloud",
    ),
    (
        "Supplier price watch for independent restaurants",
        "Independent restaurants buying from three or more wholesalers",
        "Ingredient prices change weekly and owners notice only on the invoice",
        "A service that reads supplier invoices and flags price jumps and cheaper offers",
        "Invoice text recognition became cheap and accurate enough for small businesses",
    ),
    (
        "Rental deposit dispute kit for small landlords",
        "Landlords renting out one to ten flats",
        "Deposit disputes drag on because move-in and move-out evidence is missing",
        "A guided check-in and check-out record with photos, signatures and a dispute pack",
        "Tenancy deposit rules tightened and phones now take evidence-grade photos",
    ),
    (
        "Shift-swap board for small care homes",
        "Care homes with 20 to 80 staff on rotating shifts",
        "Shift gaps are filled by phone calls and expensive agency staff",
        "A board where staff offer and claim shifts within the home's staffing rules",
        "Staffing shortages made agency costs a top expense for care homes",
    ),
    (
        "Equipment maintenance log for independent gyms",
        "Independent gyms and studios with 20 or more machines",
        "Broken machines stay broken for weeks and servicing is forgotten",
        "A QR-code log on each machine that members use to report faults and staff to track fixes",
        "Members expect to report problems from their phones, and QR codes are familiar",
    ),
    (
        "Grant deadline tracker for small charities",
        "Charities with under ten staff that depend on grants",
        "Grant deadlines and reporting duties are missed for lack of one overview",
        "A tracker that collects open grants, deadlines and reporting dates in one place",
        "Funders moved to online portals that publish calls and deadlines",
    ),
    (
        "Quote builder for independent tradespeople",
        "Plumbers, electricians and builders working alone or in pairs",
        "Writing quotes in the evening costs hours and slow quotes lose jobs",
        "A phone app that turns a site visit checklist into a priced, branded quote",
        "Tradespeople now run their business from a phone",
    ),
)


@dataclass(frozen=True, slots=True)
class HouseTask:
    """One slot served by the house: the same messages an external agent would receive."""

    phase: Phase
    goal: str
    messages: Sequence[Mapping[str, str]]
    deadline_s: float
    slot: int = 0
    candidate_id: str | None = None
    scout: Mapping[str, Any] | None = None
    builds: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


def baseline_output(task: HouseTask) -> dict[str, Any]:
    """The deterministic baseline output for ``task``; it passes the phase's schema."""
    return _BY_PHASE[task.phase](task)


def _scout(task: HouseTask) -> dict[str, Any]:
    digest = hashlib.sha256(task.goal.encode()).digest()
    niche = _NICHES[(digest[0] + task.slot) % len(_NICHES)]
    keys = ("candidate_title", "target_customer", "core_problem", "proposed_solution")
    return {
        **dict(zip(keys, niche[:4], strict=True)),
        "why_now": niche[4],
        "claims": [{"type": "assumption", "text": _NOTHING_RESEARCHED}],
        "evidence": [],
    }


def _build(task: HouseTask) -> dict[str, Any]:
    scout = task.scout or {}
    customer = _text(scout, "target_customer", "the target customers")
    title = _text(scout, "candidate_title", "the candidate")
    return {
        "candidate_id": task.candidate_id,
        "execution": {
            "objective": f"Find out within 90 days whether {customer} will pay for {title}",
            "phases": [
                {
                    "title": "Customer interviews",
                    "objective": "Confirm the problem with the people who would pay",
                    "steps": [
                        f"List 30 {customer} you can reach",
                        "Interview at least 10 of them about the problem and its cost",
                    ],
                    "outcome": "Ten interview notes and a ranked list of pains",
                    "reality_check": "Fewer than 5 of 10 confirm the problem: stop here",
                },
                {
                    "title": "Concierge pilot",
                    "objective": "Deliver the solution by hand before building software",
                    "steps": ["Offer a paid pilot to the keenest interviewees"],
                    "outcome": "Paying pilot customers",
                    "reality_check": "Nobody pays for the pilot: rethink price or customer",
                },
            ],
            "first_milestone": "3 paying pilot customers within 60 days",
            "success_check": "At least 2 of 3 pilots renew at full price after 90 days",
        },
        "claims": [
            {
                "type": "assumption",
                "text": "A generic validation plan from the house baseline, not tailored.",
            }
        ],
    }


def _verify(task: HouseTask) -> dict[str, Any]:
    scout = task.scout or {}
    evidence = _claims(scout.get("evidence"))
    claims = _claims(scout.get("claims")) + [
        claim for build in task.builds for claim in _claims(build.get("claims"))
    ]
    score = min(60, 20 + 10 * len(evidence))
    return {
        "candidate_id": task.candidate_id,
        "evidence_assessments": [
            {
                "kind": _text(item, "kind", "unspecified"),
                "summary": _text(item, "summary", "unspecified"),
                "reliability": "low",
                "specificity": "medium",
                "note": _NOT_CHECKED,
            }
            for item in evidence
        ],
        "claim_assessments": [
            {
                "type": _text(claim, "type", "unspecified"),
                "text": _text(claim, "text", "unspecified"),
                "supported": False,
                "confidence": "low",
                "note": _NOT_CHECKED,
            }
            for claim in claims
        ],
        "evidence_quality_score": score,
        "claim_coverage_score": score,
        "overall_confidence": "low",
        "red_flags": [_NOT_CHECKED],
    }


def _critique(task: HouseTask) -> dict[str, Any]:
    customer = _text(task.scout or {}, "target_customer", "the target customers")
    return {
        "candidate_id": task.candidate_id,
        "strengths": [f"Names a specific paying customer: {customer}"],
        "weaknesses": [
            f"No independent evidence yet that {customer} would pay; test that first",
            "Critique by the house baseline: a template, not an analysis",
        ],
        "score_adjustments": {},
        "penalty_points": 0,
        "verdict": "pass",
        "fatal_flaw": False,
    }


_BY_PHASE: Final[Mapping[Phase, Callable[[HouseTask], dict[str, Any]]]] = {
    Phase.SCOUT: _scout,
    Phase.BUILD: _build,
    Phase.VERIFY: _verify,
    Phase.CRITIQUE: _critique,
}


def _claims(value: Any) -> list[dict[str, Any]]:
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def _text(scout: Mapping[str, Any], key: str, default: str) -> str:
    value = scout.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else default
