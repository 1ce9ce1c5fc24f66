"""House agents: the platform's own answer for a slot no external agent could serve.

With a house model configured (``PALAESTRA_HOUSE_*``), the slot's production
messages go to it through :class:`~palaestra.providers.ChatProvider`, which
asks for JSON and retries once with the validation error. Without one, or
when the model fails in any way, ``house-baseline`` answers: plain,
deterministic outputs that pass every schema and say openly that nothing was
researched or checked, so a run always completes and its report never passes
off a template as analysis.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from palaestra.egress import EgressClient
from palaestra.protocol import validate_output
from palaestra.protocol.constants import Phase
from palaestra.providers import ChatProvider
from palaestra.settings import Settings

__all__ = [
    "BASELINE",
    "HOUSE_EXECUTORS",
    "HOUSE_MODEL",
    "HouseAgent",
    "HouseAnswer",
    "HouseTask",
    "baseline_output",
]

log = structlog.get_logger(__name__)

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


@dataclass(frozen=True, slots=True)
class HouseAnswer:
    output: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    model_id: str
    executor: str
    note: str | None = None  # why the model was not used, when it was configured


def _claims(value: Any) -> list[dict[str, Any]]:
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def _text(scout: Mapping[str, Any], key: str, default: str) -> str:
    value = scout.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else default


def baseline_output(task: HouseTask) -> dict[str, Any]:
    """The deterministic baseline output for ``task``; it passes the phase's schema."""
    if task.phase is Phase.SCOUT:
        digest = hashlib.sha256(task.goal.encode()).digest()
        niche = _NICHES[(digest[0] + task.slot) % len(_NICHES)]
        keys = ("candidate_title", "target_customer", "core_problem", "proposed_solution")
        return {
            **dict(zip(keys, niche[:4], strict=True)),
            "why_now": niche[4],
            "claims": [{"type": "assumption", "text": _NOTHING_RESEARCHED}],
            "evidence": [],
        }
    scout = task.scout or {}
    customer = _text(scout, "target_customer", "the target customers")
    title = _text(scout, "candidate_title", "the candidate")
    if task.phase is Phase.BUILD:
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
    evidence = _claims(scout.get("evidence"))
    if task.phase is Phase.VERIFY:
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


class HouseAgent:
    """Serves house slots: the configured house model, else (or on its failure) the baseline."""

    def __init__(self, provider: ChatProvider | None = None) -> None:
        self.provider = provider

    @classmethod
    def from_settings(cls, settings: Settings, egress: EgressClient) -> HouseAgent:
        if not settings.house_base_url or not settings.house_model:
            return cls(None)
        key = settings.house_api_key.get_secret_value() if settings.house_api_key else None
        return cls(ChatProvider(egress, settings.house_base_url, settings.house_model, key))

    async def answer(self, task: HouseTask) -> HouseAnswer:
        """An output that passes the phase's schema; never raises for the model's faults."""
        note = None
        if self.provider is not None:
            try:
                async with asyncio.timeout(task.deadline_s):  # both attempts, one deadline
                    output, completions = await self.provider.json_output(
                        task.phase,
                        task.messages,
                        candidate_id=task.candidate_id,
                        deadline=task.deadline_s,
                    )
            except TimeoutError:
                note = f"house model timed out after {round(task.deadline_s * 1000)}ms"
            except Exception as exc:  # any fault of the house model falls back to the baseline
                note = f"house model failed: {exc}"
            else:
                return HouseAnswer(
                    output=output,
                    prompt_tokens=sum(c.prompt_tokens for c in completions),
                    completion_tokens=sum(c.completion_tokens for c in completions),
                    model_id=completions[-1].model,
                    executor=HOUSE_MODEL,
                )
            log.warning("house model failed; house-baseline answers", reason=note)
        output = validate_output(task.phase, baseline_output(task), task.candidate_id)
        return HouseAnswer(output, 0, 0, BASELINE, BASELINE, note)
