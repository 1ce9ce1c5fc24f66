"""The dispatcher against real agents on 127.0.0.1, on both stores.

Each slot is stored RUNNING before anything is sent, reaches its agent once
with a signature the agent checks with stdlib hmac, and ends with the output
or the exact failure reason, fed to the status machine with a cooldown.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import orjson
import pytest

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.lifecycle import COOLDOWN_S
from palaestra.engine.runs.dispatch import SlotRequest, open_slots
from palaestra.engine.runs.recorder import Recorder, Recording
from palaestra.engine.runs.service import start_run
from palaestra.engine.runs.work import send
from palaestra.platform import Platform
from palaestra.protocol import DispatchPayload, Phase
from palaestra.rules.runs.prompts import LAUNCHPADS, messages_for
from palaestra.store.models import Agent
from tests.integration.edge_agents import EdgeAgent
from tests.integration.run_support import (
    add_agent,
    add_owner,
    agent_row,
    dispatch_events,
    tasks_of,
)
from tests.integration.servers import reply, serve

pytestmark = pytest.mark.asyncio

HOUSE = "house-baseline"
KEY = "ea_test-key"


def scout_slot(
    run_id: str, slot: int = 0, attempt: int = 0, deadline_s: float = 2.0
) -> SlotRequest:
    launchpad = LAUNCHPADS["make-money"]
    return SlotRequest(
        run_id=run_id,
        phase=Phase.SCOUT,
        candidate_id=None,
        slot=slot,
        attempt=attempt,
        goal="Find a niche",
        launchpad_name=launchpad.title,
        messages=messages_for(Phase.SCOUT, launchpad, "Find a niche", slot=slot),
        deadline_s=deadline_s,
        seed=run_id,
    )


def expected_signature(key: str, stamp: str, target: str, body: bytes) -> str:
    material = f"{stamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


async def new_run(platform: Platform, owner: str) -> str:
    return (await start_run(platform, Caller(owner), "Find a niche")).id


async def test_a_slot_is_stored_running_then_sent_once_signed_and_recorded(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    agent = EdgeAgent(key=KEY)
    async with serve(agent) as endpoint:
        agent_id = await add_agent(platform, owner, "scout", "SCOUT", endpoint.url("/hook"), KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        [stored] = await tasks_of(platform, run_id)
        assert (stored.status, stored.agent_id, stored.executor) == ("RUNNING", agent_id, "scout")
        assert (stored.deadline_s, stored.deadline_at) == (2.0, None)  # due from its send
        assert endpoint.received == []  # durable before anything is sent
        # A send in flight holds its prompts once, in the body it sends.
        assert opened.request.messages == ()
        assert orjson.loads(opened.body)["messages"] == scout_slot(run_id).messages
        end = await send(platform, opened)
        assert end is not None
        assert await Recorder(platform).finish(end) is Recording.RECORDED

    [received] = endpoint.received
    stamp = received.headers["x-edgearena-timestamp"]
    assert int(stamp) == int(clock.now())
    target = f"127.0.0.1:{endpoint.port}/hook"
    assert received.headers["x-edgearena-signature"] == expected_signature(
        KEY, stamp, target, received.body
    )
    assert received.headers["x-edgearena-task-id"] == stored.id
    assert agent.ledger.bad_dispatches == 0
    payload = DispatchPayload.parse(orjson.loads(received.body))
    assert (payload.task_id, payload.run_id, payload.phase, payload.role) == (
        stored.id,
        run_id,
        "SCOUT",
        "SCOUT",
    )
    assert payload.candidate_id is None
    assert payload.launchpad_name == "Make Money"
    assert [m.role for m in payload.messages] == ["system", "user"]
    assert stored.payload == orjson.loads(received.body)

    [task] = await tasks_of(platform, run_id)
    assert (task.status, task.via, task.reason) == ("SUCCEEDED", "sync", None)
    assert task.output is not None
    assert task.output["candidate_title"] == "Invoice autopilot"
    assert (task.prompt_tokens, task.completion_tokens, task.model_id) == (1, 1, "m")
    assert task.contribution is None  # settled when the run ends, by how the work fared
    row = await agent_row(platform, agent_id)
    assert (row.consecutive_failures, row.last_heartbeat, row.cooldown_until) == (
        0,
        clock.now(),
        None,
    )
    [event] = await dispatch_events(platform, agent_id)
    assert event.outcome == "success"
    assert event.detail is not None
    assert (event.detail["task_id"], event.detail["run_id"], event.detail["phase"]) == (
        task.id,
        run_id,
        "SCOUT",
    )


FAILURES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "http-503",
        {"failing": True},
        "FAILED",
        'External agent responded with 503: {"error": "upstream down"}',
    ),
    ("timeout", {"dispatch_delay_s": 2.0}, "TIMEOUT", "External agent timed out after 300ms"),
    ("schema", {"omit": "why_now"}, "FAILED", "Validation failed: Missing why_now"),
    (
        "bad-signature",
        {"key": "not-the-key"},
        "FAILED",
        'External agent responded with 401: {"error": "invalid signature"}',
    ),
]


@pytest.mark.parametrize(
    ("behaviour", "status", "reason"),
    [f[1:] for f in FAILURES],
    ids=[f[0] for f in FAILURES],
)
async def test_a_failed_dispatch_is_recorded_with_its_reason_and_costs_the_agent(
    platform: Platform, clock: FrozenClock, behaviour: dict[str, Any], status: str, reason: str
) -> None:
    owner = await add_owner(platform)
    agent = EdgeAgent(**({"key": KEY} | behaviour))
    async with serve(agent) as endpoint:
        agent_id = await add_agent(platform, owner, "scout", "SCOUT", endpoint.url("/"), KEY)
        run_id = await new_run(platform, owner)
        # Short only where the timeout is the point: a loaded machine may take a while to answer.
        deadline_s = 0.3 if "dispatch_delay_s" in behaviour else 10.0
        [opened] = await open_slots(
            platform, [scout_slot(run_id, deadline_s=deadline_s)], house_executor=HOUSE
        )
        end = await send(platform, opened)
        assert end is not None
        await Recorder(platform).finish(end)
    [task] = await tasks_of(platform, run_id)
    assert (task.status, task.reason, task.output, task.contribution) == (status, reason, None, 0.0)
    row = await agent_row(platform, agent_id)
    assert row.consecutive_failures == 1
    assert row.cooldown_until == clock.now() + COOLDOWN_S
    assert row.reputation == pytest.approx(-0.2)
    assert row.status == "ACTIVE"
    [event] = await dispatch_events(platform, agent_id)
    assert (event.outcome, event.reason) == ("failure", reason)


async def test_failures_feed_the_status_machine(platform: Platform) -> None:
    owner = await add_owner(platform)
    async with serve(EdgeAgent(key=KEY, failing=True)) as endpoint:
        agent_id = await add_agent(
            platform, owner, "s", "SCOUT", endpoint.url("/"), KEY, consecutive_failures=2
        )
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        end = await send(platform, opened)
        assert end is not None
        await Recorder(platform).finish(end)
    row = await agent_row(platform, agent_id)
    assert (row.status, row.consecutive_failures) == ("DEGRADED", 3)


async def test_a_202_leaves_the_task_running_for_the_callback(platform: Platform) -> None:
    owner = await add_owner(platform)
    agent = EdgeAgent(key=KEY, defer_to="http://127.0.0.1:9/", callback_delay_s=3600)
    async with serve(agent) as endpoint:
        agent_id = await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        assert await send(platform, opened) is None
        for job in list(agent._callbacks):
            job.cancel()
    [task] = await tasks_of(platform, run_id)
    assert (task.status, task.completed_at) == ("RUNNING", None)
    assert (await agent_row(platform, agent_id)).consecutive_failures == 0


async def test_a_202_carrying_a_reply_envelope_is_recorded_like_a_200(
    platform: Platform,
) -> None:
    owner = await add_owner(platform)
    async with serve(EdgeAgent(key=KEY, reply_status=202)) as endpoint:
        agent_id = await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        end = await send(platform, opened)
        assert end is not None
        await Recorder(platform).finish(end)
    [task] = await tasks_of(platform, run_id)
    assert (task.status, task.via, task.reason) == ("SUCCEEDED", "sync", None)
    assert task.output is not None
    assert task.output["candidate_title"] == "Invoice autopilot"
    [event] = await dispatch_events(platform, agent_id)
    assert event.outcome == "success"


async def test_token_counts_are_numbers_as_the_seed_types_them(platform: Platform) -> None:
    """A reply with ``promptTokens: 12.5`` succeeds (the seed types it ``number``); the
    store keeps the nearest whole number, and a negative count is kept as 0."""
    owner = await add_owner(platform)
    async with serve(EdgeAgent(key=KEY, tokens=(12.5, -2))) as endpoint:
        agent_id = await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        end = await send(platform, opened)
        assert end is not None
        await Recorder(platform).finish(end)
    [task] = await tasks_of(platform, run_id)
    assert (task.status, task.prompt_tokens, task.completion_tokens) == ("SUCCEEDED", 13, 0)
    assert (await agent_row(platform, agent_id)).consecutive_failures == 0


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"", "application/json"),
        (b'{"accepted": true}', "application/json"),
        (b"queued", "text/plain"),
    ],
    ids=["empty", "no-envelope", "not-json"],
)
async def test_a_202_without_an_envelope_waits_for_the_callback(
    platform: Platform, body: bytes, content_type: str
) -> None:
    owner = await add_owner(platform)
    async with serve(reply(body, status=202, content_type=content_type)) as endpoint:
        agent_id = await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        assert await send(platform, opened) is None
    [task] = await tasks_of(platform, run_id)
    assert (task.status, task.completed_at) == ("RUNNING", None)
    assert (await agent_row(platform, agent_id)).consecutive_failures == 0


async def test_selection_skips_ineligible_agents_and_falls_back_to_the_house(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    url = "http://127.0.0.1:9/"
    now = clock.now()
    ineligible: list[tuple[str, str, dict[str, Any]]] = [
        ("cooling", "SCOUT", {"cooldown_until": now + 1}),
        ("held", "SCOUT", {"hold": True}),
        ("paused", "SCOUT", {"status": "PAUSED"}),
        ("pending", "SCOUT", {"status": "PENDING"}),
        ("suspended", "SCOUT", {"status": "SUSPENDED"}),
        ("analyst", "ANALYST", {}),
    ]
    for name, role, state in ineligible:
        await add_agent(platform, owner, name, role, url, KEY, **state)
    run_id = await new_run(platform, owner)
    [first] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
    assert (first.agent_id, first.executor, first.body) == (None, HOUSE, b"")
    assert first.request.messages == scout_slot(run_id).messages  # the house answers from them

    ready = await add_agent(platform, owner, "ready", "SCOUT", url, KEY, status="PROBATION")
    [second, third] = await open_slots(
        platform, [scout_slot(run_id, 1), scout_slot(run_id, 2)], house_executor=HOUSE
    )
    assert (second.agent_id, second.executor) == (ready, "ready")
    assert third.agent_id is None  # "ready" already holds a SCOUT slot of this run


async def test_an_agent_that_failed_in_a_run_is_not_chosen_again_in_it(
    platform: Platform,
) -> None:
    owner = await add_owner(platform)
    async with serve(EdgeAgent(key=KEY, failing=True)) as endpoint:
        failing = await add_agent(platform, owner, "failing", "SCOUT", endpoint.url("/"), KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        assert opened.agent_id == failing
        end = await send(platform, opened)
        assert end is not None
        await Recorder(platform).finish(end)
    async with platform.db.session() as session, session.begin():  # the cooldown is over
        agent = await session.get(Agent, failing)
        assert agent is not None
        agent.cooldown_until = None
    [rerouted] = await open_slots(platform, [scout_slot(run_id, 0, 1)], house_executor=HOUSE)
    assert rerouted.agent_id is None
    other_run = await new_run(platform, owner)
    [elsewhere] = await open_slots(platform, [scout_slot(other_run)], house_executor=HOUSE)
    assert elsewhere.agent_id == failing


async def test_opening_a_slot_is_idempotent(platform: Platform) -> None:
    owner = await add_owner(platform)
    run_id = await new_run(platform, owner)
    assert len(await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)) == 1
    assert await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE) == []
    assert len(await tasks_of(platform, run_id)) == 1
