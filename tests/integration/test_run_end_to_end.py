"""A run from goal to report through the real API, with agents on 127.0.0.1, on both stores.

Three scouts (one good, one that stalls past the deadline, one that breaks the
schema), a builder that answers 202 and delivers by callback, and two good
analysts, all registered and admitted through the API and the wizard. Every
agent checks every signature with stdlib hmac and records every taskId.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import Api, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

SIZES = {"scouts": 3, "shortlist": 2, "builds": 1, "verifies": 1, "critiques": 2}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # 1/30 of the protocol's deadlines: a stalled scout costs 1 s, not 30 s.
    return settings.model_copy(update={"dispatch_deadline_scale": 1 / 30})


async def admit(api: Api, token: str, agent: EdgeAgent, name: str, role: str, url: str) -> str:
    status, created = await api.call(
        "POST",
        "/api/agents",
        token=token,
        json={"name": name, "role": role, "endpoint_url": url},
    )
    assert status == 201, created
    agent.key = created["api_key"]
    agent_id: str = created["agent_id"]
    status, wizard = await api.call("POST", f"/api/agents/{agent_id}/wizard", token=token)
    assert (status, wizard["passed"]) == (200, True), wizard
    return agent_id


async def wait_for_report(api: Api, token: str, run_id: str) -> dict[str, Any]:
    limit = time.monotonic() + 60
    while True:
        status, run = await api.call("GET", f"/api/runs/{run_id}", token=token)
        assert status == 200, run
        if run["status"] != "RUNNING":
            return run  # type: ignore[no-any-return]
        assert time.monotonic() < limit, run
        await asyncio.sleep(0.05)


async def test_a_run_goes_from_goal_to_ranked_report_routing_around_failures(
    platform: Platform,
) -> None:
    agents = {
        "good-scout": EdgeAgent(key="", role="SCOUT"),
        "stalling-scout": EdgeAgent(key="", role="SCOUT"),
        "sloppy-scout": EdgeAgent(key="", role="SCOUT", omit="why_now"),
        "callback-builder": EdgeAgent(key="", role="BUILDER"),
        "analyst-1": EdgeAgent(key="", role="ANALYST"),
        "analyst-2": EdgeAgent(key="", role="ANALYST"),
    }
    async with running(platform) as api:
        platform.settings.public_url = api.base  # where agents call back, and sign over
        owner = await api.owner()
        ids: dict[str, str] = {}
        async with (
            serve(agents["good-scout"]) as e1,
            serve(agents["stalling-scout"]) as e2,
            serve(agents["sloppy-scout"]) as e3,
            serve(agents["callback-builder"]) as e4,
            serve(agents["analyst-1"]) as e5,
            serve(agents["analyst-2"]) as e6,
        ):
            endpoints = dict(zip(agents, [e1, e2, e3, e4, e5, e6], strict=True))
            for name, agent in agents.items():
                url = endpoints[name].url(f"/{name}")
                ids[name] = await admit(api, owner, agent, name, agent.role, url)
            # Admitted; now they misbehave as scripted.
            agents["stalling-scout"].dispatch_delay_s = 5.0
            agents["callback-builder"].defer_to = api.base
            agents["callback-builder"].callback_delay_s = 0.2

            status, started = await api.call(
                "POST",
                "/api/runs",
                token=owner,
                json={"goal": "Find a business for a solo developer", "sizes": SIZES},
            )
            assert status == 202, started
            run_id = started["run_id"]
            run = await wait_for_report(api, owner, run_id)
            for agent in agents.values():
                await agent.settle()
            agent_rows = {}
            for name, agent_id in ids.items():
                status, agent_rows[name] = await api.call(
                    "GET", f"/api/agents/{agent_id}", token=owner
                )
            _, stalling_history = await api.call(
                "GET", f"/api/agents/{ids['stalling-scout']}/history", token=owner
            )

    assert run["status"] == "COMPLETED", run
    tasks = run["tasks"]
    by_agent = {name: [t for t in tasks if t["agent_id"] == ids[name]] for name in ids}

    # Every dispatch was signed correctly (checked by the agents, with stdlib hmac), and no
    # taskId reached an endpoint twice, nor two endpoints.
    received = [tid for agent in agents.values() for tid in agent.ledger.task_ids]
    assert all(agent.ledger.bad_dispatches == 0 for agent in agents.values())
    assert len(received) == len(set(received))
    for name, agent in agents.items():
        assert sorted(agent.ledger.task_ids) == sorted(t["task_id"] for t in by_agent[name])

    # The stalled and the sloppy scout failed with the exact reasons, and their slots were
    # re-routed under new taskIds.
    [stalled] = by_agent["stalling-scout"]
    assert (stalled["status"], stalled["reason"]) == (
        "TIMEOUT",
        "External agent timed out after 1000ms",
    )
    [sloppy] = by_agent["sloppy-scout"]
    assert (sloppy["status"], sloppy["reason"]) == (
        "FAILED",
        "Validation failed: Missing why_now",
    )
    for failed in (stalled, sloppy):
        [again] = [
            t
            for t in tasks
            if t["phase"] == "SCOUT" and t["slot"] == failed["slot"] and t["attempt"] == 1
        ]
        assert again["task_id"] != failed["task_id"]
        assert again["status"] == "SUCCEEDED"
    assert run["phases"][0] | {"status": "done"} == {
        "phase": "SCOUT",
        "status": "done",
        "slots": 3,
        "done": 3,
        "running": 0,
        "failed": 2,
        "rerouted": 2,
    }

    # Their counters and cooldowns moved; the good agents' did not.
    for name in ("stalling-scout", "sloppy-scout"):
        assert agent_rows[name]["consecutive_failures"] == 1
        assert agent_rows[name]["cooldown_until"] == pytest.approx(platform.clock.now() + 60)
    for name in ("good-scout", "callback-builder", "analyst-1", "analyst-2"):
        assert (agent_rows[name]["consecutive_failures"], agent_rows[name]["cooldown_until"]) == (
            0,
            None,
        )
    failure = next(e for e in stalling_history if e["kind"] == "dispatch")
    assert (failure["outcome"], failure["reason"]) == (
        "failure",
        "External agent timed out after 1000ms",
    )
    assert failure["detail"]["task_id"] == stalled["task_id"]

    # The builder answered every BUILD by callback; analysts verified and critiqued.
    builds = by_agent["callback-builder"]
    assert len(builds) == 2
    assert {(t["phase"], t["status"], t["via"]) for t in builds} == {
        ("BUILD", "SUCCEEDED", "callback")
    }
    callbacks = agents["callback-builder"].ledger.callbacks
    assert sorted((tid, status) for tid, status, _ in callbacks) == sorted(
        (t["task_id"], 200) for t in builds
    )
    analysed = by_agent["analyst-1"] + by_agent["analyst-2"]
    assert sorted(t["phase"] for t in analysed) == ["CRITIQUE"] * 4 + ["VERIFY"] * 2
    for candidate_id in {t["candidate_id"] for t in builds}:
        critics = [t["agent_id"] for t in analysed if t["candidate_id"] == candidate_id]
        assert len([c for c in critics if c]) == 3
        critique_agents = [
            t["agent_id"]
            for t in analysed
            if t["candidate_id"] == candidate_id and t["phase"] == "CRITIQUE"
        ]
        assert len(set(critique_agents)) == 2  # two critiques, two distinct analysts

    # The report ranks the shortlisted candidates, best first, each with its tasks linked.
    report = run["report"]
    ranking = report["ranking"]
    assert [row["rank"] for row in ranking] == [1, 2]
    assert [row["score"] for row in ranking] == sorted(
        (row["score"] for row in ranking), reverse=True
    )
    good_task = by_agent["good-scout"][0]["task_id"]
    assert good_task in {row["tasks"][0]["task_id"] for row in ranking} | {
        row["tasks"][0]["task_id"] for row in report["not_shortlisted"]
    }
    task_ids = {t["task_id"] for t in tasks}
    for row in ranking:
        linked = [t["phase"] for t in row["tasks"]]
        assert linked == ["SCOUT", "BUILD", "VERIFY", "CRITIQUE", "CRITIQUE"]
        assert {t["task_id"] for t in row["tasks"]} <= task_ids
    assert len(report["not_shortlisted"]) == 1
    candidates = {c["candidate_id"]: c for c in run["candidates"]}
    assert [candidates[row["candidate_id"]]["rank"] for row in ranking] == [1, 2]
    assert report["tasks"]["timeout"] == 1
    assert report["tasks"]["failed"] == 1
    assert report["tasks"]["rerouted"] == 2
