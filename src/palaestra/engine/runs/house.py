"""House agents: the platform's own answer for a slot no external agent could serve.

With a house model configured (``PALAESTRA_HOUSE_*``), the slot's production
messages go to it through :class:`~palaestra.providers.ChatProvider`, which
asks for JSON and retries once with the validation error. Without one, the
local model answers when the ``local`` extra is installed
(:class:`~palaestra.providers.local.LocalModel`, under the grammar of the
phase's JSON Schema). Without either, or when the model fails in any way,
``house-baseline`` answers with the plain, deterministic outputs of
:mod:`palaestra.rules.house_answers`, so a run always completes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from palaestra.egress import EgressClient
from palaestra.protocol import Phase, validate_output
from palaestra.providers import ChatProvider, Completion
from palaestra.providers.local import find_local_model, shared_local_model
from palaestra.rules.house_answers import (
    BASELINE,
    HOUSE_EXECUTORS,
    HOUSE_MODEL,
    HouseTask,
    baseline_output,
)
from palaestra.rules.producers import Producer
from palaestra.settings import Settings

# The pure names are re-exported: the run services import them from here.
__all__ = [
    "BASELINE",
    "HOUSE_EXECUTORS",
    "HOUSE_MODEL",
    "HouseAgent",
    "HouseAnswer",
    "HouseModel",
    "HouseTask",
    "baseline_output",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class HouseAnswer:
    output: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    model_id: str
    executor: str
    note: str | None = None  # why the model was not used, when it was configured

    @property
    def producer(self) -> Producer:
        """Who wrote the output: the house model, or the canned baseline (its fallback)."""
        return Producer.HOUSE_MODEL if self.executor == HOUSE_MODEL else Producer.HOUSE_BASELINE


class HouseModel(Protocol):
    """What the house asks of a model: a validated phase output and what it cost."""

    async def json_output(
        self,
        phase: Phase,
        messages: Sequence[Mapping[str, str]],
        *,
        candidate_id: str | None,
        deadline: float,
    ) -> tuple[dict[str, Any], list[Completion]]: ...


class HouseAgent:
    """Serves house slots: the configured house model, else the local model when installed,
    else (or on the model's failure) the baseline."""

    def __init__(self, provider: HouseModel | None = None) -> None:
        self.provider = provider

    @classmethod
    def from_settings(cls, settings: Settings, egress: EgressClient) -> HouseAgent:
        if settings.house_base_url and settings.house_model:
            key = settings.house_api_key.get_secret_value() if settings.house_api_key else None
            return cls(ChatProvider(egress, settings.house_base_url, settings.house_model, key))
        if settings.local_model_enabled:
            local = find_local_model(settings.local_model_path)
            if local.path is not None:
                return cls(shared_local_model(local.path))
        return cls(None)

    async def answer(self, task: HouseTask) -> HouseAnswer:
        """An output that passes the phase's schema; never raises for the model's faults."""
        note = None
        if self.provider is not None:
            try:
                async with asyncio.timeout(task.deadline_s):  # both attempts, one deadline
                    output, completions = await self.provider.json_output(
                        task.phase,
                        task.messages,
                        candidate_id=task.candidate_id,
                        deadline=task.deadline_s,
                    )
            except TimeoutError:
                note = f"house model timed out after {round(task.deadline_s * 1000)}ms"
            except Exception as exc:  # any fault of the house model falls back to the baseline
                note = f"house model failed: {exc}"
            else:
                return HouseAnswer(
                    output=output,
                    prompt_tokens=sum(c.prompt_tokens for c in completions),
                    completion_tokens=sum(c.completion_tokens for c in completions),
                    model_id=completions[-1].model,
                    executor=HOUSE_MODEL,
                )
            log.warning("house model failed; house-baseline answers", reason=note)
        output = validate_output(task.phase, baseline_output(task), task.candidate_id)
        return HouseAnswer(output, 0, 0, BASELINE, BASELINE, note)
