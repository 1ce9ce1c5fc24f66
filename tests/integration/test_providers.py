"""The platform's OpenAI-compatible provider, against a fake provider on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from palaestra.egress import EgressClient, EgressPolicy
from palaestra.protocol import Phase
from palaestra.providers import ChatProvider, ProviderFailed
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

SCOUT = {
    "candidate_title": "Invoice autopilot",
    "target_customer": "Agencies",
    "core_problem": "Invoicing takes hours",
    "proposed_solution": "Timesheets to invoices",
    "why_now": "APIs matured",
    "claims": [],
    "evidence": [],
}


def completion(content: str) -> dict[str, Any]:
    return {
        "model": "fake-1",
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }


def scripted(*contents: str) -> Any:
    replies: Iterator[str] = iter(contents)

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        return web.json_response(completion(next(replies)))

    return handle


@pytest.fixture
async def egress() -> Any:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


MESSAGES = [{"role": "system", "content": "be a scout"}, {"role": "user", "content": "go"}]


async def test_a_valid_json_answer_is_returned_with_usage(egress: EgressClient) -> None:
    async with serve(scripted(orjson.dumps(SCOUT).decode())) as endpoint:
        provider = ChatProvider(egress, endpoint.url("/v1"), "fake-1", "sk-secret")
        output, completions = await provider.json_output(
            Phase.SCOUT, MESSAGES, candidate_id=None, deadline=5
        )
    assert output == SCOUT
    assert [(c.prompt_tokens, c.completion_tokens, c.model) for c in completions] == [
        (11, 7, "fake-1")
    ]
    request = endpoint.received[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-secret"
    body = orjson.loads(request.body)
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == MESSAGES
    assert "sk-secret" not in repr(provider)


async def test_an_invalid_answer_is_retried_once_with_the_validation_error(
    egress: EgressClient,
) -> None:
    broken = {k: v for k, v in SCOUT.items() if k != "why_now"}
    fenced = "```json\n" + orjson.dumps(SCOUT).decode() + "\n```"
    async with serve(scripted(orjson.dumps(broken).decode(), fenced)) as endpoint:
        provider = ChatProvider(egress, endpoint.url("/v1"), "fake-1")
        output, completions = await provider.json_output(
            Phase.SCOUT, MESSAGES, candidate_id=None, deadline=5
        )
    assert output == SCOUT
    assert len(completions) == 2
    retry = orjson.loads(endpoint.received[1].body)["messages"]
    assert retry[-1]["content"].startswith(
        "That answer was rejected: Validation failed: Missing why_now."
    )
    assert "Authorization" not in endpoint.received[0].headers


async def test_invalid_twice_fails_with_the_reason(egress: EgressClient) -> None:
    async with serve(scripted("<html>", "still not json")) as endpoint:
        provider = ChatProvider(egress, endpoint.url("/v1"), "fake-1")
        with pytest.raises(ProviderFailed) as caught:
            await provider.json_output(Phase.SCOUT, MESSAGES, candidate_id=None, deadline=5)
    assert str(caught.value) == (
        "the model's answer was invalid twice: Unexpected token 's' in JSON at position 0"
    )


async def test_provider_errors_carry_the_egress_reason(egress: EgressClient) -> None:
    async def down(request: web.BaseRequest) -> web.StreamResponse:
        return web.json_response({"error": "overloaded"}, status=529)

    async with serve(down) as endpoint:
        provider = ChatProvider(egress, endpoint.url("/v1"), "fake-1")
        with pytest.raises(ProviderFailed) as caught:
            await provider.complete(MESSAGES, deadline=5)
    assert str(caught.value) == (
        'model provider failed: External agent responded with 529: {"error": "overloaded"}'
    )

    async def empty(request: web.BaseRequest) -> web.StreamResponse:
        return web.json_response({"choices": []})

    async with serve(empty) as endpoint:
        provider = ChatProvider(egress, endpoint.url("/v1"), "fake-1")
        with pytest.raises(ProviderFailed, match="no chat completion"):
            await provider.complete(MESSAGES, deadline=5)


async def test_the_provider_obeys_the_egress_policy() -> None:
    async with EgressClient(EgressPolicy()) as strict:
        provider = ChatProvider(strict, "http://127.0.0.1:9/v1", "m")
        with pytest.raises(ProviderFailed, match="refused by egress policy"):
            await provider.complete(MESSAGES, deadline=5)
