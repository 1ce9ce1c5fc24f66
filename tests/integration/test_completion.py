"""The async completion callback through the real server, on both stores: every row of the
seed's error table, the order the checks run in, exactly-once under concurrency, and the cap.

Agents sign with the standard library's hmac over the host and path of the platform's
*public* URL, which here differs from the address the test posts to.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson
import pytest
from sqlalchemy import text

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.lifecycle import COOLDOWN_S
from palaestra.engine.runs.dispatch import SlotRequest, open_slots
from palaestra.engine.runs.endpoint import announce_up, beat
from palaestra.engine.runs.recorder import Finish, Recorder
from palaestra.engine.runs.service import start_run
from palaestra.engine.runs.writes import claim_sends
from palaestra.platform import Platform
from palaestra.protocol import Phase
from palaestra.rules.runs.runflow import TaskStatus
from palaestra.settings import Settings
from palaestra.store.models import Task
from tests.integration.edge_agents import sign_completion
from tests.integration.platform_fixtures import Api, running
from tests.integration.run_support import add_agent, add_owner, agent_row, dispatch_events

pytestmark = pytest.mark.asyncio

PUBLIC = "https://arena.example.com/base"
KEY = "ea_completion-key"
CAP = 262_144
MISSING = "01900000-0000-7000-8000-000000000000"
SCOUT_OUTPUT = {
    "candidate_title": "Invoice autopilot",
    "target_customer": "Small agencies",
    "core_problem": "Invoicing eats hours",
    "proposed_solution": "Timesheets in, invoices out",
    "why_now": "APIs matured",
    "claims": [],
    "evidence": [],
}


@pytest.fixture
def general_cap(request: pytest.FixtureRequest) -> int | None:
    """The API's general body cap for a test that sets it (indirectly); None keeps the default."""
    cap: int | None = getattr(request, "param", None)
    return cap


@pytest.fixture
def settings(settings: Settings, general_cap: int | None) -> Settings:
    # No stepper here: the tasks are made by hand and must stay as made.
    update: dict[str, Any] = {"public_url": PUBLIC, "runs_enabled": False}
    if general_cap is not None:
        update["max_body_bytes"] = general_cap
    return settings.model_copy(update=update)


@dataclass
class Setup:
    api: Api
    platform: Platform
    owner_id: str
    agent_id: str

    async def task(self, *, house: bool = False) -> str:
        """A RUNNING task of a fresh run, dispatched to the agent (or, with ``house``, not),
        claimed for sending as the stepper claims it just before its POST."""
        run = await start_run(self.platform, Caller(self.owner_id), "g")
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
            house=house,
        )
        [opened] = await open_slots(self.platform, [request], house_executor="house-baseline")
        assert (opened.agent_id is None) is house
        claim = partial(claim_sends, [opened.task_id], self.platform.clock.now())
        assert await self.platform.db.transact(claim, single=True) == [opened.task_id]
        return opened.task_id

    async def stored(self, task_id: str) -> Task:
        async with self.platform.db.session() as session:
            task = await session.get(Task, task_id)
        assert task is not None
        return task


@pytest.fixture
async def setup(platform: Platform) -> AsyncIterator[Setup]:
    owner = await add_owner(platform)
    agent_id = await add_agent(platform, owner, "scout", "SCOUT", "http://127.0.0.1:9/", KEY)
    async with running(platform) as api:
        yield Setup(api, platform, owner, agent_id)


def body_for(task_id: str, output: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "output": SCOUT_OUTPUT if output is None else output,
        "promptTokens": 12,
        "completionTokens": 34,
        "modelId": "agent-model",
    } | extra


async def post(
    api: Api,
    task_id: str,
    body: dict[str, Any] | bytes,
    *,
    key: str = KEY,
    stamp: int | None = None,
    public: str = PUBLIC,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    stamp = int(time.time()) if stamp is None else stamp
    signed = {
        "Content-Type": "application/json",
        "x-edgearena-timestamp": str(stamp),
        "x-edgearena-signature": sign_completion(key, public, task_id, raw, stamp),
    }
    sent = headers if headers is not None else signed
    return await api.call("POST", f"/api/agent-tasks/{task_id}/complete", data=raw, headers=sent)


def error(message: str, code: str) -> dict[str, str]:
    return {"error": message, "code": code}


async def test_an_accepted_completion_is_a_synchronous_success(setup: Setup) -> None:
    task_id = await setup.task()
    assert await post(setup.api, task_id, body_for(task_id)) == (200, {"accepted": True})
    task = await setup.stored(task_id)
    assert (task.status, task.via, task.output) == ("SUCCEEDED", "callback", SCOUT_OUTPUT)
    assert (task.prompt_tokens, task.completion_tokens, task.model_id) == (12, 34, "agent-model")
    agent = await agent_row(setup.platform, setup.agent_id)
    assert (agent.consecutive_failures, agent.cooldown_until) == (0, None)
    assert agent.last_heartbeat == setup.platform.clock.now()
    [event] = await dispatch_events(setup.platform, setup.agent_id)
    assert event.outcome == "success"
    assert event.detail is not None
    assert event.detail["via"] == "callback"


async def test_the_model_id_is_optional(setup: Setup) -> None:
    task_id = await setup.task()
    body = body_for(task_id)
    del body["modelId"]
    assert (await post(setup.api, task_id, body))[0] == 200


async def test_a_byte_order_mark_before_the_body_is_skipped(setup: Setup) -> None:
    task_id = await setup.task()
    raw = b"\xef\xbb\xbf" + orjson.dumps(body_for(task_id))  # signed as sent, mark included
    assert await post(setup.api, task_id, raw) == (200, {"accepted": True})
    assert (await setup.stored(task_id)).output == SCOUT_OUTPUT


async def test_token_counts_written_as_whole_floats_are_counts(setup: Setup) -> None:
    task_id = await setup.task()
    raw = orjson.dumps(body_for(task_id, promptTokens=12.0, completionTokens=34.0))
    assert b'"promptTokens":12.0' in raw
    assert await post(setup.api, task_id, raw) == (200, {"accepted": True})
    task = await setup.stored(task_id)
    assert (task.prompt_tokens, task.completion_tokens) == (12, 34)


async def test_a_fractional_token_count_is_a_number_and_recorded_whole(setup: Setup) -> None:
    """The seed types the counts as ``number``: 12.5 is accepted, recorded as 13."""
    task_id = await setup.task()
    body = body_for(task_id, promptTokens=12.5, completionTokens=0.25)
    assert await post(setup.api, task_id, body) == (200, {"accepted": True})
    task = await setup.stored(task_id)
    assert (task.status, task.prompt_tokens, task.completion_tokens) == ("SUCCEEDED", 13, 0)


async def test_a_token_count_past_what_the_store_holds_is_recorded_at_its_most(
    setup: Setup,
) -> None:
    task_id = await setup.task()
    body = body_for(task_id, completionTokens=3_000_000_000, promptTokens=-4)
    assert await post(setup.api, task_id, body) == (200, {"accepted": True})
    task = await setup.stored(task_id)
    assert (task.prompt_tokens, task.completion_tokens) == (0, 2**31 - 1)


async def test_a_token_count_that_is_not_a_number_is_refused(setup: Setup) -> None:
    task_id = await setup.task()
    assert await post(setup.api, task_id, body_for(task_id, promptTokens="12")) == (
        400,
        error("Validation failed: promptTokens: expected a number, got string", "invalid-body"),
    )
    assert (await setup.stored(task_id)).status == "RUNNING"


async def test_task_id_in_body_must_match_the_path(setup: Setup) -> None:
    task_id = await setup.task()
    other = await setup.task()
    assert await post(setup.api, task_id, body_for(other)) == (
        400,
        error("taskId in body must match path parameter", "task-id-mismatch"),
    )


async def test_an_output_over_the_cap_is_refused_and_one_at_the_cap_accepted(
    setup: Setup,
) -> None:
    def padded(size: int) -> dict[str, Any]:
        base = SCOUT_OUTPUT | {"notes": ""}
        return base | {"notes": "x" * (size - len(orjson.dumps(base)))}

    assert len(orjson.dumps(padded(CAP))) == CAP
    over, at = await setup.task(), await setup.task()
    assert await post(setup.api, over, body_for(over, padded(CAP + 1))) == (
        400,
        error("output exceeds 262144 byte limit", "output-too-large"),
    )
    assert (await setup.stored(over)).status == "RUNNING"  # nothing was decided
    assert await post(setup.api, at, body_for(at, padded(CAP))) == (200, {"accepted": True})


def padded_body(task_id: str, size: int) -> bytes:
    """A completion body of exactly ``size`` bytes, the padding inside its output."""
    base = orjson.dumps(body_for(task_id, SCOUT_OUTPUT | {"notes": ""}))
    return base.replace(b'"notes":""', b'"notes":"' + b"x" * (size - len(base)) + b'"')


async def send(api: Api, task_id: str, raw: bytes, *, streamed: bool) -> tuple[int, Any]:
    """POST ``raw`` unsigned, its length declared or (``streamed``) sent chunked."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(raw), 64 * 1024):
            yield raw[start : start + 64 * 1024]

    url = f"{api.base}/api/agent-tasks/{task_id}/complete"
    data = pieces() if streamed else io.BytesIO(raw)
    async with api.session.post(url, data=data, headers={"Content-Type": "application/json"}) as r:
        assert ("Transfer-Encoding" in r.request_info.headers) is streamed
        return r.status, orjson.loads(await r.read())


@pytest.mark.parametrize("streamed", [False, True], ids=["declared", "streamed"])
@pytest.mark.parametrize("general_cap", [64 * 1024], indirect=True)
async def test_an_output_over_the_cap_is_a_400_under_a_smaller_general_body_cap(
    setup: Setup, general_cap: int, streamed: bool
) -> None:
    raw = orjson.dumps(body_for(MISSING, SCOUT_OUTPUT | {"pad": "x" * CAP}))
    assert general_cap < CAP < len(raw)
    assert await send(setup.api, MISSING, raw, streamed=streamed) == (
        400,
        error("output exceeds 262144 byte limit", "output-too-large"),
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["declared", "streamed"])
@pytest.mark.parametrize("general_cap", [8 * 1024 * 1024], indirect=True)
async def test_only_a_body_past_the_transport_cap_is_a_413_under_a_larger_general_one(
    setup: Setup, general_cap: int, streamed: bool
) -> None:
    transport = 1_048_576
    assert CAP < transport < general_cap
    at, past = padded_body(MISSING, transport), padded_body(MISSING, transport + 1)
    assert (len(at), len(past)) == (transport, transport + 1)
    assert await send(setup.api, MISSING, at, streamed=streamed) == (
        400,
        error("output exceeds 262144 byte limit", "output-too-large"),
    )
    assert await send(setup.api, MISSING, past, streamed=streamed) == (
        413,
        error("Request body exceeds 1048576 bytes", "payload-too-large"),
    )


async def end_task(setup: Setup, task_id: str, agent_id: str | None) -> None:
    """End ``task_id`` as a step would at its deadline."""
    task = await setup.stored(task_id)
    await Recorder(setup.platform).finish(
        Finish(
            task_id=task_id,
            run_id=task.run_id,
            phase=Phase.SCOUT,
            status=TaskStatus.TIMEOUT,
            via="deadline",
            executor=task.executor,
            agent_id=agent_id,
            reason="External agent timed out after 30000ms",
        )
    )


async def remove_agent(setup: Setup) -> None:
    async with setup.platform.db.session() as session, session.begin():
        await session.execute(text("DELETE FROM agents WHERE id = :id"), {"id": setup.agent_id})


async def test_an_unknown_task_is_not_found_whatever_its_signature(setup: Setup) -> None:
    not_found = (400, error(f"Task {MISSING} not found", "task-not-found"))
    assert await post(setup.api, MISSING, body_for(MISSING)) == not_found
    assert await post(setup.api, MISSING, body_for(MISSING), key="ea_guess") == not_found
    stale = int(time.time()) - 999
    assert await post(setup.api, MISSING, body_for(MISSING), stamp=stale) == not_found


async def test_a_house_task_was_not_dispatched_to_an_external_agent(setup: Setup) -> None:
    task_id = await setup.task(house=True)
    assert await post(setup.api, task_id, body_for(task_id)) == (
        400,
        error(f"Task {task_id} was not dispatched to an external agent", "not-external"),
    )


async def test_a_task_whose_agent_is_gone_has_no_agent(setup: Setup) -> None:
    task_id = await setup.task()
    await remove_agent(setup)
    assert await post(setup.api, task_id, body_for(task_id)) == (
        400,
        error("Agent not found for this task", "agent-not-found"),
    )


TIMESTAMP = "Invalid or missing X-EdgeArena-Timestamp header"


@pytest.mark.parametrize("stamp", [None, "", "soon", "-5", "1.5", "1" * 13])
async def test_a_missing_or_invalid_timestamp_is_refused(setup: Setup, stamp: str | None) -> None:
    task_id = await setup.task()
    raw = orjson.dumps(body_for(task_id))
    now = int(time.time())
    headers = {"x-edgearena-signature": sign_completion(KEY, PUBLIC, task_id, raw, now)}
    if stamp is not None:
        headers["x-edgearena-timestamp"] = stamp
    assert await post(setup.api, task_id, raw, headers=headers) == (
        401,
        error(TIMESTAMP, "invalid-timestamp"),
    )


@pytest.mark.parametrize("offset", [-301, -1000, 301, 400])
async def test_a_timestamp_outside_the_window_is_refused_with_its_skew(
    setup: Setup, offset: int
) -> None:
    task_id = await setup.task()
    now = int(setup.platform.clock.now())
    status, body = await post(setup.api, task_id, body_for(task_id), stamp=now + offset)
    assert (status, body) == (
        401,
        error(
            f"Signature timestamp outside ±300s replay window (skew={-offset}s)",
            "invalid-timestamp",
        ),
    )


@pytest.mark.parametrize("offset", [-300, 300])
async def test_the_window_edges_are_inside(setup: Setup, offset: int) -> None:
    task_id = await setup.task()
    now = int(setup.platform.clock.now())
    assert (await post(setup.api, task_id, body_for(task_id), stamp=now + offset))[0] == 200


SIGNATURE = error("Invalid task completion signature", "invalid-signature")


async def test_a_wrong_key_is_refused(setup: Setup) -> None:
    task_id = await setup.task()
    assert await post(setup.api, task_id, body_for(task_id), key="ea_other") == (401, SIGNATURE)


async def test_the_signature_covers_the_public_url_not_the_host_it_came_to(setup: Setup) -> None:
    task_id = await setup.task()
    assert await post(setup.api, task_id, body_for(task_id), public=setup.api.base) == (
        401,
        SIGNATURE,
    )
    assert await post(
        setup.api, task_id, body_for(task_id), public="https://arena.example.com"
    ) == (
        401,
        SIGNATURE,
    )


async def test_a_missing_signature_or_a_changed_body_is_refused(setup: Setup) -> None:
    task_id = await setup.task()
    raw = orjson.dumps(body_for(task_id))
    now = int(time.time())
    bare = {"x-edgearena-timestamp": str(now)}
    assert await post(setup.api, task_id, raw, headers=bare) == (401, SIGNATURE)
    signed = {
        "x-edgearena-timestamp": str(now),
        "x-edgearena-signature": sign_completion(KEY, PUBLIC, task_id, raw, now),
    }
    changed = orjson.dumps(body_for(task_id, completionTokens=35))
    assert await post(setup.api, task_id, changed, headers=signed) == (401, SIGNATURE)


async def test_a_replayed_completion_is_refused(setup: Setup) -> None:
    task_id = await setup.task()
    raw = orjson.dumps(body_for(task_id))
    now = int(time.time())
    headers = {
        "x-edgearena-timestamp": str(now),
        "x-edgearena-signature": sign_completion(KEY, PUBLIC, task_id, raw, now),
    }
    assert await post(setup.api, task_id, raw, headers=headers) == (200, {"accepted": True})
    assert await post(setup.api, task_id, raw, headers=headers) == (
        401,
        error("Task completion already submitted (replay rejected)", "replay"),
    )
    # Signed again at another second, it is not a replay: the task is simply done.
    assert await post(setup.api, task_id, raw, stamp=now - 1) == (
        400,
        error(f"Task {task_id} is not in RUNNING state", "not-running"),
    )


async def test_a_signature_in_capitals_is_accepted_and_one_digest_whatever_its_case(
    setup: Setup,
) -> None:
    task_id = await setup.task()
    raw = orjson.dumps(body_for(task_id))
    now = int(time.time())
    hexdigest = sign_completion(KEY, PUBLIC, task_id, raw, now).removeprefix("sha256=")
    assert hexdigest == hexdigest.lower()

    def sent(signature: str) -> dict[str, str]:
        return {"x-edgearena-timestamp": str(now), "x-edgearena-signature": signature}

    upper = sent("sha256=" + hexdigest.upper())
    assert await post(setup.api, task_id, raw, headers=upper) == (200, {"accepted": True})
    # The same digest again in other capitals is the same (taskId, signature) pair.
    for again in ("sha256=" + hexdigest, "SHA256=" + hexdigest.upper()):
        assert await post(setup.api, task_id, raw, headers=sent(again)) == (
            401,
            error("Task completion already submitted (replay rejected)", "replay"),
        )


async def test_an_ended_task_is_not_running_whoever_asks(setup: Setup) -> None:
    task_id = await setup.task()
    await end_task(setup, task_id, setup.agent_id)
    not_running = (400, error(f"Task {task_id} is not in RUNNING state", "not-running"))
    assert await post(setup.api, task_id, body_for(task_id), key="ea_guess") == not_running
    assert await post(setup.api, task_id, body_for(task_id)) == not_running


async def test_an_output_breaking_the_schema_fails_the_task_against_the_agent(
    setup: Setup,
) -> None:
    task_id = await setup.task()
    output = {k: v for k, v in SCOUT_OUTPUT.items() if k != "why_now"}
    assert await post(setup.api, task_id, body_for(task_id, output)) == (
        400,
        error("Validation failed: Missing why_now", "validation-failed"),
    )
    task = await setup.stored(task_id)
    assert (task.status, task.reason, task.via) == (
        "FAILED",
        "Validation failed: Missing why_now",
        "callback",
    )
    agent = await agent_row(setup.platform, setup.agent_id)
    assert agent.consecutive_failures == 1
    assert agent.cooldown_until == setup.platform.clock.now() + COOLDOWN_S
    assert await post(setup.api, task_id, body_for(task_id)) == (
        400,
        error(f"Task {task_id} is not in RUNNING state", "not-running"),
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "Unexpected end of JSON input"),
        (b"[]", "Validation failed: body: expected an object"),
        (b'{"taskId": "x"}', "Validation failed: Missing output"),
        (
            b'{"taskId": "x", "output": {}, "promptTokens": true, "completionTokens": 0}',
            "Validation failed: promptTokens: expected a number, got boolean",
        ),
    ],
)
async def test_a_body_that_is_not_a_completion_is_refused(
    setup: Setup, raw: bytes, message: str
) -> None:
    status, body = await post(setup.api, MISSING, raw)
    assert status == 400
    assert body["code"] == "invalid-body"
    assert body["error"].startswith(message.split(":")[0])
    if message.startswith("Unexpected") or "Missing" in message:
        assert body["error"] == message


async def test_each_row_of_the_seed_table_is_the_first_that_applies(setup: Setup) -> None:
    """The seed's table, row by row and in its order: each request breaks its row and every
    row after it it can (a made-up key, a stale timestamp), and gets its row's answer."""
    stale = int(setup.platform.clock.now()) - 999
    guess: dict[str, Any] = {"key": "ea_guess", "stamp": stale}
    running = await setup.task()
    other = await setup.task()
    house = await setup.task(house=True)
    ended_house = await setup.task(house=True)
    await end_task(setup, ended_house, None)
    accepted = await setup.task()
    raw = orjson.dumps(body_for(accepted))
    now = int(time.time())
    signed = {
        "x-edgearena-timestamp": str(now),
        "x-edgearena-signature": sign_completion(KEY, PUBLIC, accepted, raw, now),
    }
    assert await post(setup.api, accepted, raw, headers=signed) == (200, {"accepted": True})
    big = SCOUT_OUTPUT | {"pad": "x" * CAP}
    rows: list[tuple[tuple[int, Any], tuple[int, dict[str, str]]]] = [
        (
            await post(setup.api, MISSING, body_for(other, big), **guess),
            (400, error("taskId in body must match path parameter", "task-id-mismatch")),
        ),
        (
            await post(setup.api, MISSING, body_for(MISSING, big), **guess),
            (400, error(f"output exceeds {CAP} byte limit", "output-too-large")),
        ),
        (
            await post(setup.api, MISSING, body_for(MISSING), **guess),
            (400, error(f"Task {MISSING} not found", "task-not-found")),
        ),
        (
            await post(setup.api, ended_house, body_for(ended_house), **guess),
            (400, error(f"Task {ended_house} is not in RUNNING state", "not-running")),
        ),
        (
            await post(setup.api, house, body_for(house), **guess),
            (
                400,
                error(f"Task {house} was not dispatched to an external agent", "not-external"),
            ),
        ),
    ]
    bare = {"x-edgearena-signature": "sha256=" + "0" * 64}
    rows.append(
        (
            await post(setup.api, running, body_for(running), headers=bare),
            (401, error(TIMESTAMP, "invalid-timestamp")),
        )
    )
    rows.append(
        (
            await post(setup.api, running, body_for(running), **guess),
            (
                401,
                error(
                    "Signature timestamp outside ±300s replay window (skew=999s)",
                    "invalid-timestamp",
                ),
            ),
        )
    )
    rows.append(
        (
            await post(setup.api, running, body_for(running), key="ea_guess"),
            (401, SIGNATURE),
        )
    )
    rows.append(
        (
            await post(setup.api, accepted, raw, headers=signed),
            (401, error("Task completion already submitted (replay rejected)", "replay")),
        )
    )
    for got, expected in rows:
        assert got == expected
    # The agent's row: last, since it removes the agent the other rows' tasks were sent to.
    await remove_agent(setup)
    assert await post(setup.api, running, body_for(running), **guess) == (
        400,
        error("Agent not found for this task", "agent-not-found"),
    )


@pytest.mark.parametrize("same_signature", [True, False], ids=["same", "re-signed"])
async def test_of_concurrent_submissions_exactly_one_wins(
    setup: Setup, same_signature: bool
) -> None:
    tasks = [await setup.task() for _ in range(4)]
    now = int(time.time())
    for task_id in tasks:
        raw = orjson.dumps(body_for(task_id))

        def headers(stamp: int, task_id: str = task_id, raw: bytes = raw) -> dict[str, str]:
            return {
                "Content-Type": "application/json",
                "x-edgearena-timestamp": str(stamp),
                "x-edgearena-signature": sign_completion(KEY, PUBLIC, task_id, raw, stamp),
            }

        stamps = [now] * 5 if same_signature else [now - n for n in range(5)]
        answers = await asyncio.gather(
            *(post(setup.api, task_id, raw, headers=headers(s)) for s in stamps)
        )
        statuses = sorted(status for status, _ in answers)
        assert statuses.count(200) == 1, answers
        losers = {body["code"] for status, body in answers if status != 200}
        assert losers <= {"replay", "not-running"}, answers
        if not same_signature:
            assert losers == {"not-running"}
    events = await dispatch_events(setup.platform, setup.agent_id)
    assert [e.outcome for e in events] == ["success"] * len(tasks)  # one success per task
    async with setup.platform.db.session() as session:
        receipts = await session.scalar(text("SELECT count(*) FROM completion_receipts"))
    assert receipts == len(tasks)


async def test_a_completion_after_the_deadline_is_refused_before_any_step_ends_the_task(
    setup: Setup,
) -> None:
    """However late the platform's own step, a completion past the deadline does not win:
    the task stays RUNNING for the step to end by the rules, and nothing is recorded."""
    task_id = await setup.task()
    task = await setup.stored(task_id)
    assert task.deadline_at is not None
    clock = setup.platform.clock
    assert isinstance(clock, FrozenClock)
    clock.advance(task.deadline_at - clock.now() + 0.5)
    assert await post(setup.api, task_id, body_for(task_id), stamp=int(clock.now())) == (
        400,
        error(f"Task {task_id} is not in RUNNING state", "not-running"),
    )
    assert (await setup.stored(task_id)).status == "RUNNING"
    agent = await agent_row(setup.platform, setup.agent_id)
    assert (agent.status, agent.consecutive_failures) == ("ACTIVE", 0)


async def test_a_completion_after_the_deadline_is_taken_if_the_endpoint_was_down_meanwhile(
    setup: Setup,
) -> None:
    """The completion endpoint restarted while the answer was due: the agent's first tries
    may have been refused by the platform, so its answer, late, is still taken."""
    task_id = await setup.task()
    task = await setup.stored(task_id)
    assert task.deadline_at is not None
    clock = setup.platform.clock
    assert isinstance(clock, FrozenClock)
    await beat(setup.platform)
    clock.advance(1)
    await announce_up(setup.platform, beating=True)  # down, then back, before the deadline
    clock.advance(task.deadline_at - clock.now() + 0.5)
    assert await post(setup.api, task_id, body_for(task_id), stamp=int(clock.now())) == (
        200,
        {"accepted": True},
    )
    assert (await setup.stored(task_id)).status == "SUCCEEDED"


async def test_a_completion_after_the_deadline_is_refused_if_the_endpoint_fell_only_after(
    setup: Setup,
) -> None:
    clock = setup.platform.clock
    assert isinstance(clock, FrozenClock)
    await announce_up(setup.platform, beating=True)
    clock.advance(0.1)
    task_id = await setup.task()
    task = await setup.stored(task_id)
    assert task.deadline_at is not None
    clock.advance(task.deadline_at - clock.now())
    await beat(setup.platform)  # seen alive at the deadline, then down and back
    clock.advance(2)
    await announce_up(setup.platform, beating=True)
    assert await post(setup.api, task_id, body_for(task_id), stamp=int(clock.now())) == (
        400,
        error(f"Task {task_id} is not in RUNNING state", "not-running"),
    )
    assert (await setup.stored(task_id)).status == "RUNNING"


async def test_a_replay_after_the_deadline_is_still_a_replay(setup: Setup) -> None:
    task_id = await setup.task()
    raw = orjson.dumps(body_for(task_id))
    clock = setup.platform.clock
    assert isinstance(clock, FrozenClock)
    now = int(clock.now())
    headers = {
        "x-edgearena-timestamp": str(now),
        "x-edgearena-signature": sign_completion(KEY, PUBLIC, task_id, raw, now),
    }
    assert await post(setup.api, task_id, raw, headers=headers) == (200, {"accepted": True})
    clock.advance(31)  # past the 30 s deadline, within the replay window
    assert await post(setup.api, task_id, raw, headers=headers) == (
        401,
        error("Task completion already submitted (replay rejected)", "replay"),
    )
