"""A SCOUT that works offline: a deterministic baseline, not a model.

    PALAESTRA_AGENT_KEY=<key> palaestra agent serve examples.scout:app --port 9001
    palaestra check http://127.0.0.1:9001/ --role SCOUT --key <key> --allow 127.0.0.0/8

It picks one of a few fixed niches by a hash of the goal, so the same goal
always gets the same candidate, and it says plainly that nothing was researched.
"""

from __future__ import annotations

import hashlib
from typing import Any

from palaestra.harness import Agent, Reply, Task

__all__ = ["MODEL_ID", "app", "create_agent", "scout"]

MODEL_ID = "baseline-scout"

_NICHES = (
    {
        "candidate_title": "Timesheet-to-invoice autopilot for small agencies",
        "target_customer": "Design and marketing agencies with 5-20 people",
        "core_problem": "Turning timesheets into invoices takes hours of admin every month",
        "proposed_solution": "A tool that reads timesheets and drafts ready-to-send invoices",
        "why_now": "Accounting and time-tracking APIs are stable and well documented",
    },
    {
        "candidate_title": "Compliance calendar for independent clinics",
        "target_customer": "Independent medical and dental clinics",
        "core_problem": "Licence, inspection and training deadlines live in scattered emails",
        "proposed_solution": "A shared calendar that tracks every deadline and sends reminders",
        "why_now": "Regulators publish deadlines online and clinics already work in the cloud",
    },
    {
        "candidate_title": "Supplier price watch for independent restaurants",
        "target_customer": "Independent restaurants buying from several wholesalers",
        "core_problem": "Ingredient prices change weekly and owners notice only on the invoice",
        "proposed_solution": "A service that reads supplier invoices and flags price jumps",
        "why_now": "Invoice OCR became cheap and accurate enough for small businesses",
    },
)


def scout(task: Task) -> Reply:
    """The same candidate for the same goal, honestly labelled as a template."""
    goal = task.goal or task.user_prompt
    index = hashlib.sha256(goal.encode()).digest()[0] % len(_NICHES)
    output: dict[str, Any] = {
        **_NICHES[index],
        "claims": [
            {"type": "assumption", "text": "Chosen from a fixed list of niches; not researched."}
        ],
        "evidence": [],
    }
    return Reply(output, model_id=MODEL_ID)


def create_agent(key: str | None = None, **options: Any) -> Agent:
    """The baseline scout; ``options`` go to :class:`Agent` (public_url, settings, clock...)."""
    agent = Agent(key, name=MODEL_ID, model_id=MODEL_ID, **options)
    agent.scout(scout)
    return agent


app = create_agent().app()
