"""One sample answer per role from the local model, timed: what ``palaestra model`` shows.

Each answer goes through the same path as a house answer (the production
messages, the role's schema grammar, validation), for a fixed goal; the
later phases read the baseline's scout and plan as their candidate, so each
sample costs one generation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

from palaestra.protocol import Phase
from palaestra.providers.chat import ProviderFailed
from palaestra.providers.local import LocalModel
from palaestra.rules.house_answers import HouseTask, baseline_output
from palaestra.rules.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS, messages_for

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
    samples = []
    for phase in Phase:
        candidate = None if phase is Phase.SCOUT else _CANDIDATE
        started = time.monotonic()
        try:
            output, completions = await model.json_output(
                phase, sample_messages(phase), candidate_id=candidate, deadline=deadline_s
            )
        except ProviderFailed as exc:
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
