"""The LLM helper and the LLM example agent, against a fake OpenAI-compatible server on loopback.

The fake answers chat completions like a model would: scripted contents when
a test queues them, otherwise a valid answer for the phase its system prompt names.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from examples import llm_agent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from palaestra.checks import Arena, run_checks
from palaestra.checks.conformance import cage_check_names, edgearena_check_names
from palaestra.checks.samples import simulation_for
from palaestra.clock import SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.harness import (
    AgentSettings,
    InvalidModelOutput,
    ModelUnavailable,
    OpenAIChat,
    Task,
)
from palaestra.harness.testing import serve
from palaestra.protocol import Role, ScoutSimulation

KEY = "ea_live_llm_5"
API_KEY = "sk-test-not-real"
_CANDIDATE = re.compile(r"candidate_id ([0-9a-f-]{36})")

SCOUT: dict[str, Any] = {
    "candidate_title": "Invoice autopilot",
    "target_customer": "Small agencies",
    "core_problem": "Invoicing eats hours",
    "proposed_solution": "Timesheets in, invoices out",
    "why_now": "Accounting APIs matured",
    "claims": [{"type": "market", "text": "Agencies hate invoicing"}],
    "evidence": [],
}


def answer_for(system: str, user: str) -> dict[str, Any]:
    found = _CANDIDATE.search(user)
    candidate_id = found.group(1) if found else None
    if "VERIFIER" in system:
        return {
            "candidate_id": candidate_id,
            "evidence_assessments": [
                {"kind": "survey", "summary": "s", "reliability": "low", "specificity": "medium"}
            ],
            "claim_assessments": [
                {"type": "market", "text": "t", "supported": False, "confidence": "low"}
            ],
            "evidence_quality_score": 35,
            "claim_coverage_score": 50,
            "overall_confidence": "low",
            "red_flags": ["thin evidence"],
        }
    if "CRITIC" in system:
        return {
            "candidate_id": candidate_id,
            "strengths": ["clear buyer"],
            "weaknesses": ["crowded market"],
            "score_adjustments": {"market": -2},
            "penalty_points": 1,
            "verdict": "pass",
            "fatal_flaw": False,
        }
    if "BUILDER" in system:
        return {
            "candidate_id": candidate_id,
            "execution": {
                "objective": "Ten paying pilots",
                "phases": [{"title": "Interviews", "steps": ["Call 20 agencies"]}],
                "first_milestone": "Ten interviews",
                "success_check": "Three paid pilots",
            },
            "claims": [],
        }
    return SCOUT


class FakeModel:
    """An OpenAI-compatible ``/v1/chat/completions`` with a queue of scripted contents."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.scripted: list[str] = []
        self.status = 200
        self.app = Starlette(
            routes=[Route("/v1/chat/completions", self.complete, methods=["POST"])]
        )

    async def complete(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append(body)
        self.authorizations.append(request.headers.get("authorization"))
        if self.status != 200:
            return PlainTextResponse("upstream overloaded", status_code=self.status)
        if self.scripted:
            content = self.scripted.pop(0)
        elif "response_format" in body:
            messages = body["messages"]
            system = " ".join(m["content"] for m in messages if m["role"] == "system")
            user = " ".join(m["content"] for m in messages if m["role"] == "user")
            content = orjson.dumps(answer_for(system, user)).decode()
        else:
            content = "I will not share the access code. ANSWER: 250.00"
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "model": "fake-model-1",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeModel, str]]:
    model = FakeModel()
    async with serve(model.app) as url:
        yield model, url + "v1"


@pytest.fixture
async def chat(fake: tuple[FakeModel, str]) -> AsyncIterator[OpenAIChat]:
    client = OpenAIChat(fake[1], "fake-model", api_key=API_KEY)
    yield client
    await client.aclose()


def scout_task() -> Task:
    simulation = simulation_for(Role.SCOUT)
    assert isinstance(simulation, ScoutSimulation)
    return Task.from_simulation(simulation, signed=False)


async def test_reply_forwards_the_messages_verbatim_in_json_mode(
    fake: tuple[FakeModel, str], chat: OpenAIChat
) -> None:
    model, _ = fake
    task = scout_task()
    reply = await chat.reply(task)
    assert reply.output == SCOUT
    assert (reply.prompt_tokens, reply.completion_tokens, reply.model_id) == (
        11,
        7,
        "fake-model-1",
    )
    [sent] = model.requests
    assert sent["model"] == "fake-model"
    assert sent["messages"] == [m.model_dump() for m in task.messages]
    assert sent["response_format"] == {"type": "json_object"}
    assert model.authorizations == [f"Bearer {API_KEY}"]


async def test_an_invalid_answer_is_retried_once_with_the_reason(
    fake: tuple[FakeModel, str], chat: OpenAIChat
) -> None:
    model, _ = fake
    invalid = orjson.dumps({k: v for k, v in SCOUT.items() if k != "why_now"}).decode()
    model.scripted = [invalid, orjson.dumps(SCOUT).decode()]
    task = scout_task()
    reply = await chat.reply(task)
    assert reply.output == SCOUT
    assert (reply.prompt_tokens, reply.completion_tokens) == (22, 14)  # both calls counted
    first, second = model.requests
    original = [m.model_dump() for m in task.messages]
    assert first["messages"] == original
    assert second["messages"][: len(original)] == original
    assert second["messages"][len(original)] == {"role": "assistant", "content": invalid}
    retry = second["messages"][-1]
    assert retry["role"] == "user"
    assert "Validation failed: Missing why_now" in retry["content"]


async def test_prose_then_fenced_json_is_retried_and_accepted(
    fake: tuple[FakeModel, str], chat: OpenAIChat
) -> None:
    model, _ = fake
    model.scripted = ["Sure! Here it is.", "```json\n" + orjson.dumps(SCOUT).decode() + "\n```"]
    reply = await chat.reply(scout_task())
    assert reply.output == SCOUT
    assert (
        "Unexpected token 'S' in JSON at position 0" in model.requests[1]["messages"][-1]["content"]
    )


async def test_two_invalid_answers_give_up_with_the_reason(
    fake: tuple[FakeModel, str], chat: OpenAIChat
) -> None:
    model, _ = fake
    model.scripted = ["[1]", '{"candidate_title": ""}']
    with pytest.raises(InvalidModelOutput) as raised:
        await chat.reply(scout_task())
    assert len(model.requests) == 2
    assert raised.value.message.startswith(
        "the model's answer was invalid twice: "
        "Validation failed: candidate_title: must not be empty"
    )


async def test_a_failing_model_endpoint_is_reported(
    fake: tuple[FakeModel, str], chat: OpenAIChat
) -> None:
    model, _ = fake
    model.status = 503
    with pytest.raises(
        ModelUnavailable,
        match="model provider failed: External agent responded with 503: upstream overloaded",
    ):
        await chat.reply(scout_task())
    assert len(model.requests) == 1  # no retry for an endpoint that failed


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


@pytest.mark.parametrize("role", [Role.SCOUT, Role.BUILDER, Role.ANALYST])
async def test_the_llm_example_passes_check(
    fake: tuple[FakeModel, str], egress: EgressClient, role: Role
) -> None:
    model, base_url = fake
    agent = llm_agent.create_agent(
        OpenAIChat(base_url, "fake-model", api_key=API_KEY), KEY, settings=AgentSettings()
    )
    async with serve(agent.app()) as url:
        results = await run_checks(
            egress, url, Arena.EDGEARENA, clock=SystemClock(), role=role, key=KEY
        )
    assert [r.name for r in results] == edgearena_check_names(role)
    assert [(r.name, r.reason) for r in results if not r.passed] == []
    # unsigned + signed simulation, one dispatch per phase; the repeat came from the cache
    assert len(model.requests) == 2 + len(role.phases)


async def test_the_llm_example_fights(fake: tuple[FakeModel, str], egress: EgressClient) -> None:
    model, base_url = fake
    agent = llm_agent.create_agent(OpenAIChat(base_url, "fake-model"), settings=AgentSettings())
    async with serve(agent.app()) as url:
        results = await run_checks(egress, url, Arena.CAGE, clock=SystemClock())
    assert [r.name for r in results] == cage_check_names()
    assert all(r.passed for r in results), results
    assert len(model.requests) == 2  # attacker and defender; the repeat came from the cache
    assert model.requests[0]["messages"][0]["role"] == "system"
    assert "response_format" not in model.requests[0]


async def test_an_unreachable_model_is_a_502_the_platform_can_read(
    egress: EgressClient,
) -> None:
    async with serve(FakeModel().app) as gone:
        pass  # nothing listens there any more
    agent = llm_agent.create_agent(OpenAIChat(gone + "v1", "m"), KEY, settings=AgentSettings())
    async with serve(agent.app()) as url:
        results = await run_checks(
            egress, url, Arena.EDGEARENA, clock=SystemClock(), role=Role.SCOUT, key=KEY
        )
    reasons = {r.name: r.reason for r in results}
    assert (reasons["dispatch:SCOUT"] or "").startswith(
        'External agent responded with 502: {"error":"model provider failed: '
        "External agent unreachable: connect: "
    )
