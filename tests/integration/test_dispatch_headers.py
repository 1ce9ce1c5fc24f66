"""What the signer sent is what the task keeps: real dispatches to agents on 127.0.0.1, on
both stores, through the embedded run driver and the workers' job path.

Each task sent to an agent keeps, on its row, the signed headers its POST carried; they are
compared with what the agent's server received, and the signature is checked here with the
standard library. A re-routed slot's attempt keeps its own; a 202 keeps them with its
deferral; a reply recorded after the task had ended still leaves them. The task's page and
the API's task read show them.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
from collections.abc import Sequence

import pytest
from sqlalchemy import select

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.runs.dispatch import open_slots
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.recorder import Finish, Recorder, Recording
from palaestra.engine.runs.service import start_run
from palaestra.engine.runs.work import TaskWork, post
from palaestra.jobs.broker import InProcessBroker
from palaestra.jobs.tasks import Jobs
from palaestra.platform import Platform
from palaestra.protocol import SIGNED_HEADERS, Phase
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.store.models import Task
from palaestra.web.task_queries import HEADERS_IN_FLIGHT, HEADERS_NOT_KEPT, task_page
from tests.integration.arena_rows import add_run
from tests.integration.browser_support import browser
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import ADMIN_TOKEN, running
from tests.integration.run_support import add_agent, add_owner, tasks_of
from tests.integration.servers import Endpoint, Received, serve
from tests.integration.test_dispatch import scout_slot
from tests.integration.test_jobs import settle
from tests.integration.web_support import still

pytestmark = pytest.mark.asyncio

KEY = "ea_test-headers-key"
SIZES = {"scouts": 2, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


def signature_of(key: str, stamp: str, target: str, body: bytes) -> str:
    material = f"{stamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


def as_received(received: Received) -> dict[str, str]:
    """The signed headers an agent's server saw, by the protocol's names."""
    return {name: received.headers[name] for name in SIGNED_HEADERS if name in received.headers}


def by_task(endpoints: Sequence[Endpoint]) -> dict[str, list[Received]]:
    """The POSTs every endpoint received, by the task id header they carried."""
    found: dict[str, list[Received]] = {}
    for endpoint in endpoints:
        for received in endpoint.received:
            if received.method == "POST":
                found.setdefault(received.headers["x-edgearena-task-id"], []).append(received)
    return found


def check_kept(tasks: Sequence[Task], endpoints: Sequence[Endpoint]) -> None:
    """Every task sent to an agent kept exactly the signed headers its agent received."""
    received = by_task(endpoints)
    sent = [t for t in tasks if t.agent_id is not None]
    assert sent
    assert set(received) == {t.id for t in sent}
    for task in sent:
        [request] = received[task.id]  # each task reaches its endpoint once
        assert task.request_headers == as_received(request)
        assert list(task.request_headers) == list(SIGNED_HEADERS)  # all three, in order
        target = f"127.0.0.1:{request.headers['Host'].rsplit(':', 1)[1]}/"
        stamp = task.request_headers["x-edgearena-timestamp"]
        expected = signature_of(KEY, stamp, target, request.body)
        assert task.request_headers["x-edgearena-signature"] == expected
        assert KEY not in str(task.request_headers)


async def entered(
    stack: contextlib.AsyncExitStack,
    platform: Platform,
    owner: str,
    agents: Sequence[EdgeAgent],
    prefix: str,
) -> list[Endpoint]:
    """Each agent served on 127.0.0.1 until ``stack`` closes, and registered as ACTIVE."""
    endpoints = [await stack.enter_async_context(serve(agent)) for agent in agents]
    for n, (agent, endpoint) in enumerate(zip(agents, endpoints, strict=True)):
        await add_agent(platform, owner, f"{prefix}{n}", agent.role, endpoint.url("/"), KEY)
    return endpoints


async def test_the_embedded_driver_keeps_each_attempts_signed_headers_and_shows_them(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    # One scout fails every dispatch (its slot is re-routed).
    agents = [
        EdgeAgent(key=KEY, role="SCOUT", failing=True),
        EdgeAgent(key=KEY, role="SCOUT"),
        EdgeAgent(key=KEY, role="BUILDER"),
        EdgeAgent(key=KEY, role="ANALYST"),
    ]
    async with contextlib.AsyncExitStack() as stack:
        endpoints = await entered(stack, platform, owner, agents, "a")
        run = await start_run(platform, Caller(owner), "Find a niche", sizes=SIZES)
        driver = RunDriver(platform)
        try:
            await driver.drain(run.id)
        finally:
            await driver.close()
    tasks = await tasks_of(platform, run.id)
    check_kept(tasks, endpoints)
    [task] = [t for t in tasks if t.status == "FAILED"]  # a failed POST kept its own too
    kept = task.request_headers
    assert kept is not None
    async with running(still(platform)) as api, browser(api) as admin:
        status, body = await api.call(
            "GET", f"/api/runs/{run.id}/tasks/{task.id}", token=ADMIN_TOKEN
        )
        assert status == 200
        assert body["request_headers"] == kept
        await admin.sign_in(ADMIN_TOKEN)
        status, page, _ = await admin.get(f"/tasks/{task.id}")
    assert status == 200
    for name, value in kept.items():
        row = f'<th scope="row" class="mono">{name}</th><td><span class="mono">{value}</span>'
        assert f'<tr data-header="{name}">{row}' in page, name
    assert "<em>not kept</em>" not in page
    assert KEY not in html.unescape(page)


async def test_each_attempt_of_a_slot_keeps_the_headers_of_its_own_post(
    platform: Platform, clock: FrozenClock
) -> None:
    owner = await add_owner(platform)
    agents = [EdgeAgent(key=KEY, failing=True), EdgeAgent(key=KEY)]
    async with contextlib.AsyncExitStack() as stack:
        endpoints = [await stack.enter_async_context(serve(agent)) for agent in agents]
        first = await add_agent(platform, owner, "first", "SCOUT", endpoints[0].url("/"), KEY)
        run = (await start_run(platform, Caller(owner), "Find a niche")).id
        recorder = Recorder(platform)
        work = TaskWork(platform, HouseAgent(), recorder)
        [opened] = await open_slots(platform, [scout_slot(run)], house_executor="house-baseline")
        assert opened.agent_id == first
        await work.send(opened)
        clock.advance(7)  # the re-route is signed at a later second; the first cools down
        await add_agent(platform, owner, "second", "SCOUT", endpoints[1].url("/"), KEY)
        [again] = await open_slots(
            platform, [scout_slot(run, attempt=1)], house_executor="house-baseline"
        )
        assert again.agent_id not in (None, first)
        await work.send(again)
        await recorder.close()
    tasks = await tasks_of(platform, run)
    assert sorted((t.attempt, t.status) for t in tasks) == [(0, "FAILED"), (1, "SUCCEEDED")]
    check_kept(tasks, endpoints)
    stamps = sorted(int((t.request_headers or {})["x-edgearena-timestamp"]) for t in tasks)
    assert stamps == [int(clock.now()) - 7, int(clock.now())]


async def test_the_workers_job_path_keeps_the_signed_headers(platform: Platform) -> None:
    owner = await add_owner(platform)
    agents = [
        EdgeAgent(key=KEY, role="SCOUT"),
        EdgeAgent(key=KEY, role="BUILDER"),
        EdgeAgent(key=KEY, role="ANALYST"),
    ]
    async with contextlib.AsyncExitStack() as stack:
        endpoints = await entered(stack, platform, owner, agents, "w")
        run = await start_run(platform, Caller(owner), "Find a niche", sizes=SIZES)
        broker = InProcessBroker(max_async_tasks=64)
        jobs = Jobs(broker, platform)
        await jobs.step_runs.kiq()
        await settle(jobs, broker, run.id)
        await jobs.close()
    tasks = await tasks_of(platform, run.id)
    assert {t.status for t in tasks} == {"SUCCEEDED"}
    check_kept(tasks, endpoints)


async def test_a_202_keeps_the_signed_headers_with_its_deferral(platform: Platform) -> None:
    owner = await add_owner(platform)
    agent = EdgeAgent(key=KEY, defer_to="http://127.0.0.1:9/", callback_delay_s=3600)
    async with serve(agent) as endpoint:
        await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run = (await start_run(platform, Caller(owner), "Find a niche")).id
        [opened] = await open_slots(platform, [scout_slot(run)], house_executor="house-baseline")
        sent = await post(platform, opened)
        assert sent.end is None
        recorder = Recorder(platform)
        await recorder.defer(opened.task_id, run, sent.headers)
        await recorder.close()
        for job in list(agent._callbacks):
            job.cancel()
    [task] = await tasks_of(platform, run)
    assert (task.status, task.deferred_at is not None) == ("RUNNING", True)
    check_kept([task], [endpoint])


async def test_a_reply_recorded_after_its_task_ended_still_leaves_its_headers(
    platform: Platform,
) -> None:
    owner = await add_owner(platform)
    async with serve(EdgeAgent(key=KEY)) as endpoint:
        await add_agent(platform, owner, "s", "SCOUT", endpoint.url("/"), KEY)
        run = (await start_run(platform, Caller(owner), "Find a niche")).id
        [opened] = await open_slots(platform, [scout_slot(run)], house_executor="house-baseline")
        sent = await post(platform, opened)
    assert sent.end is not None
    recorder = Recorder(platform)
    timed_out = Finish(
        task_id=opened.task_id,
        run_id=run,
        phase=Phase.SCOUT,
        status=TaskStatus.TIMEOUT,
        via="sync",
        executor=opened.executor,
        reason="External agent timed out after 2000ms",
    )
    assert await recorder.finish(timed_out) is Recording.RECORDED
    assert await recorder.finish(sent.end) is Recording.NOT_RUNNING
    await recorder.close()
    async with platform.db.session() as session:
        task = await session.scalar(select(Task).where(Task.id == opened.task_id))
    assert task is not None
    assert task.status == "TIMEOUT"  # the end stands...
    check_kept([task], [endpoint])  # ...and the POST still says what it carried


async def test_a_task_without_kept_headers_says_why(platform: Platform) -> None:
    owner = await add_owner(platform)
    agent = await add_agent(platform, owner, "s", "SCOUT", "http://127.0.0.1:9/", KEY)
    sent = {"agent_id": agent, "sent_at": platform.clock.now(), "payload": {"taskId": "t"}}
    run = await add_run(
        platform,
        [sent | {"status": "RUNNING"}, sent | {"status": "FAILED"}],
        status="RUNNING",
    )
    in_flight, older = await tasks_of(platform, run)
    admin = Caller(owner_id=None, is_admin=True)
    notes = [(await task_page(platform, t.id, admin)) for t in (in_flight, older)]
    assert [n.headers_note if n else None for n in notes] == [HEADERS_IN_FLIGHT, HEADERS_NOT_KEPT]
