"""House agents: the platform's own answer for a slot no external agent could serve.

With a house model configured (``PALAESTRA_HOUSE_*``), the slot's production
messages go to it through :class:`~palaestra.providers.ChatProvider`, which
asks for JSON and retries once with the validation error. Without one, the
local model answers when the ``local`` extra is installed
(:class:`~palaestra.providers.local.LocalModel`, under the grammar of the
phase's JSON Schema). Without either, or when the model fails in any way,
``house-baseline`` answers with the plain, deterministic outputs of
:mod:`palaestra.rules.runs.house_answers`, so a run always completes.

Without a house model configured, the local model answers when the ``local``
extra is installed, as a :class:`~palaestra.providers.local_house.FieldWriter`:
one field at a time under grammars, not the whole JSON at once. Every model
answer, from either, must pass :func:`~palaestra.rules.runs.answer_check.answer_problems`;
one that fails is tried once more (the remote model is told what was wrong,
the writer redoes the fields named), and one that fails again is replaced by
the baseline's, recorded as the baseline's with the check's reasons as its note.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import structlog

from palaestra.egress import EgressClient
from palaestra.protocol import Envelope, Phase, dumps, validate_output
from palaestra.providers import ChatProvider, Completion, ProviderFailed
from palaestra.providers.chat import rejection_turns
from palaestra.providers.local import find_local_model, shared_local_model
from palaestra.providers.local_house import FieldWriter
from palaestra.rules.producers import Producer
from palaestra.rules.runs.answer_check import AnswerProblem, answer_problems
from palaestra.rules.runs.house_answers import (
    BASELINE,
    HOUSE_MODEL,
    HouseTask,
    baseline_output,
)
from palaestra.rules.runs.house_fields import bank_text
from palaestra.settings import Settings

# The pure names are re-exported: the run services import them from here.
__all__ = [
    "HouseAgent",
    "HouseAnswer",
    "HouseModel",
    "HouseWriter",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class HouseAnswer(Envelope):
    """The house's reply in place of an agent's: its output and what it cost, and who wrote it."""

    executor: str
    note: str | None = None  # why the model was not used, when it was configured
    #: How many answers the model gave (0 for the baseline alone, 2 after a retry).
    attempts: int = 0

    @property
    def from_model(self) -> bool:
        """Whether the model wrote this answer (else the baseline did)."""
        return self.executor == HOUSE_MODEL

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


@runtime_checkable
class HouseWriter(Protocol):
    """A model that writes an answer itself from the task, and on a retry redoes only the
    fields the check named (:class:`~palaestra.providers.local_house.FieldWriter`)."""

    async def write(
        self,
        task: HouseTask,
        *,
        deadline: float,
        attempt: int = 0,
        previous: Mapping[str, Any] | None = None,
        redo: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, Any], list[Completion]]: ...


class AnswerRejected(ProviderFailed):
    """The house model's answer failed the answer check twice."""


class HouseAgent:
    """Serves house slots: the configured house model, else the local model when installed,
    else (or on the model's failure) the baseline."""

    def __init__(self, provider: HouseModel | HouseWriter | None = None) -> None:
        self.provider = provider

    @classmethod
    def from_settings(cls, settings: Settings, egress: EgressClient) -> HouseAgent:
        if settings.house_base_url and settings.house_model:
            key = settings.house_api_key.get_secret_value() if settings.house_api_key else None
            return cls(ChatProvider(egress, settings.house_base_url, settings.house_model, key))
        if settings.local_model_enabled:
            local = find_local_model(settings.local_model_path)
            if local.path is not None:
                return cls(FieldWriter(shared_local_model(local.path)))
        return cls(None)

    async def answer(self, task: HouseTask) -> HouseAnswer:
        """An output that passes the phase's schema; never raises for the model's faults."""
        note = None
        if self.provider is not None:
            try:
                async with asyncio.timeout(task.deadline_s):  # both attempts, one deadline
                    return await self._checked(task)
            except TimeoutError:
                note = f"house model timed out after {round(task.deadline_s * 1000)}ms"
            except Exception as exc:  # any fault of the house model falls back to the baseline
                note = f"house model failed: {exc}"
            log.warning("house model failed; house-baseline answers", reason=note)
        output = validate_output(task.phase, baseline_output(task), task.candidate_id)
        return HouseAnswer(output, 0, 0, BASELINE, BASELINE, note)

    async def _checked(self, task: HouseTask) -> HouseAnswer:
        """The model's answer that passes the answer check, at the first try or the second;
        :class:`AnswerRejected` when neither does."""
        until = time.monotonic() + task.deadline_s
        prompt = "\n".join([*(m.get("content", "") for m in task.messages), bank_text()])
        completions: list[Completion] = []
        output: dict[str, Any] | None = None
        problems: tuple[AnswerProblem, ...] = ()
        for attempt in range(2):
            output, spent = await self._generate(task, attempt, output, problems, until)
            completions += spent
            output = validate_output(task.phase, output, task.candidate_id)
            problems = answer_problems(task.phase, output, goal=task.goal, prompt=prompt)
            if not problems:
                return HouseAnswer(
                    output=output,
                    prompt_tokens=sum(c.prompt_tokens for c in completions),
                    completion_tokens=sum(c.completion_tokens for c in completions),
                    model_id=completions[-1].model if completions else BASELINE,
                    executor=HOUSE_MODEL,
                    attempts=attempt + 1,
                )
        reasons = "; ".join(str(p) for p in problems)
        raise AnswerRejected(f"its answer failed the answer check twice ({reasons})")

    async def _generate(
        self,
        task: HouseTask,
        attempt: int,
        previous: dict[str, Any] | None,
        problems: Sequence[AnswerProblem],
        until: float,
    ) -> tuple[dict[str, Any], list[Completion]]:
        deadline = max(until - time.monotonic(), 0.1)
        if isinstance(self.provider, HouseWriter):
            redo = frozenset(p.field for p in problems)
            return await self.provider.write(
                task, deadline=deadline, attempt=attempt, previous=previous, redo=redo
            )
        assert self.provider is not None
        messages = [dict(m) for m in task.messages]
        if previous is not None:
            reasons = "; ".join(str(p) for p in problems)
            messages += rejection_turns(dumps(previous).decode(), reasons)
        return await self.provider.json_output(
            task.phase, messages, candidate_id=task.candidate_id, deadline=deadline
        )
