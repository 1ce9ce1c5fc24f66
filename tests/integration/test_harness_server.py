"""An SDK agent behind a real uvicorn server, called by the platform's own egress client.

The platform-side signer (``palaestra.protocol.hmac_signer``) must be accepted, and
every tampered variant of its request refused with 401 before the handler runs.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from palaestra.checks.payloads import dispatch_for
from palaestra.checks.wizard import simulation
from palaestra.clock import FrozenClock, SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.harness import Agent, AgentSettings, Phase, Task
from palaestra.harness.testing import serve
from palaestra.protocol import Role, UserAgent, dumps, hmac_signer, signed_headers

KEY = "ea_live_integration_41"
OUTPUT: dict[str, Any] = {
    "candidate_title": "Invoice autopilot",
    "target_customer": "Small agencies",
    "core_problem": "Invoicing eats hours",
    "proposed_solution": "Timesheets in, invoices out",
    "why_now": "Accounting APIs matured",
    "claims": [],
    "evidence": [],
}


class Served:
    def __init__(self, url: str, calls: list[Task]) -> None:
        self.url = url
        self.calls = calls


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


@pytest.fixture
async def agent() -> AsyncIterator[Served]:
    calls: list[Task] = []
    sdk_agent = Agent(KEY, settings=AgentSettings(max_body_bytes=4096), model_id="m")

    @sdk_agent.scout
    def scout(task: Task) -> dict[str, Any]:
        calls.append(task)
        return OUTPUT

    async with serve(sdk_agent.app()) as url:
        yield Served(url + "hook", calls)


def stdlib_signature(key: str, timestamp: int, target: str, body: bytes) -> str:
    material = f"{timestamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


async def test_a_dispatch_signed_by_the_platform_signer_is_accepted(
    egress: EgressClient, agent: Served
) -> None:
    payload = dispatch_for(Phase.SCOUT)
    body = dumps(payload.wire())
    result = await egress.post_json(
        agent.url,
        body,
        user_agent="EdgeArena-Dispatch/1.0",
        deadline=5,
        signer=hmac_signer(KEY, SystemClock(), payload.task_id),
    )
    assert result.ok, result.reason
    assert result.data == {
        "output": OUTPUT,
        "promptTokens": 0,
        "completionTokens": 0,
        "modelId": "m",
    }
    assert [task.task_id for task in agent.calls] == [payload.task_id]


async def test_the_platform_signature_matches_the_stdlib(agent: Served) -> None:
    """The signature the SDK accepts is the one computed here with hmac, for host:port/path."""
    body = b'{"taskId":"t"}'
    signer = hmac_signer(KEY, FrozenClock(1_700_000_000))
    headers = signer(agent.url, body)
    target = agent.url.removeprefix("http://")
    assert headers["x-edgearena-signature"] == stdlib_signature(KEY, 1_700_000_000, target, body)


def _variants(url: str, body: bytes, now: int) -> list[tuple[str, dict[str, str], bytes]]:
    good = signed_headers(KEY, url, body, now).as_dict()
    signature = good["x-edgearena-signature"]
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    return [
        ("unsigned", {}, body),
        ("signature removed", {"x-edgearena-timestamp": good["x-edgearena-timestamp"]}, body),
        ("timestamp removed", {"x-edgearena-signature": signature}, body),
        ("one hex digit changed", {**good, "x-edgearena-signature": flipped}, body),
        ("body changed after signing", good, body.replace(b"SCOUT", b"SCOUX", 1)),
        ("body extended after signing", good, body[:-1] + b',"x":1}'),
        ("timestamp changed", {**good, "x-edgearena-timestamp": str(now + 1)}, body),
        ("signed with another key", signed_headers("other", url, body, now).as_dict(), body),
        ("signed for another path", signed_headers(KEY, url + "x", body, now).as_dict(), body),
        (
            "signed for another host",
            signed_headers(KEY, url.replace("127.0.0.1", "agent.test"), body, now).as_dict(),
            body,
        ),
        ("stale", signed_headers(KEY, url, body, now - 301).as_dict(), body),
        ("from the future", signed_headers(KEY, url, body, now + 301).as_dict(), body),
    ]


async def test_every_tampered_variant_is_refused_before_the_handler(
    egress: EgressClient, agent: Served
) -> None:
    body = dumps(dispatch_for(Phase.SCOUT).wire())
    now = int(SystemClock().now())
    for variant, headers, sent in _variants(agent.url, body, now):
        result = await egress.post_json(
            agent.url, sent, user_agent="EdgeArena-Dispatch/1.0", deadline=5, headers=headers
        )
        assert result.status == 401, variant
        assert orjson.loads(result.body)["error"], variant
    assert agent.calls == []


async def test_liveness_answers_the_health_ping(egress: EgressClient, agent: Served) -> None:
    # A plain request, not the liveness get(), which judges the status and reads no body.
    result = await egress.request("GET", agent.url, user_agent=UserAgent.HEALTH, deadline=4)
    assert result.status == 200
    assert result.data["ok"] is True


async def test_an_oversized_body_is_413_over_http(egress: EgressClient, agent: Served) -> None:
    result = await egress.post_json(
        agent.url, b'{"pad": "' + b"x" * 5000 + b'"}', user_agent="x", deadline=5
    )
    assert result.status == 413
    assert b"request body exceeds 4096 bytes" in result.body


async def test_behind_a_proxy_the_public_url_is_what_is_signed(egress: EgressClient) -> None:
    public = "https://agents.example.com/teams/7/scout"
    sdk_agent = Agent(KEY, public, settings=AgentSettings())
    sdk_agent.scout(lambda task: OUTPUT)
    payload = dispatch_for(Phase.SCOUT)
    body = dumps(payload.wire())
    async with serve(sdk_agent.app()) as url:
        as_registered = signed_headers(KEY, public, body, int(SystemClock().now())).as_dict()
        accepted = await egress.post_json(
            url, body, user_agent="x", deadline=5, headers=as_registered
        )
        as_local = signed_headers(KEY, url, body, int(SystemClock().now())).as_dict()
        refused = await egress.post_json(url, body, user_agent="x", deadline=5, headers=as_local)
    assert accepted.status == 200
    assert refused.status == 401


async def test_the_wizard_passes_a_reply_with_only_the_seeds_keys_that_a_dispatch_refuses(
    egress: EgressClient,
) -> None:
    """One handler for every phase, answering with the seed's required keys and no more."""
    minimal: dict[Role, dict[str, Any]] = {
        Role.SCOUT: {
            "candidate_title": "Invoice autopilot",
            "target_customer": "Small agencies",
            "core_problem": "Invoicing eats hours",
            "proposed_solution": "Timesheets in, invoices out",
        },
        Role.BUILDER: {"execution": "ship it", "claims": []},  # candidate_id: filled in
        Role.ANALYST: {"strengths": [], "weaknesses": [], "verdict": "pass"},
    }
    sdk_agent = Agent(KEY, settings=AgentSettings(), model_id="m")
    sdk_agent.handles(*Phase)(lambda task: minimal[task.role])
    clock = SystemClock()
    async with serve(sdk_agent.app()) as url:
        for role in Role:
            for key in (None, KEY):
                checks = await simulation(egress, url, role, key=key, clock=clock)
                assert [(c.name, c.passed) for c in checks if not c.passed] == [], checks

            phase = {Role.SCOUT: Phase.SCOUT, Role.BUILDER: Phase.BUILD}.get(role, Phase.CRITIQUE)
            payload = dispatch_for(phase)
            result = await egress.post_json(
                url,
                dumps(payload.wire()),
                user_agent="EdgeArena-Dispatch/1.0",
                deadline=5,
                signer=hmac_signer(KEY, clock, payload.task_id),
            )
            assert result.status == 502, role
            assert orjson.loads(result.body)["code"] == "invalid-output", role
