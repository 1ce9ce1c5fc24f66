"""The answer check on a remote house model's answers, against a fake provider on 127.0.0.1:
noise is retried once with the reasons, and noise twice is the baseline's answer, labelled."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from palaestra.egress import EgressClient, EgressPolicy
from palaestra.engine.runs.house import HouseAgent
from palaestra.protocol import Phase
from palaestra.providers import ChatProvider
from palaestra.rules.runs.house_answers import BASELINE, HOUSE_MODEL, HouseTask
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS, messages_for
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

GOAL = "Help dentists fill cancelled appointments"
NOISE = {
    "candidate_title": "Petroleum industry",
    "target_customer": "Petroleum",
    "core_problem": "Petroleum",
    "proposed_solution": "Petroleum",
    "why_now": "Petroleum",
    "claims": [],
    "evidence": [],
}
GOOD = {
    "candidate_title": "Last-minute waitlist for dental clinics",
    "target_customer": "Dentists running clinics with two or three chairs",
    "core_problem": "Cancelled appointments leave chairs empty for hours",
    "proposed_solution": "A waitlist that texts patients when a slot opens",
    "why_now": "Patients now rebook appointments from their phones",
    "claims": [],
    "evidence": [],
}


def scripted(*outputs: dict[str, Any]) -> Any:
    replies: Iterator[dict[str, Any]] = iter(outputs)

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        body = {
            "model": "fake-1",
            "choices": [{"message": {"content": orjson.dumps(next(replies)).decode()}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
        return web.json_response(body)

    return handle


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


def scout_task() -> HouseTask:
    messages = messages_for(Phase.SCOUT, LAUNCHPADS[DEFAULT_LAUNCHPAD], GOAL)
    return HouseTask(Phase.SCOUT, GOAL, messages, 10.0)


async def test_a_good_answer_passes_on_the_first_try(egress: EgressClient) -> None:
    async with serve(scripted(GOOD)) as endpoint:
        house = HouseAgent(ChatProvider(egress, endpoint.url("/v1"), "fake-1"))
        answer = await house.answer(scout_task())
    assert (answer.executor, answer.attempts, answer.from_model) == (HOUSE_MODEL, 1, True)
    assert answer.output["candidate_title"] == GOOD["candidate_title"]


async def test_noise_is_retried_once_with_the_reasons(egress: EgressClient) -> None:
    async with serve(scripted(NOISE, GOOD)) as endpoint:
        house = HouseAgent(ChatProvider(egress, endpoint.url("/v1"), "fake-1"))
        answer = await house.answer(scout_task())
        retry = orjson.loads(endpoint.received[1].body)["messages"]
    assert (answer.executor, answer.attempts, answer.model_id) == (HOUSE_MODEL, 2, "fake-1")
    assert (answer.prompt_tokens, answer.completion_tokens) == (20, 10)
    assert retry[-2]["role"] == "assistant"
    assert "target_customer: has 1 word, fewer than 3" in retry[-1]["content"]


async def test_noise_twice_is_the_baseline_answer_labelled_as_such(egress: EgressClient) -> None:
    async with serve(scripted(NOISE, NOISE)) as endpoint:
        house = HouseAgent(ChatProvider(egress, endpoint.url("/v1"), "fake-1"))
        answer = await house.answer(scout_task())
        assert len(endpoint.received) == 2
    assert (answer.executor, answer.model_id, answer.from_model) == (BASELINE, BASELINE, False)
    assert answer.note is not None
    assert "failed the answer check twice" in answer.note
    assert "why_now: has 1 word" in answer.note
    assert answer.output["candidate_title"] != NOISE["candidate_title"]
