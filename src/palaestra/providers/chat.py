"""An OpenAI-compatible chat completions client that goes through the egress client.

Used for the operator's house model (edgearena runs and cage ``house``
entrants) and for cage ``model`` entrants. Every call is subject to the egress
policy like any agent call; the provider's key is sent only as its bearer
token and never logged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from palaestra import __version__
from palaestra.egress import EgressClient
from palaestra.errors import PalaestraError
from palaestra.protocol import InvalidJson, Phase, SchemaViolation, dumps, loads, validate_output
from palaestra.protocol.failures import Failure
from palaestra.protocol.violations import json_type

__all__ = [
    "ChatProvider",
    "Completion",
    "ProviderFailed",
    "parse_completion",
    "rejection_turns",
    "strip_code_fence",
]

_USER_AGENT = f"Palaestra/{__version__}"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class ProviderFailed(PalaestraError):
    """The model provider did not give a usable answer."""

    def __init__(self, message: str, failure: Failure | None = None) -> None:
        super().__init__(message)
        self.failure = failure


@dataclass(frozen=True, slots=True)
class Completion:
    """One chat completion: its text and what it cost."""

    content: str
    prompt_tokens: int
    completion_tokens: int
    model: str


def strip_code_fence(text: str) -> str:
    """Models often wrap JSON in a Markdown fence; the JSON is inside."""
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text


def parse_completion(data: Any, default_model: str) -> Completion:
    """Read a chat completions response body; raise :class:`ProviderFailed` if it is none."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderFailed(f"the provider sent no chat completion (missing {exc})") from None
    if not isinstance(content, str):
        raise ProviderFailed(f"the completion's content is {json_type(content)}, not text")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    model = data.get("model")
    return Completion(
        content=content,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        model=model if isinstance(model, str) and model else default_model,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class ChatProvider:
    """``POST {base_url}/chat/completions`` through the egress client."""

    def __init__(
        self,
        egress: EgressClient,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float | None = 0.2,
    ) -> None:
        self.egress = egress
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self._api_key = api_key

    def __repr__(self) -> str:  # never shows the key
        return f"ChatProvider(base_url={self.base_url!r}, model={self.model!r})"

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        deadline: float,
        json_mode: bool = False,
    ) -> Completion:
        """One completion within ``deadline`` seconds, or :class:`ProviderFailed`."""
        request: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
        result = await self.egress.post_json(
            f"{self.base_url}/chat/completions",
            dumps(request),
            user_agent=_USER_AGENT,
            deadline=deadline,
            headers=headers,
        )
        if result.failure is not None:
            raise ProviderFailed(f"model provider failed: {result.reason}", result.failure)
        return parse_completion(result.data, self.model)

    async def json_output(
        self,
        phase: Phase,
        messages: Sequence[Mapping[str, str]],
        *,
        candidate_id: str | None,
        deadline: float,
    ) -> tuple[dict[str, Any], list[Completion]]:
        """A phase output in JSON mode, validated; one retry carrying the validation error."""
        conversation = [dict(m) for m in messages]
        completions: list[Completion] = []
        problem = ""
        for _attempt in range(2):
            completion = await self.complete(conversation, deadline=deadline, json_mode=True)
            completions.append(completion)
            output, problem = _checked(phase, completion.content, candidate_id)
            if output is not None:
                return output, completions
            conversation += rejection_turns(completion.content, problem)
        raise ProviderFailed(f"the model's answer was invalid twice: {problem}")


def rejection_turns(answer: str, problem: str) -> list[dict[str, str]]:
    """The two messages that ask a model again: its rejected ``answer``, and why it was
    rejected, to append to the conversation it came from."""
    return [
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": f"That answer was rejected: {problem}. Reply again with one "
            "JSON object that fixes this and follows every rule of the first message.",
        },
    ]


def _checked(
    phase: Phase, content: str, candidate_id: str | None
) -> tuple[dict[str, Any] | None, str]:
    try:
        parsed = loads(strip_code_fence(content))
        return validate_output(phase, parsed, candidate_id), ""
    except (InvalidJson, SchemaViolation) as exc:
        return None, exc.message
