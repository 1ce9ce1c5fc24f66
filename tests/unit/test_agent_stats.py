"""The edgearena table: validity, latency and contribution per agent, ranked per role."""

from __future__ import annotations

import pytest

from palaestra.rules.ratings import agent_stats
from palaestra.rules.ratings.agent_stats import (
    AgentFacts,
    TaskOutcome,
    rank_agents,
    summarise,
    wilson_interval,
)


def test_public_names() -> None:
    assert set(agent_stats.__all__) == {
        "FINISHED",
        "AgentFacts",
        "AgentRow",
        "TaskOutcome",
        "rank_agents",
        "summarise",
        "wilson_interval",
    }


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (0, 0, 0.0, 1.0),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (0, 10, 0.0, 0.2775),
        (81, 100, 0.7222, 0.8749),
    ],
)
def test_wilson_interval(successes: int, trials: int, low: float, high: float) -> None:
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=1e-4)


def agent(name: str, role: str = "SCOUT", reputation: float = 0.0) -> AgentFacts:
    return AgentFacts(f"id-{name}", name, role, "ACTIVE", reputation)


def test_an_agent_without_finished_tasks_has_no_rates() -> None:
    row = summarise(agent("idle"), [TaskOutcome("id-idle", "RUNNING", 10.0, 1.0)])
    assert row.tasks == 0
    assert row.succeeded == 0
    assert row.validity_rate is None
    assert row.validity_low is None
    assert row.latency_p50_ms is None
    assert row.contribution_mean is None
    assert row.contribution_total == 0.0


def test_validity_latency_and_contribution() -> None:
    tasks = [
        TaskOutcome("id-a", "SUCCEEDED", 100.0, 0.8),
        TaskOutcome("id-a", "SUCCEEDED", 200.0, 0.6),
        TaskOutcome("id-a", "SUCCEEDED", 300.0, None),
        TaskOutcome("id-a", "FAILED", 400.0, 0.0),
        TaskOutcome("id-a", "TIMEOUT", None, None),
        TaskOutcome("id-a", "PENDING", None, None),
    ]
    row = summarise(agent("a"), tasks)
    assert row.tasks == 5
    assert row.succeeded == 3
    assert row.validity_rate == pytest.approx(0.6)
    assert (row.validity_low, row.validity_high) == pytest.approx(wilson_interval(3, 5))
    assert row.latency_p50_ms == pytest.approx(250.0)
    assert row.latency_p90_ms == pytest.approx(370.0)
    assert row.contribution_mean == pytest.approx((0.8 + 0.6 + 0.0) / 3)
    assert row.contribution_total == pytest.approx(1.4)


def test_agents_are_ranked_by_reputation_within_their_role() -> None:
    agents = [
        agent("s1", "SCOUT", 0.2),
        agent("s2", "SCOUT", 0.9),
        agent("b1", "BUILDER", 0.5),
        agent("s3", "SCOUT", 0.2),
    ]
    tasks = [TaskOutcome("id-s3", "SUCCEEDED"), TaskOutcome("id-s1", "FAILED")]
    rows = rank_agents(agents, tasks)
    assert [(r.role, r.rank, r.name) for r in rows] == [
        ("BUILDER", 1, "b1"),
        ("SCOUT", 1, "s2"),
        ("SCOUT", 2, "s3"),  # same reputation as s1, better validity
        ("SCOUT", 3, "s1"),
    ]


def test_tasks_of_unknown_agents_are_ignored() -> None:
    rows = rank_agents([agent("a")], [TaskOutcome("someone-else", "SUCCEEDED")])
    assert rows[0].tasks == 0
