"""The signed ``host+pathname`` against what really goes on the wire.

An Express agent verifies with ``req.headers.host + req.path``: the Host header
and the path as it arrived, without the query. A bare aiohttp server here
rebuilds exactly that and checks the HMAC with the standard library, for URLs
written unlike what is sent (an upper-case host, an IDN, dot segments, a space,
non-ASCII, a query, and what yarl alone would spell differently). The SDK's own
verifier, behind uvicorn, must accept the same requests.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from palaestra.checks.payloads import dispatch_for
from palaestra.clock import SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.harness import Agent, AgentSettings, Phase, Task
from palaestra.harness.testing import serve as serve_agent
from palaestra.protocol import dumps, hmac_signer, signature_target
from tests.integration.conftest import NetworkGuard
from tests.integration.servers import LOOPBACK, ScriptedResolver, serve

KEY = "ea_live_wire_7c1d"
USER_AGENT = "EdgeArena-Dispatch/1.0"
DEADLINE_S = 5.0

# (URL as registered, Host header and path as they must arrive), the latter written by
# hand from the WHATWG URL standard; {port} is the server's.
CASES = [
    pytest.param(
        "http://AGENT.Test:{port}/hooks/../b c/ü?attempt=1 2",
        "agent.test:{port}",
        "/b%20c/%C3%BC",
        id="case-dots-space-utf8-query",
    ),
    pytest.param(
        "http://Bücher.TEST:{port}/x/./y/?q",
        "xn--bcher-kva.test:{port}",
        "/x/y/",
        id="idn-trailing-slash",
    ),
    # yarl alone would send /~%7Cx%5Cy and a Host without the dot.
    pytest.param(
        "http://agent.test.:{port}/%7e|x\\y?a='b'",
        "agent.test.:{port}",
        "/%7e|x/y",
        id="root-dot-and-what-yarl-spells-otherwise",
    ),
]


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    names = ("agent.test", "agent.test.", "xn--bcher-kva.test")
    resolver = ScriptedResolver({name: [LOOPBACK] for name in names})
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"]), resolver=resolver) as client:
        yield client


def express_style_verifier(key: str, seen: list[tuple[str, str]]) -> Any:
    """``req.headers.host + req.path`` and the raw body, checked with the stdlib."""

    async def verify(request: web.BaseRequest) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        path = request.raw_path.split("?", 1)[0]
        seen.append((host, path))
        raw = await request.read()
        stamp = request.headers.get("x-edgearena-timestamp", "")
        material = f"{stamp}\n{host}{path}\n".encode() + raw
        expected = "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, request.headers.get("x-edgearena-signature", "")):
            return web.json_response({"verified": True})
        return web.json_response({"error": "Invalid signature"}, status=401)

    return verify


@pytest.mark.parametrize(("url", "host", "path"), CASES)
async def test_an_express_agent_verifies_what_it_receives(
    egress: EgressClient, url: str, host: str, path: str
) -> None:
    seen: list[tuple[str, str]] = []
    body = dumps(dispatch_for(Phase.SCOUT).wire())
    async with serve(express_style_verifier(KEY, seen)) as endpoint:
        registered = url.format(port=endpoint.port)
        result = await egress.post_json(
            registered,
            body,
            user_agent=USER_AGENT,
            deadline=DEADLINE_S,
            signer=hmac_signer(KEY, SystemClock(), "t-1"),
        )
    wire = (host.format(port=endpoint.port), path)
    assert seen == [wire]
    assert result.status == 200, result.body
    assert result.data == {"verified": True}
    assert signature_target(registered) == "".join(wire)


async def test_the_express_verifier_refuses_another_key(egress: EgressClient) -> None:
    seen: list[tuple[str, str]] = []
    async with serve(express_style_verifier("another-key", seen)) as endpoint:
        result = await egress.post_json(
            endpoint.url("/hook"),
            b"{}",
            user_agent=USER_AGENT,
            deadline=DEADLINE_S,
            signer=hmac_signer(KEY, SystemClock()),
        )
    assert result.status == 401
    assert seen == [(f"{LOOPBACK}:{endpoint.port}", "/hook")]


@pytest.mark.parametrize(("url", "host", "path"), CASES)
async def test_the_sdk_verifier_accepts_the_same_requests(
    egress: EgressClient, url: str, host: str, path: str
) -> None:
    calls: list[Task] = []
    agent = Agent(KEY, settings=AgentSettings(), model_id="m")

    @agent.scout
    def scout(task: Task) -> dict[str, Any]:
        calls.append(task)
        return {
            "candidate_title": "Invoice autopilot",
            "target_customer": "Small agencies",
            "core_problem": "Invoicing eats hours",
            "proposed_solution": "Timesheets in, invoices out",
            "why_now": "Accounting APIs matured",
            "claims": [],
            "evidence": [],
        }

    payload = dispatch_for(Phase.SCOUT)
    async with serve_agent(agent.app()) as base:
        port = int(base.rstrip("/").rsplit(":", 1)[1])
        result = await egress.post_json(
            url.format(port=port),
            dumps(payload.wire()),
            user_agent=USER_AGENT,
            deadline=DEADLINE_S,
            signer=hmac_signer(KEY, SystemClock(), payload.task_id),
        )
    assert result.status == 200, result.body
    assert [task.task_id for task in calls] == [payload.task_id]


# What is sent is what the policy judges.


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        pytest.param(
            "https://127.0.0.1%2e/",
            "Endpoint refused by egress policy: 127.0.0.1 is a loopback address",
            id="escaped-dot-after-an-address",
        ),
        pytest.param(
            "https://0x7f%2e1/",
            "Endpoint refused by egress policy: 127.0.0.1 is a loopback address",
            id="escaped-short",
        ),
        pytest.param(
            "https://a..example/",
            "Endpoint refused by egress policy: invalid URL 'https://a..example/': "
            "the host name 'a..example' has an empty label",
            id="empty-label",
        ),
    ],
)
async def test_a_host_only_whatwg_reads_as_an_address_is_judged_as_sent(
    network: NetworkGuard, url: str, reason: str
) -> None:
    async with EgressClient(EgressPolicy()) as client:
        result = await client.get(url, user_agent=USER_AGENT, deadline=DEADLINE_S)
    assert result.reason == reason
    assert network.connects == []
    assert network.lookups == []
