"""One sample answer per role from the local model, timed: what ``palaestra model`` shows.

Each answer is written as the house writes one (the field writer, one field
at a time under its grammar, then validation), for a fixed goal; the later
phases read the baseline's scout and plan as their candidate. The answer
check is the house agent's, above this layer: a sample is the first try.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

from palaestra.protocol import Phase, SchemaViolation, validate_output
from palaestra.providers.chat import ProviderFailed
from palaestra.providers.local import LocalModel
from palaestra.providers.local_house import FieldWriter
from palaestra.rules.runs.house_answers import HouseTask, baseline_output
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS, messages_for

__all__ = ["SAMPLE_GOAL", "Sample", "sample_answers", "sample_messages"]

SAMPLE_GOAL: Final = "Help independent bakeries waste less bread"
_CANDIDATE: Final = "sample-candidate"


@dataclass(frozen=True, slots=True)
class Sample:
    """One phase's answer (``None`` with ``problem`` when there is none) and its cost."""

    phase: Phase
    seconds: float
    output: dict[str, Any] | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    problem: str | None = None

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds > 0 else 0.0


def sample_messages(phase: Phase) -> list[dict[str, str]]:
    """The production messages of a ``phase`` task for the sample goal."""
    launchpad = LAUNCHPADS[DEFAULT_LAUNCHPAD]
    if phase is Phase.SCOUT:
        return messages_for(phase, launchpad, SAMPLE_GOAL)
    base = HouseTask(Phase.SCOUT, SAMPLE_GOAL, (), 30.0)
    scout = baseline_output(base)
    build = baseline_output(
        HouseTask(Phase.BUILD, SAMPLE_GOAL, (), 90.0, candidate_id=_CANDIDATE, scout=scout)
    )
    return messages_for(
        phase, launchpad, SAMPLE_GOAL, candidate_id=_CANDIDATE, scout=scout, builds=[build]
    )


async def sample_answers(model: LocalModel, deadline_s: float = 120.0) -> list[Sample]:
    """One answer per phase, one after another."""
    writer = FieldWriter(model)
    samples = []
    for phase in Phase:
        candidate = None if phase is Phase.SCOUT else _CANDIDATE
        task = _task(phase, deadline_s)
        started = time.monotonic()
        try:
            output, completions = await writer.write(task, deadline=deadline_s)
            output = validate_output(phase, output, candidate)
        except (ProviderFailed, SchemaViolation) as exc:
            samples.append(Sample(phase, time.monotonic() - started, None, problem=exc.message))
            continue
        samples.append(
            Sample(
                phase,
                time.monotonic() - started,
                output,
                sum(c.prompt_tokens for c in completions),
                sum(c.completion_tokens for c in completions),
            )
        )
    return samples


def _task(phase: Phase, deadline_s: float) -> HouseTask:
    messages = sample_messages(phase)
    if phase is Phase.SCOUT:
        return HouseTask(phase, SAMPLE_GOAL, messages, deadline_s)
    scout = baseline_output(HouseTask(Phase.SCOUT, SAMPLE_GOAL, (), deadline_s))
    return HouseTask(phase, SAMPLE_GOAL, messages, deadline_s, candidate_id=_CANDIDATE, scout=scout)
