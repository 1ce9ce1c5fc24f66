"""The operator's view of failures: ``/metrics`` and the agent's page split them by kind.

A run against a scout that answers 503 and a builder that breaks the schema: each failure
is counted under its kind in ``palaestra_dispatch_failures_total``, and each agent's page
shows the same split. A completion with a forged signature is counted as ``signature``.
"""

from __future__ import annotations

import re

import orjson

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.dispatch import SlotRequest, open_slots
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.protocol import Phase
from palaestra.protocol.failures import CallFailure
from palaestra.web.failure_queries import FailureCount, failure_split
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import running
from tests.integration.run_support import add_agent, add_owner, counted, tasks_of
from tests.integration.servers import serve
from tests.integration.web_support import page, still

KEY = "kinds-key"
SIZES = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


def failures(platform: Platform, kind: str) -> float:
    return counted(platform, "palaestra_dispatch_failures", kind)


async def test_each_failed_dispatch_is_counted_and_shown_under_its_kind(
    platform: Platform,
) -> None:
    owner = await add_owner(platform)
    storm = EdgeAgent(key=KEY, failing=True)
    breaker = EdgeAgent(key=KEY, role="BUILDER", omit="execution")
    async with serve(storm) as storming, serve(breaker) as breaking:
        scout = await add_agent(platform, owner, "storm", "SCOUT", storming.url("/"), KEY)
        builder = await add_agent(platform, owner, "breaker", "BUILDER", breaking.url("/"), KEY)
        run = await start_run(platform, Caller(owner), "Find a niche", sizes=SIZES)
        driver = RunDriver(platform)
        try:
            await driver.drain(run.id)
        finally:
            await driver.close()
    ended = {(t.agent_id, t.status) for t in await tasks_of(platform, run.id) if t.agent_id}
    assert ended == {(scout, "FAILED"), (builder, "FAILED")}
    assert failures(platform, "non-2xx") == 1
    assert failures(platform, "schema") == 1
    assert failures(platform, "timeout") == 0
    assert await failure_split(platform, scout) == [FailureCount(CallFailure.NON_2XX, 1, 0)]
    assert await failure_split(platform, builder) == [FailureCount(CallFailure.SCHEMA, 1, 0)]
    (storming_split,) = await failure_split(platform, scout)
    assert storming_split.first_at is not None
    assert storming_split.first_at == storming_split.last_at  # one failure: first and last
    async with running(still(platform)) as api:
        status, body = await page(api, f"/agents/{scout}")
        assert status == 200
        assert re.search(
            r'<tr data-kind="non-2xx"><td>non-2xx</td><td class="num">1</td>'
            r'<td class="num">0</td><td class="opt"><time title="[^"]+">[^<]+</time></td>'
            r'<td><time title="[^"]+">[^<]+</time></td></tr>',
            body,
        )
        assert 'data-kind="schema"' not in body
        _, metrics = await page(api, "/metrics")
        assert 'palaestra_dispatch_failures_total{kind="non-2xx"} 1.0' in metrics


async def test_a_forged_completion_is_counted_as_a_signature_failure(platform: Platform) -> None:
    owner = await add_owner(platform)
    await add_agent(platform, owner, "scout", "SCOUT", "http://127.0.0.1:9/", KEY)
    run = await start_run(platform, Caller(owner), "g")
    request = SlotRequest(
        run_id=run.id,
        phase=Phase.SCOUT,
        candidate_id=None,
        slot=0,
        attempt=0,
        goal="g",
        launchpad_name="Make Money",
        messages=[{"role": "user", "content": "g"}],
        deadline_s=30,
    )
    [opened] = await open_slots(platform, [request], house_executor="house-baseline")
    task_id = opened.task_id
    async with running(still(platform)) as api:
        body = orjson.dumps(
            {"taskId": task_id, "output": {}, "promptTokens": 1, "completionTokens": 1}
        )
        headers = {
            "x-edgearena-timestamp": str(int(platform.clock.now())),
            "x-edgearena-signature": "sha256=" + "0" * 64,
        }
        async with api.session.post(
            api.base + f"/api/agent-tasks/{task_id}/complete", data=body, headers=headers
        ) as response:
            assert response.status == 401
            assert (await response.json())["code"] == "invalid-signature"
    assert failures(platform, "signature") == 1
