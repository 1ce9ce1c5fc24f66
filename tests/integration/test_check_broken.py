"""``palaestra check`` against agents written here without the SDK, each broken on purpose.

A reference agent (Starlette, signatures checked with the stdlib's ``hmac``)
passes every check; each fault breaks it in one way, and the runner must fail
exactly the checks that fault breaks, with the platform's reason line.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from palaestra.checks import Arena, CheckResult, Deadlines, admitted, run_checks
from palaestra.checks.conformance import cage_check_names, edgearena_check_names
from palaestra.clock import SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.harness.testing import serve
from palaestra.protocol import Role

KEY = "ea_live_reference_9"


@dataclass
class Faults:
    ignore_signatures: bool = False
    get_status: int = 200
    reply_array: bool = False
    omit: str | None = None
    delay_s: float = 0.0
    wrong_nonce: bool = False
    vary_message: bool = False
    prompt_tokens: Any = 1
    simulation_pad: int = 0  # bytes of padding in a simulation's reply (an extra key)
    message: Any = None  # a turn's message in place of the usual text


def _output(phase: str, candidate_id: str | None) -> dict[str, Any]:
    if phase == "SCOUT":
        return {
            "candidate_title": "Invoice autopilot",
            "target_customer": "Small agencies",
            "core_problem": "Invoicing eats hours",
            "proposed_solution": "Timesheets in, invoices out",
            "why_now": "Accounting APIs matured",
            "claims": [],
            "evidence": [],
        }
    if phase == "BUILD":
        return {
            "candidate_id": candidate_id,
            "execution": {
                "objective": "Find paying customers",
                "phases": ["Interviews", {"title": "Pilot", "steps": ["Sell one"]}],
                "first_milestone": "Ten interviews",
                "success_check": "Three paying pilots",
            },
            "claims": [{"type": "market", "text": "Agencies hate invoicing"}],
        }
    if phase == "VERIFY":
        return {
            "candidate_id": candidate_id,
            "evidence_assessments": [],
            "claim_assessments": [],
            "evidence_quality_score": 40,
            "claim_coverage_score": 60.5,
            "overall_confidence": "medium",
            "red_flags": [],
        }
    return {
        "candidate_id": candidate_id,
        "strengths": ["clear"],
        "weaknesses": ["untested"],
        "score_adjustments": {"novelty": -1},
        "penalty_points": 0,
        "verdict": "pass",
        "fatal_flaw": False,
    }


_SIMULATION_PHASE = {"scout_task": "SCOUT", "build_task": "BUILD", "analyst_task": "CRITIQUE"}


def reference_agent(key: str, faults: Faults) -> Starlette:
    answers: dict[str, Any] = {}
    moves = 0

    def signature_ok(request: Request, raw: bytes) -> bool:
        stamp = request.headers.get("x-edgearena-timestamp", "")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
            return False
        target = request.headers["host"] + request.url.path
        material = f"{stamp}\n{target}\n".encode() + raw
        expected = "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, request.headers.get("x-edgearena-signature", ""))

    async def endpoint(request: Request) -> Response:
        nonlocal moves
        if request.method == "GET":
            if faults.get_status == 405:
                return PlainTextResponse("Method Not Allowed", status_code=405)
            return JSONResponse({"ok": True}, status_code=faults.get_status)
        raw = await request.body()
        body = orjson.loads(raw)
        headers = request.headers
        must_verify = (
            "x-edgearena-signature" in headers
            or "x-edgearena-timestamp" in headers
            or headers.get("user-agent") == "EdgeArena-VerifyDispatch/1.0"
            or "taskId" in body
        )
        if must_verify and not faults.ignore_signatures and not signature_ok(request, raw):
            return JSONResponse({"error": "Invalid signature"}, status_code=401)
        kind = body.get("type")
        if kind == "handshake":
            return JSONResponse({"ok": True, "protocol": "edgearena-v1"})
        if kind == "challenge":
            nonce = body["nonce"][::-1] if faults.wrong_nonce else body["nonce"]
            return JSONResponse({"nonce": nonce})
        if kind == "turn":
            idempotency = headers["idempotency-key"]
            if idempotency not in answers or faults.vary_message:
                moves += 1
                text = f"move {moves} as {body['your_role']}"
                answers[idempotency] = {"message": faults.message or text}
            return JSONResponse(answers[idempotency])
        await asyncio.sleep(faults.delay_s)
        if "taskId" in body:
            phase, candidate_id = body["phase"], body["candidateId"]
        else:
            phase = _SIMULATION_PHASE[kind]
            candidate = body.get("candidate")
            candidate_id = candidate["id"] if candidate else None
        output = _output(phase, candidate_id)
        if faults.omit is not None:
            output.pop(faults.omit, None)
        if faults.reply_array:
            return JSONResponse([output])
        if "taskId" not in body:
            if faults.simulation_pad:
                output["pad"] = "x" * faults.simulation_pad
            return JSONResponse(output)
        reply = answers.setdefault(
            body["taskId"],
            {
                "output": output,
                "promptTokens": faults.prompt_tokens,
                "completionTokens": 2,
                "modelId": "ref",
            },
        )
        return JSONResponse(reply)

    return Starlette(routes=[Route("/agent", endpoint, methods=["GET", "POST"])])


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


async def check(
    egress: EgressClient,
    faults: Faults,
    *,
    role: Role | None = Role.SCOUT,
    key: str | None = KEY,
    deadlines: Deadlines | None = None,
) -> list[CheckResult]:
    arena = Arena.EDGEARENA if role is not None else Arena.CAGE
    async with serve(reference_agent(KEY, faults)) as url:
        return await run_checks(
            egress,
            url + "agent",
            arena,
            clock=SystemClock(),
            role=role,
            key=key,
            deadlines=deadlines,
        )


def failures(results: list[CheckResult]) -> dict[str, str | None]:
    return {result.name: result.reason for result in results if not result.passed}


@pytest.mark.parametrize("role", [Role.SCOUT, Role.BUILDER, Role.ANALYST, None])
async def test_the_reference_agent_passes_everything(
    egress: EgressClient, role: Role | None
) -> None:
    results = await check(egress, Faults(), role=role)
    names = edgearena_check_names(role) if role is not None else cage_check_names()
    assert [result.name for result in results] == names
    assert failures(results) == {}


async def test_an_agent_that_ignores_signatures(egress: EgressClient) -> None:
    results = await check(egress, Faults(ignore_signatures=True))
    assert failures(results) == {
        "tampered-signature": (
            "accepts forged signatures: a dispatch with a corrupted signature was answered 200, "
            "expected a 4xx"
        ),
        "stale-timestamp": "a timestamp 360s old was answered 200, expected a 4xx",
    }
    assert all(result.advisory for result in results if not result.passed)
    assert admitted(results)


async def test_a_fractional_token_count_is_a_warning_not_a_failure(egress: EgressClient) -> None:
    """The seed types the counts as ``number``: our stricter rule only warns."""
    results = await check(egress, Faults(prompt_tokens=12.5))
    assert failures(results) == {
        "dispatch:SCOUT:token-counts": (
            "promptTokens: expected a whole number, got 12.5 (recorded as 13)"
        ),
    }
    assert all(result.advisory for result in results if not result.passed)
    assert admitted(results)


async def test_a_simulation_reply_past_the_production_cap_passes_with_a_warning(
    egress: EgressClient,
) -> None:
    """The seed's five checks set no size: a 2xx JSON object with the role's fields passes
    them however large; our 262,144-byte production cap is a warning."""
    results = await check(egress, Faults(simulation_pad=300_000))
    found = failures(results)
    assert set(found) == {"simulation:size", "signed-simulation:size"}
    assert re.fullmatch(
        r"the reply is \d+ bytes; a production reply over 262144 bytes fails "
        r"\(External agent response exceeded 262144 bytes\)",
        found["simulation:size"] or "",
    )
    assert all(result.advisory for result in results if not result.passed)
    assert admitted(results)


async def test_a_simulation_reply_too_large_to_read_was_reached_and_answered_2xx(
    egress: EgressClient,
) -> None:
    """Past what a simulation's reply is read to (1 MiB), the endpoint was still reached
    and answered the POST with a 2xx: only returns-json (and what needs it) fails."""
    results = await check(egress, Faults(simulation_pad=1_100_000))
    too_large = "External agent response exceeded 1048576 bytes"
    assert failures(results) == {
        "simulation:returns-json": too_large,
        "simulation:required-fields": f"not checked: {too_large}",
        "signed-simulation:returns-json": too_large,
        "signed-simulation:required-fields": f"not checked: {too_large}",
    }
    passed = {result.name for result in results if result.passed}
    assert {"simulation:reachable", "simulation:accepts-post", "simulation:timing"} <= passed


async def test_a_turn_message_that_is_not_a_string_is_a_warning(egress: EgressClient) -> None:
    """The seed fails only a missing message: a number is a move; our rule only warns."""
    results = await check(egress, Faults(message=7), role=None)
    warning = "message: expected a string, got number (taken as its JSON text)"
    assert failures(results) == {"turn:attacker:message": warning, "turn:defender:message": warning}
    assert admitted(results)


async def test_an_agent_that_answers_get_with_405(egress: EgressClient) -> None:
    results = await check(egress, Faults(get_status=405))
    assert failures(results) == {
        "health": "External agent responded with 405: Method Not Allowed",
    }
    assert results[0].name == "probe"
    assert results[0].passed  # the probe takes any status below 500


async def test_an_agent_that_returns_an_array(egress: EgressClient) -> None:
    results = await check(egress, Faults(reply_array=True), role=Role.BUILDER)
    not_object = "Validation failed: body: expected an object, got array"
    assert failures(results) == {
        "simulation:returns-json": not_object,
        "simulation:required-fields": f"not checked: {not_object}",
        "signed-simulation:returns-json": not_object,
        "signed-simulation:required-fields": f"not checked: {not_object}",
        "dispatch:BUILD": not_object,
    }


async def test_an_agent_that_omits_a_required_field(egress: EgressClient) -> None:
    results = await check(egress, Faults(omit="verdict"), role=Role.ANALYST)
    assert failures(results) == {
        "simulation:required-fields": "Validation failed: Missing verdict",
        "signed-simulation:required-fields": "Validation failed: Missing verdict",
        "dispatch:CRITIQUE": "Validation failed: Missing verdict",
    }


async def test_an_agent_slower_than_the_deadline(egress: EgressClient) -> None:
    deadlines = Deadlines.scaled(0.01)  # SCOUT: 300 ms
    results = await check(egress, Faults(delay_s=0.6), deadlines=deadlines)
    found = failures(results)
    late = re.compile(r"answered after (\d+)ms, the deadline is 300ms")
    for name in ("simulation:timing", "signed-simulation:timing"):
        match = late.fullmatch(found.pop(name) or "")
        assert match is not None, name
        assert int(match.group(1)) >= 600
    timed_out = "External agent timed out after 300ms"
    assert found == {
        "dispatch:SCOUT": timed_out,
        "dispatch:SCOUT:timing": f"not reached: {timed_out}",
        "repeated-task-id": f"not checked: the dispatch it repeats failed: {timed_out}",
    }


async def test_a_fighter_that_echoes_the_wrong_nonce(egress: EgressClient) -> None:
    results = await check(egress, Faults(wrong_nonce=True), role=None)
    assert failures(results) == {
        "challenge": "Challenge failed: the reply did not echo the nonce",
    }


async def test_a_fighter_that_changes_its_message_on_a_repeat(egress: EgressClient) -> None:
    results = await check(egress, Faults(vary_message=True), role=None)
    assert failures(results) == {
        "repeated-idempotency-key": "a repeated idempotency-key got a different message",
    }


async def test_without_the_key_signed_checks_fail_as_not_run(egress: EgressClient) -> None:
    results = await check(egress, Faults(), key=None)
    needs_key = "not run: signed checks need the agent's key (--key)"
    assert failures(results) == dict.fromkeys(
        [
            *(
                f"signed-simulation:{name}"
                for name in (
                    "reachable",
                    "accepts-post",
                    "returns-json",
                    "required-fields",
                    "timing",
                )
            ),
            "dispatch:SCOUT",
            "dispatch:SCOUT:timing",
            "tampered-signature",
            "stale-timestamp",
            "repeated-task-id",
        ],
        needs_key,
    )


async def test_with_the_wrong_key_signed_checks_fail_with_the_agents_401(
    egress: EgressClient,
) -> None:
    results = await check(egress, Faults(), key="not-the-key")
    found = failures(results)
    refused = 'External agent responded with 401: {"error":"Invalid signature"}'
    assert found["signed-simulation:accepts-post"] == refused
    assert found["dispatch:SCOUT"] == refused
    assert "tampered-signature" not in found


async def test_an_unreachable_endpoint_stops_after_the_probe(egress: EgressClient) -> None:
    async with serve(reference_agent(KEY, Faults())) as url:
        pass  # the port is closed again
    results = await run_checks(
        egress, url, Arena.EDGEARENA, clock=SystemClock(), role=Role.SCOUT, key=KEY
    )
    assert results[0].name == "probe"
    assert (results[0].reason or "").startswith("External agent unreachable: connect: ")
    assert {r.reason for r in results[1:]} == {"not run: the endpoint did not pass the probe"}
    assert len(results) == len(edgearena_check_names(Role.SCOUT))


async def test_an_endpoint_the_policy_refuses_is_never_called() -> None:
    async with EgressClient(EgressPolicy()) as strict:
        results = await run_checks(strict, "http://127.0.0.1:9/", Arena.CAGE, clock=SystemClock())
    assert results[0].reason is not None
    assert results[0].reason.startswith("Endpoint refused by egress policy: ")
    assert {r.reason for r in results[1:]} == {"not run: the endpoint did not answer the challenge"}


async def test_progress_is_told_before_each_wait(egress: EgressClient) -> None:
    told: list[tuple[str, float]] = []
    async with serve(reference_agent(KEY, Faults())) as url:
        await run_checks(
            egress,
            url + "agent",
            Arena.EDGEARENA,
            clock=SystemClock(),
            role=Role.BUILDER,
            key=KEY,
            progress=lambda name, deadline: told.append((name, deadline)),
        )
    assert told == [
        ("probe", 5.0),
        ("health", 4.0),
        ("handshake", 5.0),
        ("simulation", 94.0),
        ("signed-simulation", 94.0),
        ("dispatch:BUILD", 90.0),
        ("tampered-signature", 90.0),
        ("stale-timestamp", 90.0),
        ("repeated-task-id", 90.0),
    ]
