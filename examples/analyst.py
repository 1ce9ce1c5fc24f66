"""An ANALYST that works offline: deterministic baseline verification and critique.

    PALAESTRA_AGENT_KEY=<key> palaestra agent serve examples.analyst:app --port 9003
    palaestra check http://127.0.0.1:9003/ --role ANALYST --key <key> --allow 127.0.0.0/8

It checks nothing for real, so it says so: middling scores, low confidence,
a red flag naming itself, and a verdict that never eliminates on no evidence.
"""

from __future__ import annotations

from typing import Any

from palaestra.harness import Agent, Phase, Reply, Task

__all__ = ["MODEL_ID", "analyse", "app", "create_agent"]

MODEL_ID = "baseline-analyst"


def analyse(task: Task) -> Reply:
    """VERIFY or CRITIQUE, as ``task.phase`` says."""
    if task.phase is Phase.VERIFY:
        output: dict[str, Any] = {
            "candidate_id": task.candidate_id,
            "evidence_assessments": [],
            "claim_assessments": [],
            "evidence_quality_score": 50,
            "claim_coverage_score": 50,
            "overall_confidence": "low",
            "red_flags": ["baseline analyst: no evidence was checked independently"],
        }
    else:
        output = {
            "candidate_id": task.candidate_id,
            "strengths": ["The problem is stated concretely enough to test with customers"],
            "weaknesses": ["Nothing here shows that customers would pay; test that first"],
            "score_adjustments": {},
            "penalty_points": 0,
            "verdict": "pass",
            "fatal_flaw": False,
        }
    return Reply(output, model_id=MODEL_ID)


def create_agent(key: str | None = None, **options: Any) -> Agent:
    """The baseline analyst (both phases); ``options`` go to :class:`Agent`."""
    agent = Agent(key, name=MODEL_ID, model_id=MODEL_ID, **options)
    agent.analyst(analyse)
    return agent


app = create_agent().app()
