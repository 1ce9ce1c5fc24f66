"""The registration-time simulation payloads, one per role, as the seed shows them."""

from __future__ import annotations

from palaestra.ids import new_id
from palaestra.protocol import (
    AnalystSimulation,
    BuildSimulation,
    ChatMessage,
    Role,
    ScoutSimulation,
    SimulationCandidate,
)
from palaestra.protocol.edgearena import SimulationRequest

__all__ = ["SAMPLE_GOAL", "simulation_for"]

SAMPLE_GOAL = "Find a promising SaaS niche for a solo founder."

_SCOUT_SYSTEM = (
    "You are a SCOUT in an arena of business-discovery agents. Propose one concrete "
    "business candidate for the goal. Reply with one JSON object with the keys "
    "candidate_title, target_customer, core_problem, proposed_solution, why_now (non-empty "
    "strings), claims (array of {type, text}) and evidence (array of {kind, summary})."
)
_BUILDER_SYSTEM = (
    "You are a BUILDER. Turn the candidate into an execution plan. Reply with one JSON object "
    "with the keys candidate_id (the candidate's id, verbatim), execution {objective, phases "
    "(at least one), first_milestone, success_check} and claims (array of {type, text})."
)
_CRITIC_SYSTEM = (
    "You are a CRITIC (role ANALYST). Judge the candidate honestly. Reply with one JSON object "
    "with the keys candidate_id (verbatim), strengths and weaknesses (arrays of strings), "
    "score_adjustments (object of name -> number), penalty_points (number >= 0), verdict "
    "('pass' or 'eliminate'), fatal_flaw (boolean) and, when eliminating, elimination_reason."
)


def _candidate() -> SimulationCandidate:
    return SimulationCandidate(
        id=new_id(),
        title="Automated invoicing for service businesses",
        target_customer="Small service businesses (5–20 employees)",
        core_problem="Manual invoicing from timesheets costs hours of admin each week",
        solution_summary="An opinionated tool that turns timesheets into ready-to-send invoices",
        why_now="Small-business accounting APIs stabilized in the last 18 months",
    )


def simulation_for(role: Role) -> SimulationRequest:
    """A fresh simulation payload for ``role`` (new task and candidate ids)."""
    task_id = new_id()
    if role is Role.SCOUT:
        return ScoutSimulation(
            task_id=task_id,
            deadline_ms=role.deadline_ms,
            goal=SAMPLE_GOAL,
            launchpad="make-money",
            messages=[
                ChatMessage(role="system", content=_SCOUT_SYSTEM),
                ChatMessage(role="user", content=SAMPLE_GOAL),
            ],
        )
    candidate = _candidate()
    if role is Role.BUILDER:
        return BuildSimulation(
            task_id=task_id,
            deadline_ms=role.deadline_ms,
            candidate=candidate,
            messages=_about(candidate, _BUILDER_SYSTEM, "Candidate"),
        )
    brief = SimulationCandidate(
        id=candidate.id, title=candidate.title, solution_summary=candidate.solution_summary
    )
    return AnalystSimulation(
        task_id=task_id,
        deadline_ms=role.deadline_ms,
        candidate=brief,
        messages=_about(brief, _CRITIC_SYSTEM, "Critique candidate"),
    )


def _about(candidate: SimulationCandidate, system: str, opening: str) -> list[ChatMessage]:
    """The role's system prompt, then the candidate as the user's message."""
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(
            role="user",
            content=f"{opening} {candidate.id}: {candidate.title}. "
            f"{candidate.solution_summary}. Return candidate_id {candidate.id}.",
        ),
    ]
