"""The local model as the house's writer: an answer's prose one field at a time.

A 270M model asked for a whole phase output as JSON writes valid noise. Here
it writes only the fields of :data:`~palaestra.rules.runs.house_fields.FIELDS`,
each under a GBNF grammar that allows words only (no brackets, braces or
quotes, at least a few words), as the continuation of two worked examples
from the curated bank (plain text, no chat template: a 270M model follows a
pattern better than an instruction); the rest of the answer (ids, lists of assessments, scores, the
build's phases) is the baseline's structure, its texts saying that the house
model wrote them. On a retry only the fields the answer check named are
written again, under another pair of examples and a higher temperature.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any, Final

from palaestra.protocol import Phase
from palaestra.providers.chat import Completion, ProviderFailed
from palaestra.providers.local import LocalModel
from palaestra.rules.runs.house_answers import HouseTask, baseline_output
from palaestra.rules.runs.house_fields import FIELDS, field_grammar, field_prompt

__all__ = ["FieldWriter"]

#: Sampling temperature of the first attempt and of the retry.
TEMPERATURES: Final = (0.4, 0.9)
#: The most tokens one field takes: its grammar allows at most 16 words.
FIELD_TOKENS: Final = 48

_UNCHECKED: Final = "house model: nothing was checked independently"
_PLAN_CLAIM: Final = "A validation plan written by the house model; nothing was researched."
_SCOUT_CLAIM: Final = "Written by the house model from the goal alone; nothing was researched."


class FieldWriter:
    """Writes house answers with ``model``, one field at a time (a house writer)."""

    def __init__(self, model: LocalModel) -> None:
        self.model = model
        self.model_id = model.model_id

    def __repr__(self) -> str:
        return f"FieldWriter({self.model!r})"

    async def write(
        self,
        task: HouseTask,
        *,
        deadline: float,
        attempt: int = 0,
        previous: Mapping[str, Any] | None = None,
        redo: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, Any], list[Completion]]:
        """``task``'s answer; on a retry (``previous`` given) only the fields in ``redo`` are
        written again. :class:`ProviderFailed` when the model gives none in time."""
        until = time.monotonic() + deadline
        output = copy.deepcopy(dict(previous)) if previous is not None else _skeleton(task)
        written = _scout_words(task, output)
        completions: list[Completion] = []
        for job in FIELDS[task.phase]:
            if previous is not None and job.path not in redo:
                written[job.key] = str(_get(output, job.path))
                continue
            left = until - time.monotonic()
            if left <= 0:
                raise ProviderFailed("the local model ran out of time between two fields")
            prompt = field_prompt(task.phase, job, task.goal, written, attempt)
            completion = await self.model.continue_text(
                prompt,
                deadline=left,
                grammar=field_grammar(job),
                max_tokens=FIELD_TOKENS,
                temperature=TEMPERATURES[min(attempt, len(TEMPERATURES) - 1)],
            )
            completions.append(completion)
            text = _tidy(completion.content)
            written[job.key] = text
            _set(output, job.path, text)
        return output, completions


def _skeleton(task: HouseTask) -> dict[str, Any]:
    """The baseline's answer with its texts relabelled: the structure the fields go into."""
    output = baseline_output(task)
    if task.phase is Phase.SCOUT:
        output["claims"] = [{"type": "assumption", "text": _SCOUT_CLAIM}]
    elif task.phase is Phase.BUILD:
        output["claims"] = [{"type": "assumption", "text": _PLAN_CLAIM}]
    elif task.phase is Phase.VERIFY:
        for listing in ("evidence_assessments", "claim_assessments"):
            for item in output[listing]:
                item["note"] = _UNCHECKED
    elif task.phase is Phase.CRITIQUE:
        output["weaknesses"] = ["", output["weaknesses"][0]]
    return output


def _scout_words(task: HouseTask, output: Mapping[str, Any]) -> dict[str, str]:
    """The scout's fields by bank key: the context every later field is written in."""
    scout = output if task.phase is Phase.SCOUT else (task.scout or {})
    written = {}
    for job in FIELDS[Phase.SCOUT]:
        value = scout.get(job.path)
        if task.phase is not Phase.SCOUT and isinstance(value, str) and value.strip():
            written[job.key] = value.strip()
    return written


def _tidy(text: str) -> str:
    text = " ".join(text.split())  # the line's end too
    return text[:1].upper() + text[1:]


def _get(output: Mapping[str, Any], path: str) -> Any:
    value: Any = output
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value.get(part)
    return value


def _set(output: dict[str, Any], path: str, text: str) -> None:
    *parents, last = path.split(".")
    target: Any = output
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        index = int(last)
        if index < len(target):
            target[index] = text
        else:
            target.append(text)
    else:
        target[last] = text
