"""The SDK's ASGI app, called in memory: routing, signatures, validation, idempotency.

Signatures are computed here with the standard library's ``hmac``; the clock is frozen.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from palaestra.checks.samples import simulation_for
from palaestra.clock import FrozenClock
from palaestra.harness import (
    Agent,
    AgentSettings,
    MemoryReplyStore,
    Phase,
    Reply,
    Side,
    Task,
    TaskKind,
    Turn,
    UpstreamFailed,
)
from palaestra.harness.testing import AppResponse, call
from palaestra.protocol import Role, ScoutSimulation

KEY = "ea_test_7c1d9e"
HOST = "agent.test"
NOW = 1_767_225_600
TASK_ID = "0192f4a9-1be4-7123-b21d-0a55f00d4c8e"
RUN_ID = "0192f4a9-1be4-7123-b21d-0a55f00d4c8f"
CANDIDATE_ID = "0192f4a9-1be4-7123-b21d-0a55f00d4c90"

SCOUT_OUTPUT: dict[str, Any] = {
    "candidate_title": "Invoice autopilot",
    "target_customer": "Small agencies",
    "core_problem": "Invoicing eats hours",
    "proposed_solution": "Timesheets in, invoices out",
    "why_now": "Accounting APIs matured",
    "claims": [],
    "evidence": [],
}
BUILD_OUTPUT: dict[str, Any] = {
    "execution": {
        "objective": "Find paying customers",
        "phases": ["Interviews"],
        "first_milestone": "Ten interviews",
        "success_check": "Three paying pilots",
    },
    "claims": [],
}
CRITIQUE_OUTPUT: dict[str, Any] = {
    "strengths": ["clear"],
    "weaknesses": ["untested"],
    "score_adjustments": {},
    "penalty_points": 0,
    "verdict": "pass",
    "fatal_flaw": False,
}


def stdlib_signature(key: str, timestamp: int, target: str, body: bytes) -> str:
    material = f"{timestamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


def dispatch_body(phase: str = "SCOUT", task_id: str = TASK_ID, **extra: Any) -> bytes:
    body = {
        "taskId": task_id,
        "runId": RUN_ID,
        "phase": phase,
        "role": phase,
        "candidateId": None if phase == "SCOUT" else CANDIDATE_ID,
        "goal": "Find a niche",
        "launchpadName": "Make Money",
        "messages": [
            {"role": "system", "content": "You are a SCOUT."},
            {"role": "user", "content": "Find a niche"},
        ],
        **extra,
    }
    return orjson.dumps(body)


def signed(
    body: bytes, *, timestamp: int = NOW, target: str = f"{HOST}/", key: str = KEY
) -> dict[str, str]:
    return {
        "x-edgearena-signature": stdlib_signature(key, timestamp, target, body),
        "x-edgearena-timestamp": str(timestamp),
        "content-type": "application/json",
    }


class Recorder:
    """Handlers that record what they were given."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.turns: list[Turn] = []

    def scout(self, task: Task) -> dict[str, Any]:
        self.tasks.append(task)
        return dict(SCOUT_OUTPUT)

    def build(self, task: Task) -> dict[str, Any]:
        self.tasks.append(task)
        return dict(BUILD_OUTPUT)

    async def critique(self, task: Task) -> Reply:
        self.tasks.append(task)
        return Reply(CRITIQUE_OUTPUT, prompt_tokens=12, completion_tokens=34, model_id="m-1")

    def move(self, turn: Turn) -> str:
        self.turns.append(turn)
        return f"move {len(self.turns)}"


def make_agent(
    recorder: Recorder | None = None, *, key: str | None = KEY, **options: Any
) -> tuple[Agent, Recorder]:
    recorder = recorder or Recorder()
    agent = Agent(key, settings=AgentSettings(), clock=FrozenClock(NOW), **options)
    agent.scout(recorder.scout)
    agent.builder(recorder.build)
    agent.critique(recorder.critique)
    agent.fight(recorder.move)
    return agent, recorder


async def post(agent: Agent, body: bytes, headers: dict[str, str] | None = None) -> AppResponse:
    return await call(agent.app(), "POST", "/", body=body, headers=headers, host=HOST)


# liveness and methods


async def test_get_is_liveness_json() -> None:
    agent, _ = make_agent()
    response = await call(agent.app(), "GET", "/", host=HOST)
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["ok"] is True
    assert body["phases"] == ["SCOUT", "BUILD", "CRITIQUE"]
    assert body["sides"] == ["attacker", "defender"]


async def test_head_answers_without_a_body() -> None:
    agent, _ = make_agent()
    response = await call(agent.app(), "HEAD", "/", host=HOST)
    assert response.status == 200
    assert response.body == b""


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
async def test_other_methods_are_405_json(method: str) -> None:
    agent, _ = make_agent()
    response = await call(agent.app(), method, "/", host=HOST)
    assert response.status == 405
    assert response.headers["allow"] == "GET, HEAD, POST"
    assert response.json() == {"error": f"{method} is not allowed", "code": "method-not-allowed"}


# the handshake and simulations


async def test_handshake_is_answered() -> None:
    agent, _ = make_agent()
    body = orjson.dumps({"type": "handshake", "protocol": "edgearena-v1", "request_id": TASK_ID})
    response = await post(agent, body)
    assert response.status == 200
    assert response.json() == {"ok": True, "protocol": "edgearena-v1"}


async def test_unsigned_scout_simulation_gets_the_bare_output() -> None:
    agent, recorder = make_agent()
    simulation = simulation_for(Role.SCOUT)
    assert isinstance(simulation, ScoutSimulation)
    response = await post(agent, orjson.dumps(simulation.wire()))
    assert response.status == 200
    assert response.json() == SCOUT_OUTPUT
    [task] = recorder.tasks
    assert task.phase is Phase.SCOUT
    assert task.kind is TaskKind.SIMULATION
    assert task.signed is False
    assert task.task_id == simulation.task_id
    assert task.goal == simulation.goal
    assert task.messages == tuple(simulation.messages)


async def test_builder_simulation_echoes_the_candidate_id_filled_in_by_the_sdk() -> None:
    agent, recorder = make_agent()
    simulation = simulation_for(Role.BUILDER)
    response = await post(agent, orjson.dumps(simulation.wire()))
    assert response.status == 200
    assert response.json()["candidate_id"] == simulation.candidate.id  # type: ignore[union-attr]
    assert recorder.tasks[0].candidate is not None
    assert recorder.tasks[0].candidate.title == simulation.candidate.title  # type: ignore[union-attr]


async def test_analyst_simulation_exercises_the_critique_handler() -> None:
    agent, recorder = make_agent()
    simulation = simulation_for(Role.ANALYST)
    response = await post(agent, orjson.dumps(simulation.wire()))
    assert response.status == 200
    assert response.json()["verdict"] == "pass"
    assert recorder.tasks[0].phase is Phase.CRITIQUE


async def test_signed_simulation_is_verified_and_answered() -> None:
    agent, recorder = make_agent()
    body = orjson.dumps(simulation_for(Role.SCOUT).wire())
    headers = {**signed(body), "user-agent": "EdgeArena-VerifyDispatch/1.0"}
    response = await post(agent, body, headers)
    assert response.status == 200
    assert recorder.tasks[0].signed is True


async def test_verify_dispatch_user_agent_without_signature_is_refused() -> None:
    agent, recorder = make_agent()
    body = orjson.dumps(simulation_for(Role.SCOUT).wire())
    response = await post(agent, body, {"user-agent": "EdgeArena-VerifyDispatch/1.0"})
    assert response.status == 401
    assert recorder.tasks == []


async def test_a_phase_without_handler_is_501() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    response = await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert response.status == 501
    assert response.json() == {
        "error": "this agent has no handler for the SCOUT phase",
        "code": "not-served",
    }


# dispatches and signatures


async def test_signed_dispatch_gets_the_envelope() -> None:
    agent, recorder = make_agent(model_id="baseline-x")
    body = dispatch_body()
    response = await post(agent, body, {**signed(body), "x-edgearena-task-id": TASK_ID})
    assert response.status == 200
    assert response.json() == {
        "output": SCOUT_OUTPUT,
        "promptTokens": 0,
        "completionTokens": 0,
        "modelId": "baseline-x",
    }
    [task] = recorder.tasks
    assert (task.kind, task.phase, task.task_id, task.run_id) == (
        TaskKind.DISPATCH,
        Phase.SCOUT,
        TASK_ID,
        RUN_ID,
    )
    assert task.launchpad == "Make Money"
    assert task.deadline_ms == 30_000


async def test_dispatch_envelope_carries_the_reply_usage() -> None:
    agent, _ = make_agent()
    body = dispatch_body("CRITIQUE")
    response = await post(agent, body, signed(body))
    assert response.status == 200
    assert response.json() == {
        "output": {**CRITIQUE_OUTPUT, "candidate_id": CANDIDATE_ID},
        "promptTokens": 12,
        "completionTokens": 34,
        "modelId": "m-1",
    }


def _tampered_variants() -> list[tuple[str, dict[str, str], bytes]]:
    body = dispatch_body()
    good = signed(body)
    flipped = good["x-edgearena-signature"][:-1] + (
        "0" if good["x-edgearena-signature"][-1] != "0" else "1"
    )
    return [
        ("no headers", {}, body),
        ("no signature", {"x-edgearena-timestamp": str(NOW)}, body),
        ("no timestamp", {"x-edgearena-signature": good["x-edgearena-signature"]}, body),
        ("flipped signature", {**good, "x-edgearena-signature": flipped}, body),
        ("body changed", good, body.replace(b"Find a niche", b"Find a nichE", 1)),
        ("timestamp changed", {**good, "x-edgearena-timestamp": str(NOW - 1)}, body),
        ("other key", signed(body, key="someone-else"), body),
        ("other host", signed(body, target="evil.test/"), body),
        ("other path", signed(body, target=f"{HOST}/other"), body),
        ("expired", signed(body, timestamp=NOW - 301), body),
        ("from the future", signed(body, timestamp=NOW + 301), body),
        ("no prefix", {**good, "x-edgearena-signature": good["x-edgearena-signature"][7:]}, body),
        ("garbage timestamp", {**good, "x-edgearena-timestamp": "soon"}, body),
    ]


@pytest.mark.parametrize(
    ("variant", "headers", "body"),
    _tampered_variants(),
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_tampered_dispatches_are_401_and_never_reach_the_handler(
    variant: str, headers: dict[str, str], body: bytes
) -> None:
    agent, recorder = make_agent()
    response = await post(agent, body, headers)
    assert response.status == 401, variant
    assert isinstance(response.json()["error"], str)
    assert recorder.tasks == []


async def test_stale_and_bad_signatures_say_why() -> None:
    agent, _ = make_agent()
    body = dispatch_body()
    stale = await post(agent, body, signed(body, timestamp=NOW - 400))
    assert stale.json() == {
        "error": "Signature timestamp outside ±300s replay window (skew=400s)",
        "code": "stale-timestamp",
    }
    bad = await post(agent, body, signed(body, key="nope"))
    assert bad.json() == {"error": "Invalid signature", "code": "bad-signature"}


async def test_the_window_edge_is_accepted() -> None:
    agent, _ = make_agent()
    body = dispatch_body()
    response = await post(agent, body, signed(body, timestamp=NOW - 300))
    assert response.status == 200


async def test_signature_is_checked_before_the_body_is_parsed() -> None:
    agent, _ = make_agent()
    body = b"{not json"
    unsigned_garbage = await post(agent, body, {"x-edgearena-timestamp": str(NOW)})
    assert unsigned_garbage.status == 401
    signed_garbage = await post(agent, body, signed(body))
    assert signed_garbage.status == 400
    assert signed_garbage.json()["error"] == "Unexpected token 'n' in JSON at position 1"


async def test_an_agent_without_key_refuses_signed_requests() -> None:
    agent, recorder = make_agent(key=None)
    body = dispatch_body()
    response = await post(agent, body, signed(body))
    assert response.status == 401
    assert response.json()["code"] == "no-key"
    assert recorder.tasks == []


async def test_the_task_id_header_must_match_the_body() -> None:
    agent, recorder = make_agent()
    body = dispatch_body()
    response = await post(agent, body, {**signed(body), "x-edgearena-task-id": "other"})
    assert response.status == 400
    assert recorder.tasks == []


async def test_public_url_is_the_signature_target() -> None:
    agent, _ = make_agent(public_url="https://agents.example.com/hooks/scout")
    body = dispatch_body()
    behind_proxy = signed(body, target="agents.example.com/hooks/scout")
    assert (await post(agent, body, behind_proxy)).status == 200
    as_seen_locally = signed(body, target=f"{HOST}/")
    assert (await post(agent, body, as_seen_locally)).status == 401


async def test_without_public_url_the_target_is_host_header_and_path() -> None:
    agent, _ = make_agent()
    body = dispatch_body()
    headers = signed(body, target="agent.test:8443/hook")
    response = await call(
        agent.app(), "POST", "/hook?x=1", body=body, headers=headers, host="Agent.Test:8443"
    )
    assert response.status == 200


async def test_a_path_sent_unencoded_is_read_as_a_browser_would_have_sent_it() -> None:
    """The target is the path a WHATWG sender puts on the wire: dots resolved, UTF-8
    percent-encoded (not each octet re-encoded as if it were Latin-1)."""
    agent, _ = make_agent()
    body = dispatch_body()
    headers = signed(body, target="agent.test:8443/b%20c/%C3%BC")
    response = await call(
        agent.app(), "POST", "/a/../b c/ü?x=1", body=body, headers=headers, host="Agent.Test:8443"
    )
    assert response.status == 200


async def test_default_https_port_is_left_out_of_the_target() -> None:
    agent, _ = make_agent()
    body = dispatch_body()
    headers = signed(body, target="agent.test/hook")
    response = await call(
        agent.app(),
        "POST",
        "/hook",
        body=body,
        headers=headers,
        host="agent.test:443",
        scheme="https",
    )
    assert response.status == 200


# malformed requests


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"", 400, "Unexpected end of JSON input"),
        (b"[1, 2]", 400, "Validation failed: body: expected an object, got array"),
        (b'{"type": "dance"}', 400, "Validation failed: type: unknown message type 'dance'"),
        (b"{}", 400, "Validation failed: type: unknown message type None"),
        (b'{"type": "scout_task"}', 400, "Validation failed: Missing task_id"),
        (b'{"type": "challenge"}', 400, "Validation failed: Missing nonce"),
    ],
)
async def test_malformed_posts_are_400_json(body: bytes, status: int, error: str) -> None:
    agent, recorder = make_agent()
    response = await post(agent, body)
    assert response.status == status
    assert response.json()["error"] == error
    assert recorder.tasks == []


async def test_a_dispatch_without_signature_is_401() -> None:
    agent, recorder = make_agent()
    response = await post(agent, dispatch_body())
    assert response.status == 401
    assert response.json() == {"error": "Missing signature", "code": "missing-signature"}
    assert recorder.tasks == []


async def test_an_oversized_body_is_413() -> None:
    agent = Agent(KEY, settings=AgentSettings(max_body_bytes=1000), clock=FrozenClock(NOW))
    declared = await post(agent, b"x" * 1001)
    assert declared.status == 413
    assert declared.json() == {"error": "request body exceeds 1000 bytes", "code": "too-large"}
    streamed = await call(
        agent.app(),
        "POST",
        "/",
        body=b"x" * 1500,
        headers={"content-length": "10"},
        chunk_size=100,
    )
    assert streamed.status == 413


# handler output


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        ([1, 2], "the handler returned array, expected an object or a Reply"),
        (None, "the handler returned null, expected an object or a Reply"),
        ("text", "the handler returned string, expected an object or a Reply"),
    ],
)
async def test_a_non_object_output_is_502_for_simulations_and_dispatches(
    returned: Any, error: str
) -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    agent.scout(lambda task: returned)
    for body, headers in [
        (orjson.dumps(simulation_for(Role.SCOUT).wire()), None),
        (dispatch_body(), signed(dispatch_body())),
    ]:
        response = await post(agent, body, headers)
        assert response.status == 502
        assert response.json() == {"error": error, "code": "invalid-output"}


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        (
            {**SCOUT_OUTPUT, "core_problem": "  "},
            "Validation failed: core_problem: must not be empty",
        ),
        (
            {k: v for k, v in SCOUT_OUTPUT.items() if k != "why_now"},
            "Validation failed: Missing why_now",
        ),
        ({**SCOUT_OUTPUT, "claims": [{"type": "x"}]}, "Validation failed: Missing claims[0].text"),
    ],
)
async def test_the_full_schema_is_production_s_and_a_simulation_gets_the_reply(
    returned: dict[str, Any], error: str
) -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    agent.scout(lambda task: returned)

    dispatch = await post(agent, dispatch_body(), signed(dispatch_body()))
    assert dispatch.status == 502
    assert dispatch.json()["error"] == error
    assert dispatch.json()["code"] == "invalid-output"

    # The registration wizard checks the required keys only, and they are all there.
    simulation = await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert simulation.status == 200, simulation.body
    assert simulation.json() == returned


#: Each role's reply with the seed's required top-level keys and nothing else
#: (the BUILDER's candidate_id is the SDK's to fill in).
SEED_MINIMAL: dict[Role, dict[str, Any]] = {
    Role.SCOUT: {
        "candidate_title": "Invoice autopilot",
        "target_customer": "Small agencies",
        "core_problem": "Invoicing eats hours",
        "proposed_solution": "Timesheets in, invoices out",
    },
    Role.BUILDER: {"execution": "ship it", "claims": []},
    Role.ANALYST: {"strengths": [], "weaknesses": [], "verdict": "pass"},
}
ROLE_PHASE = {Role.SCOUT: "SCOUT", Role.BUILDER: "BUILD", Role.ANALYST: "CRITIQUE"}


def answering(reply: dict[str, Any]) -> Agent:
    """An agent whose one handler, shared by every phase, returns ``reply``."""
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    agent.handles(*Phase)(lambda task: reply)
    return agent


@pytest.mark.parametrize("role", list(Role))
async def test_the_seeds_required_keys_pass_a_simulation_but_not_a_dispatch(role: Role) -> None:
    agent = answering(SEED_MINIMAL[role])
    request = simulation_for(role)

    simulation = await post(agent, orjson.dumps(request.wire()))
    assert simulation.status == 200, simulation.body
    candidate = getattr(request, "candidate", None)
    filled = {} if candidate is None else {"candidate_id": candidate.id}
    assert simulation.json() == {**filled, **SEED_MINIMAL[role]}

    body = dispatch_body(ROLE_PHASE[role])
    dispatch = await post(agent, body, signed(body))
    assert dispatch.status == 502
    assert dispatch.json()["code"] == "invalid-output"
    assert dispatch.json()["error"].startswith("Validation failed: ")


@pytest.mark.parametrize(
    ("role", "missing"),
    [(role, key) for role, reply in SEED_MINIMAL.items() for key in reply],
)
async def test_a_simulation_reply_without_a_required_key_is_502_naming_it(
    role: Role, missing: str
) -> None:
    reply = {k: v for k, v in SEED_MINIMAL[role].items() if k != missing}
    response = await post(answering(reply), orjson.dumps(simulation_for(role).wire()))
    assert response.status == 502
    assert response.json() == {
        "error": f"Validation failed: Missing {missing}",
        "code": "invalid-output",
        "violations": [f"Validation failed: Missing {missing}"],
    }


async def test_a_simulation_reply_is_told_only_the_required_keys_it_lacks() -> None:
    production_keys = {k: v for k, v in SCOUT_OUTPUT.items() if k not in SEED_MINIMAL[Role.SCOUT]}
    reply = {"candidate_title": "Invoice autopilot", **production_keys}
    response = await post(answering(reply), orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert response.status == 502
    assert response.json()["violations"] == [
        "Validation failed: Missing target_customer",
        "Validation failed: Missing core_problem",
        "Validation failed: Missing proposed_solution",
    ]


async def test_a_reply_over_the_platforms_cap_is_502() -> None:
    huge = {**SCOUT_OUTPUT, "why_now": "x" * 262_144}
    agent = answering(huge)
    simulation = await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert simulation.status == 502
    assert simulation.json() == {
        "error": "the reply exceeds 262144 bytes",
        "code": "invalid-output",
    }
    dispatch = await post(agent, dispatch_body(), signed(dispatch_body()))
    assert dispatch.status == 502
    assert dispatch.json()["error"] == "Validation failed: output: exceeds 262144 bytes"


async def test_a_wrong_candidate_id_is_not_overwritten() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    agent.builder(lambda task: {**BUILD_OUTPUT, "candidate_id": "someone-else"})
    body = dispatch_body("BUILD")
    response = await post(agent, body, signed(body))
    assert response.status == 502
    assert response.json()["error"] == (
        f"Validation failed: candidate_id: must equal the dispatched candidate {CANDIDATE_ID}"
    )


async def test_negative_tokens_are_refused() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    agent.scout(lambda task: Reply(SCOUT_OUTPUT, prompt_tokens=-1))
    body = dispatch_body()
    response = await post(agent, body, signed(body))
    assert response.status == 502
    assert response.json()["error"] == (
        "Validation failed: promptTokens: must be >= 0, got -1 (recorded as 0)"
    )


async def test_unserializable_output_is_502() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    agent.scout(lambda task: {**SCOUT_OUTPUT, "extra": object()})
    response = await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert response.status == 502
    assert response.json()["code"] == "invalid-output"


async def test_a_raising_handler_is_500_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))

    def broken(task: Task) -> dict[str, Any]:
        raise KeyError("secret detail")

    agent.scout(broken)
    response = await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert response.status == 500
    assert response.json() == {"error": "the handler raised KeyError", "code": "handler-error"}
    assert b"secret detail" not in response.body
    assert "Traceback" in caplog.text  # logged on the agent's side


async def test_an_upstream_failure_is_502() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))

    async def upstream(task: Task) -> dict[str, Any]:
        raise UpstreamFailed("the model endpoint answered 503: busy")

    agent.scout(upstream)
    response = await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert response.status == 502
    assert response.json() == {
        "error": "the model endpoint answered 503: busy",
        "code": "upstream-failed",
    }


async def test_sync_handlers_run_off_the_event_loop() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    threads: list[str] = []

    def scout(task: Task) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return SCOUT_OUTPUT

    agent.scout(scout)
    await post(agent, orjson.dumps(simulation_for(Role.SCOUT).wire()))
    assert len(threads) == 1
    assert threads[0] != threading.main_thread().name


# idempotency


async def test_a_repeated_task_id_gets_the_first_answer_without_a_second_call() -> None:
    agent, recorder = make_agent()
    app = agent.app()
    body = dispatch_body()
    first = await call(app, "POST", "/", body=body, headers=signed(body), host=HOST)
    again = await call(app, "POST", "/", body=body, headers=signed(body), host=HOST)
    assert first.status == again.status == 200
    assert first.body == again.body
    assert again.headers["x-palaestra-replayed"] == "true"
    assert len(recorder.tasks) == 1


async def test_concurrent_duplicates_share_one_handler_call() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    calls = 0
    release = asyncio.Event()

    async def scout(task: Task) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        await release.wait()
        return SCOUT_OUTPUT

    agent.scout(scout)
    app = agent.app()
    body = dispatch_body()
    requests = [
        asyncio.create_task(call(app, "POST", "/", body=body, headers=signed(body), host=HOST))
        for _ in range(3)
    ]
    await asyncio.sleep(0)
    release.set()
    responses = await asyncio.gather(*requests)
    assert calls == 1
    assert len({r.body for r in responses}) == 1
    assert all(r.status == 200 for r in responses)


async def test_a_failed_answer_is_not_kept() -> None:
    agent = Agent(KEY, settings=AgentSettings(), clock=FrozenClock(NOW))
    answers: Iterator[Any] = iter([[1], SCOUT_OUTPUT])

    def scout(task: Task) -> Any:
        return next(answers)

    agent.scout(scout)
    app = agent.app()
    body = dispatch_body()
    first = await call(app, "POST", "/", body=body, headers=signed(body), host=HOST)
    again = await call(app, "POST", "/", body=body, headers=signed(body), host=HOST)
    assert (first.status, again.status) == (502, 200)


async def test_a_refused_signature_does_not_touch_the_store() -> None:
    store = MemoryReplyStore()
    agent, _ = make_agent(store=store)
    body = dispatch_body()
    await post(agent, body, signed(body, key="wrong"))
    assert len(store) == 0
    await post(agent, body, signed(body))
    assert f"task:{TASK_ID}" in store


async def test_the_store_is_shared_by_apps_of_one_agent() -> None:
    agent, recorder = make_agent()
    body = dispatch_body()
    await post(agent, body, signed(body))
    await post(agent, body, signed(body))  # a second app() of the same agent
    assert len(recorder.tasks) == 1


# cage.v1


def turn_body(side: str = "defender", turn: int = 2, payload: str = "brief") -> bytes:
    return orjson.dumps(
        {
            "type": "turn",
            "match_id": "m-1",
            "turn": turn,
            "your_role": side,
            "ruleset": "cage.v1",
            "deadline_ms": 60_000,
            "payload": payload,
        }
    )


async def test_challenge_echoes_the_nonce() -> None:
    agent, _ = make_agent()
    response = await post(agent, b'{"type": "challenge", "nonce": "9f2c41"}')
    assert response.status == 200
    assert response.json() == {"nonce": "9f2c41"}


async def test_an_agent_without_turn_handlers_does_not_take_challenges() -> None:
    agent = Agent(KEY, settings=AgentSettings())
    response = await post(agent, b'{"type": "challenge", "nonce": "9f2c41"}')
    assert response.status == 501


async def test_a_turn_gets_the_handlers_message() -> None:
    agent, recorder = make_agent()
    response = await post(agent, turn_body(), {"idempotency-key": "m-1:2"})
    assert response.status == 200
    assert response.json() == {"message": "move 1"}
    [turn] = recorder.turns
    assert (turn.match_id, turn.turn, turn.side, turn.payload) == ("m-1", 2, Side.DEFENDER, "brief")
    assert turn.idempotency_key == "m-1:2"


async def test_a_repeated_idempotency_key_gets_the_cached_move() -> None:
    agent, recorder = make_agent()
    app = agent.app()
    first = await call(app, "POST", "/", body=turn_body(), headers={"idempotency-key": "m-1:2"})
    again = await call(
        app, "POST", "/", body=turn_body(payload="changed"), headers={"idempotency-key": "m-1:2"}
    )
    other = await call(app, "POST", "/", body=turn_body(), headers={"idempotency-key": "m-2:2"})
    assert first.json() == again.json() == {"message": "move 1"}
    assert other.json() == {"message": "move 2"}
    assert len(recorder.turns) == 2


async def test_without_the_header_the_key_is_match_and_turn() -> None:
    agent, recorder = make_agent()
    app = agent.app()
    await call(app, "POST", "/", body=turn_body())
    again = await call(app, "POST", "/", body=turn_body(), headers={"idempotency-key": "m-1:2"})
    assert again.json() == {"message": "move 1"}
    assert len(recorder.turns) == 1


async def test_a_turn_handler_must_return_text() -> None:
    agent = Agent(settings=AgentSettings())
    agent.defender(lambda turn: {"message": "hi"})  # type: ignore[type-var]
    response = await post(agent, turn_body())
    assert response.status == 502
    assert response.json()["error"] == "the handler returned object, expected a string"


async def test_a_side_without_handler_is_501() -> None:
    agent = Agent(settings=AgentSettings())
    agent.defender(lambda turn: "no")
    response = await post(agent, turn_body("attacker", 1))
    assert response.status == 501
    assert response.json()["error"] == "this agent does not play attacker"


async def test_turns_need_no_signature_even_with_a_key() -> None:
    agent, _ = make_agent()
    assert (await post(agent, turn_body())).status == 200


# lifespan


async def test_lifespan_runs_startup_and_shutdown_hooks() -> None:
    agent = Agent(settings=AgentSettings())
    seen: list[str] = []
    agent.on_startup(lambda: seen.append("up"))

    async def down() -> None:
        seen.append("down")

    agent.on_shutdown(down)
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    await agent.app()({"type": "lifespan"}, receive, send)
    assert seen == ["up", "down"]
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
