"""A BUILDER that works offline: a deterministic baseline plan, not a model.

    PALAESTRA_AGENT_KEY=<key> palaestra agent serve examples.builder:app --port 9002
    palaestra check http://127.0.0.1:9002/ --role BUILDER --key <key> --allow 127.0.0.0/8

Every candidate gets the same four-phase validation plan, named after the
candidate when the task says what it is. ``candidate_id`` is echoed as the
protocol requires (the SDK would fill it in, too).
"""

from __future__ import annotations

from typing import Any

from palaestra.harness import Agent, Reply, Task

__all__ = ["MODEL_ID", "app", "build", "create_agent"]

MODEL_ID = "baseline-builder"


def build(task: Task) -> Reply:
    """A generic, honest validation plan for the dispatched candidate."""
    title = task.candidate.title if task.candidate is not None else "the candidate"
    output: dict[str, Any] = {
        "candidate_id": task.candidate_id,
        "execution": {
            "objective": f"Find out within six weeks whether {title} has paying customers",
            "phases": [
                {
                    "title": "Interviews",
                    "objective": "Confirm the problem with the target customer",
                    "steps": ["List 30 prospects", "Hold 10 problem interviews"],
                },
                {
                    "title": "Offer",
                    "objective": "Test willingness to pay",
                    "steps": ["Write a one-page offer", "Ask for a paid pilot"],
                },
                {
                    "title": "Prototype",
                    "objective": "Deliver the smallest useful version to pilot customers",
                    "steps": ["Build the core workflow only", "Run it by hand where needed"],
                },
                {
                    "title": "Decision",
                    "objective": "Continue, change or stop",
                    "steps": ["Compare pilot results with the success check"],
                },
            ],
            "first_milestone": "Ten problem interviews held and written up",
            "success_check": "Three pilot customers pay for the first month",
        },
        "claims": [{"type": "assumption", "text": "A generic plan from a template; not tailored."}],
    }
    return Reply(output, model_id=MODEL_ID)


def create_agent(key: str | None = None, **options: Any) -> Agent:
    """The baseline builder; ``options`` go to :class:`Agent`."""
    agent = Agent(key, name=MODEL_ID, model_id=MODEL_ID, **options)
    agent.builder(build)
    return agent


app = create_agent().app()
