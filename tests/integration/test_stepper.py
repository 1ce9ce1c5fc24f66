"""The run stepper driven step by step (drain mode) against agents on 127.0.0.1.

Re-routes, the house fallback, callbacks and deadlines, a restart with tasks
in flight, the house model and its faults, and what a finished run settles.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.runs.completion import complete_task, completion_url
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.providers import ChatProvider
from palaestra.rules.runs.runplan import RECORD_GRACE_S
from palaestra.settings import Settings
from tests.integration.edge_agents import EdgeAgent, sign_completion
from tests.integration.run_support import (
    add_agent,
    add_owner,
    agent_row,
    candidates_of,
    run_row,
    tasks_of,
)
from tests.integration.servers import Endpoint, serve

pytestmark = pytest.mark.asyncio

KEY = "ea_stepper-key"
ONE_SCOUT = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # 1/30 of the protocol's deadlines: SCOUT, VERIFY and CRITIQUE 1 s, BUILD 3 s.
    return settings.model_copy(update={"dispatch_deadline_scale": 1 / 30})


@pytest.fixture
async def driver(platform: Platform) -> AsyncIterator[RunDriver]:
    runs = RunDriver(platform)
    yield runs
    await runs.close()


async def start(platform: Platform, owner: str, sizes: dict[str, int] | None = None) -> str:
    run = await start_run(platform, Caller(owner), "Find a niche", sizes=sizes)
    return run.id


async def test_with_no_agents_the_house_serves_every_slot_and_the_run_completes(
    platform: Platform, driver: RunDriver
) -> None:
    run_id = await start(platform, await add_owner(platform))
    await driver.drain(run_id)
    run = await run_row(platform, run_id)
    assert (run.status, run.phase) == ("COMPLETED", "REPORT")
    tasks = await tasks_of(platform, run_id)
    # 5 scouts, then for each of 3 shortlisted: 1 build, 1 verify, 2 critiques.
    assert len(tasks) == 5 + 3 * 4
    assert {(t.status, t.executor, t.via, t.agent_id) for t in tasks} == {
        ("SUCCEEDED", "house-baseline", "house", None)
    }
    assert run.report is not None
    ranked = [row["candidate_id"] for row in run.report["ranking"]]
    assert len(ranked) == 3
    candidates = {c.id: c for c in await candidates_of(platform, run_id)}
    assert [candidates[c].rank for c in ranked] == [1, 2, 3]
    scores = [row["score"] for row in run.report["ranking"]]
    assert scores == sorted(scores, reverse=True)
    assert sorted(c.status for c in candidates.values()) == ["DROPPED"] * 2 + ["RANKED"] * 3
    for row in run.report["ranking"]:
        phases = [t["phase"] for t in row["tasks"]]
        assert phases == ["SCOUT", "BUILD", "VERIFY", "CRITIQUE", "CRITIQUE"]
        assert all(t["href"] == f"/api/runs/{run_id}/tasks/{t['task_id']}" for t in row["tasks"])
    assert run.report["tasks"]["total"] == 17


async def test_a_failed_slot_is_rerouted_to_the_next_agent_under_a_new_task_id(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    failing, good = EdgeAgent(key=KEY, failing=True), EdgeAgent(key=KEY)
    async with serve(failing) as bad_end, serve(good) as good_end:
        bad_id = await add_agent(platform, owner, "failing", "SCOUT", bad_end.url("/"), KEY)
        good_id = await add_agent(
            platform, owner, "good", "SCOUT", good_end.url("/"), KEY, status="DEGRADED"
        )
        run_id = await start(platform, owner, ONE_SCOUT)
        await driver.drain(run_id)
    scouting = [t for t in await tasks_of(platform, run_id) if t.phase == "SCOUT"]
    assert [(t.attempt, t.agent_id, t.status) for t in scouting] == [
        (0, bad_id, "FAILED"),
        (1, good_id, "SUCCEEDED"),
    ]
    assert failing.ledger.task_ids == [scouting[0].id]
    assert good.ledger.task_ids == [scouting[1].id]
    [candidate] = [c for c in await candidates_of(platform, run_id) if c.status == "RANKED"]
    assert candidate.source_task_id == scouting[1].id
    assert (await agent_row(platform, good_id)).status == "ACTIVE"  # a success moves it up


async def test_after_two_reroutes_a_house_agent_serves_the_slot(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    agents = [EdgeAgent(key=KEY, failing=True) for _ in range(4)]
    async with (
        serve(agents[0]) as a,
        serve(agents[1]) as b,
        serve(agents[2]) as c,
        serve(agents[3]) as d,
    ):
        for n, endpoint in enumerate([a, b, c, d]):
            await add_agent(platform, owner, f"s{n}", "SCOUT", endpoint.url("/"), KEY)
        run_id = await start(platform, owner, ONE_SCOUT)
        await driver.drain(run_id)
    scouting = [t for t in await tasks_of(platform, run_id) if t.phase == "SCOUT"]
    assert [(t.attempt, t.status) for t in scouting] == [
        (0, "FAILED"),
        (1, "FAILED"),
        (2, "FAILED"),
        (3, "SUCCEEDED"),
    ]
    assert len({t.agent_id for t in scouting[:3]}) == 3
    assert (scouting[3].agent_id, scouting[3].executor) == (None, "house-baseline")
    assert sum(len(agent.ledger.task_ids) for agent in agents) == 3  # the fourth never tried


async def test_a_callback_completes_a_deferred_task_and_a_missed_deadline_times_it_out(
    platform: Platform, driver: RunDriver, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    # Both answer 202; neither calls back by itself here (the test delivers one callback).
    deferring = [EdgeAgent(key=KEY, defer_to="http://127.0.0.1:9", callback_delay_s=3600)]
    deferring.append(EdgeAgent(key=KEY, defer_to="http://127.0.0.1:9", callback_delay_s=3600))
    async with serve(deferring[0]) as first, serve(deferring[1]) as second:
        ids = [
            await add_agent(platform, owner, f"s{n}", "SCOUT", e.url("/"), KEY)
            for n, e in enumerate([first, second])
        ]
        run_id = await start(platform, owner, ONE_SCOUT | {"scouts": 2})
        await driver.advance(run_id)
        while driver.in_flight(run_id):
            await driver.advance(run_id)
            await asyncio.sleep(0.01)
        running = await tasks_of(platform, run_id)
        assert [t.status for t in running] == ["RUNNING", "RUNNING"]
        answered, silent = running
        raw = orjson.dumps(
            {
                "taskId": answered.id,
                "output": {
                    "candidate_title": "Callback idea",
                    "target_customer": "People who call back",
                    "core_problem": "Waiting",
                    "proposed_solution": "Answer later",
                    "why_now": "Queues",
                    "claims": [],
                    "evidence": [],
                },
                "promptTokens": 3,
                "completionTokens": 4,
            }
        )
        stamp = int(clock.now())
        await complete_task(
            platform,
            driver.recorder,
            answered.id,
            raw,
            sign_completion(KEY, platform.settings.public_url, answered.id, raw, stamp),
            str(stamp),
            kick=driver.kick,
        )
        await driver.advance(run_id)
        assert [t.status for t in await tasks_of(platform, run_id)] == ["SUCCEEDED", "RUNNING"]
        clock.advance(1.0)  # the SCOUT deadline (1 s) has passed for the silent one
        await driver.advance(run_id)
        for job in [j for agent in deferring for j in agent._callbacks]:
            job.cancel()
    tasks = await tasks_of(platform, run_id)
    timed_out = next(t for t in tasks if t.id == silent.id)
    assert (timed_out.status, timed_out.reason, timed_out.via) == (
        "TIMEOUT",
        "External agent timed out after 1000ms",
        "deadline",
    )
    silent_agent = await agent_row(platform, silent.agent_id or "")
    assert silent_agent.consecutive_failures == 1
    assert silent_agent.cooldown_until == clock.now() + 60
    rerouted = [t for t in tasks if t.phase == "SCOUT" and t.slot == silent.slot and t.attempt == 1]
    assert len(rerouted) == 1  # to the house: the other scout holds a sibling slot
    assert rerouted[0].agent_id is None
    assert {t.agent_id for t in running} == set(ids)


async def test_after_a_restart_running_tasks_are_never_sent_again_and_lost_ones_are_voided(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    slow = EdgeAgent(key=KEY, dispatch_delay_s=30)  # answers long after its 1 s deadline
    deferring = EdgeAgent(key=KEY, defer_to="http://127.0.0.1:9", callback_delay_s=3600)
    async with serve(slow) as slow_end, serve(deferring) as deferring_end:
        await add_agent(platform, owner, "slow", "SCOUT", slow_end.url("/"), KEY)
        await add_agent(platform, owner, "deferring", "SCOUT", deferring_end.url("/"), KEY)
        run_id = await start(platform, owner, ONE_SCOUT | {"scouts": 2})
        first = RunDriver(platform)
        await first.advance(run_id)
        while len(slow.ledger.task_ids) + len(deferring.ledger.task_ids) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await first.close()  # the process dies: one dispatch in flight, one awaiting its callback
        sent = slow.ledger.task_ids + deferring.ledger.task_ids
        slow.dispatch_delay_s = 0  # it answers the reopened slot at once

        second = RunDriver(platform)
        try:
            for _ in range(3):
                await second.advance(run_id)
            assert second.in_flight() == 0
            assert [t.status for t in await tasks_of(platform, run_id)] == ["RUNNING"] * 2
            [deferred] = deferring.ledger.task_ids
            raw = orjson.dumps(
                {
                    "taskId": deferred,
                    "output": {
                        "candidate_title": "Late but welcome",
                        "target_customer": "Patient owners",
                        "core_problem": "Slow answers",
                        "proposed_solution": "Callbacks",
                        "why_now": "Async everywhere",
                        "claims": [],
                        "evidence": [],
                    },
                    "promptTokens": 1,
                    "completionTokens": 1,
                }
            )
            stamp = int(clock.now())
            signature = sign_completion(KEY, platform.settings.public_url, deferred, raw, stamp)
            await complete_task(
                platform, second.recorder, deferred, raw, signature, str(stamp), kick=second.kick
            )
            # The slow one's sender died with the first process: past its deadline and the
            # grace its sender had to record it, it is the platform's fault.
            clock.advance(1.0 + RECORD_GRACE_S)
            await second.drain(run_id)
        finally:
            await second.close()
        for job in list(deferring._callbacks):
            job.cancel()
    received = slow.ledger.task_ids + deferring.ledger.task_ids
    assert len(set(sent)) == 2
    assert len(received) == len(set(received)) == 3  # the reopened slot, under a new taskId
    assert set(sent) < set(received)
    tasks = await tasks_of(platform, run_id)
    scouting = sorted((t for t in tasks if t.phase == "SCOUT"), key=lambda t: (t.slot, t.attempt))
    outcomes = {t.id: (t.status, t.via) for t in scouting}
    assert outcomes[deferred] == ("SUCCEEDED", "callback")
    slow_task = slow.ledger.task_ids[0]  # the one cut off by the first process
    assert outcomes[slow_task] == ("VOIDED", "deadline")
    slow_agent = next(t.agent_id for t in scouting if t.id == slow_task)
    assert slow_agent is not None
    assert (await agent_row(platform, slow_agent)).consecutive_failures == 0
    assert (await agent_row(platform, slow_agent)).status == "ACTIVE"
    assert (await run_row(platform, run_id)).status == "COMPLETED"


def _phase_of(system: str) -> str:
    for phase, marker in [
        ("SCOUT", "You are a SCOUT"),
        ("BUILD", "You are a BUILDER"),
        ("VERIFY", "VERIFY phase"),
        ("CRITIQUE", "CRITIQUE phase"),
    ]:
        if marker in system:
            return phase
    raise AssertionError(system[:80])


MODEL_OUTPUTS: dict[str, dict[str, Any]] = {
    "SCOUT": {
        "candidate_title": "Model-made idea",
        "target_customer": "Teams with 10 to 50 people",
        "core_problem": "Meetings eat 6 hours a week",
        "proposed_solution": "An agenda tool that cancels meetings without one",
        "why_now": "Remote work since 2020",
        "claims": [{"type": "market", "text": "Meetings are costly"}],
        "evidence": [{"kind": "survey", "summary": "A survey said so"}],
    },
    "BUILD": {
        "execution": {
            "objective": "Ten paying teams",
            "phases": ["Interview", "Pilot"],
            "first_milestone": "3 pilots by June",
            "success_check": "Renewals above 80 percent",
        },
        "claims": [],
    },
    "VERIFY": {
        "evidence_assessments": [],
        "claim_assessments": [],
        "evidence_quality_score": 20,
        "claim_coverage_score": 15,
        "overall_confidence": "medium",
        "red_flags": [],
    },
    "CRITIQUE": {
        "strengths": ["Real pain for busy teams"],
        "weaknesses": ["A crowded market of agenda tools"],
        "score_adjustments": {"market": 2},
        "penalty_points": 1,
        "verdict": "pass",
        "fatal_flaw": False,
    },
}


def fake_model(broken: bool = False) -> Any:
    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        if broken:
            return web.json_response({"error": "overloaded"}, status=529)
        messages = (await request.json())["messages"]
        phase = _phase_of(messages[0]["content"])
        output = dict(MODEL_OUTPUTS[phase])
        found = re.search(r"The candidate id is (\S+)\.", messages[1]["content"])
        if found:
            output["candidate_id"] = found.group(1)
        return web.json_response(
            {
                "model": "house-llm-1",
                "choices": [{"message": {"content": orjson.dumps(output).decode()}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 50},
            }
        )

    return handle


async def run_with_house_model(platform: Platform, endpoint: Endpoint) -> str:
    provider = ChatProvider(platform.egress, endpoint.url("/v1"), "house-llm-1", "sk-house")
    runs = RunDriver(platform, house=HouseAgent(provider))
    try:
        run_id = await start(platform, await add_owner(platform), ONE_SCOUT)
        await runs.drain(run_id)
    finally:
        await runs.close()
    return run_id


async def test_the_house_model_serves_slots_when_configured(platform: Platform) -> None:
    async with serve(fake_model()) as endpoint:
        run_id = await run_with_house_model(platform, endpoint)
    tasks = await tasks_of(platform, run_id)
    assert {(t.executor, t.model_id, t.status) for t in tasks} == {
        ("house-model", "house-llm-1", "SUCCEEDED")
    }
    assert all((t.prompt_tokens, t.completion_tokens) == (100, 50) for t in tasks)
    assert len(endpoint.received) == len(tasks)
    sent = orjson.loads(endpoint.received[0].body)
    assert sent["messages"] == (tasks[0].payload or {})["messages"]  # the production prompt
    assert endpoint.received[0].headers["Authorization"] == "Bearer sk-house"
    run = await run_row(platform, run_id)
    assert run.report is not None
    assert run.report["ranking"][0]["title"] == "Model-made idea"


async def test_a_failing_house_model_falls_back_to_the_baseline(platform: Platform) -> None:
    async with serve(fake_model(broken=True)) as endpoint:
        run_id = await run_with_house_model(platform, endpoint)
    tasks = await tasks_of(platform, run_id)
    assert {(t.executor, t.model_id, t.status) for t in tasks} == {
        ("house-baseline", "house-baseline", "SUCCEEDED")
    }
    assert all("house model failed" in (t.reason or "") for t in tasks)
    assert "529" in (tasks[0].reason or "")
    assert (await run_row(platform, run_id)).status == "COMPLETED"


async def test_a_finished_run_settles_contributions_and_reputations(
    platform: Platform, driver: RunDriver
) -> None:
    owner = await add_owner(platform)
    agents = {
        "SCOUT": EdgeAgent(key=KEY),
        "BUILDER": EdgeAgent(key=KEY, role="BUILDER"),
        "ANALYST": EdgeAgent(key=KEY, role="ANALYST"),
    }
    async with (
        serve(agents["SCOUT"]) as s,
        serve(agents["BUILDER"]) as b,
        serve(agents["ANALYST"]) as a,
    ):
        ids = {
            role: await add_agent(platform, owner, role.lower(), role, e.url("/"), KEY)
            for role, e in [("SCOUT", s), ("BUILDER", b), ("ANALYST", a)]
        }
        run_id = await start(platform, owner, ONE_SCOUT)
        await driver.drain(run_id)
    tasks = await tasks_of(platform, run_id)
    assert [(t.phase, t.agent_id) for t in tasks] == [
        ("SCOUT", ids["SCOUT"]),
        ("BUILD", ids["BUILDER"]),
        ("VERIFY", ids["ANALYST"]),
        ("CRITIQUE", ids["ANALYST"]),
    ]
    assert all(t.contribution is not None and 0.4 <= t.contribution <= 1 for t in tasks)
    for agent_id in ids.values():
        assert (await agent_row(platform, agent_id)).reputation > 0
    run = await run_row(platform, run_id)
    assert run.report is not None
    [entry] = run.report["ranking"]
    assert [t["contribution"] for t in entry["tasks"]] == [t.contribution for t in tasks]
    # VERIFY saw the builder's claims and the scout's evidence; CRITIQUE saw the verification.
    verify_prompt = (tasks[2].payload or {})["messages"][1]["content"]
    assert "The builder's claims" in verify_prompt
    assert "The scout's evidence" in verify_prompt
    critique_prompt = (tasks[3].payload or {})["messages"][1]["content"]
    assert '"evidence_quality_score": 70' in critique_prompt
    assert (
        completion_url("https://x.example/p/", "t")
        == "https://x.example/p/api/agent-tasks/t/complete"
    )
