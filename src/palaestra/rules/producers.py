"""Who produced an answer: the agent, the house model, or the house baseline.

Every answer the platform keeps (a run task's output, a cage turn's message)
carries its :class:`Producer`, and with the house model its model id, so that
pages, the API and the dataset say who wrote it. The house baseline's answers
are canned and deterministic: they fill a slot or a turn so that a run
completes and a match goes on, and they never count as a contestant's in a
rating or a comparison (:func:`counts_for_ratings`). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Final

__all__ = [
    "BASELINE_UNRATED",
    "Producer",
    "counts_for_ratings",
    "producer_label",
    "producer_of",
]


class Producer(StrEnum):
    """Who wrote an answer."""

    AGENT = "agent"  # the contestant: an agent's endpoint, a harness, an owner's model
    HOUSE_MODEL = "house_model"  # the platform's own model (remote or local), by model id
    HOUSE_BASELINE = "house_baseline"  # canned, deterministic lines: no model at all


#: Why a scored match moved no rating, when the house baseline played in it.
BASELINE_UNRATED: Final = (
    "not rated: the house baseline (canned lines, no model) played a turn of this match"
)

_LABELS: Final = {
    Producer.AGENT: "agent",
    Producer.HOUSE_MODEL: "house model",
    Producer.HOUSE_BASELINE: "house baseline (canned)",
}


def producer_of(value: str | None) -> Producer | None:
    """The stored ``value`` as a :class:`Producer`; None when unset (no answer yet) or
    unknown."""
    try:
        return Producer(value) if value is not None else None
    except ValueError:
        return None


def producer_label(producer: str | None, model_id: str | None = None) -> str:
    """How a page names the producer: ``agent``, ``house model <id>`` or
    ``house baseline (canned)``; empty when no answer was produced."""
    known = producer_of(producer)
    if known is None:
        return ""
    if known is Producer.HOUSE_MODEL and model_id:
        return f"house model {model_id}"
    return _LABELS[known]


def counts_for_ratings(producers: Iterable[str | None]) -> bool:
    """Whether a match whose turns were produced by ``producers`` may move a rating: not when
    the house baseline played any of its turns (its lines are canned, not a contestant's,
    and its results must never count as the house model's)."""
    return all(producer_of(p) is not Producer.HOUSE_BASELINE for p in producers)
