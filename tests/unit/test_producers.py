"""Who produced an answer: the labels pages show, and which matches may move a rating."""

from __future__ import annotations

import pytest

from palaestra.rules.producers import (
    BASELINE_UNRATED,
    Producer,
    counts_for_ratings,
    producer_label,
    producer_of,
)


def test_the_producers_are_the_agent_the_house_model_and_the_baseline() -> None:
    assert [p.value for p in Producer] == ["agent", "house_model", "house_baseline"]


@pytest.mark.parametrize(
    ("producer", "model_id", "label"),
    [
        ("agent", None, "agent"),
        ("agent", "gpt-x", "agent"),  # an agent's model is its own claim, not the label
        ("house_model", "gemma-3-270m-q4_k_m", "house model gemma-3-270m-q4_k_m"),
        ("house_model", None, "house model"),
        ("house_baseline", None, "house baseline (canned)"),
        # The baseline's tasks carry "house-baseline" as their model id: still no model.
        ("house_baseline", "house-baseline", "house baseline (canned)"),
        (None, None, ""),  # nothing answered yet
        (None, "house-llm-1", ""),
        ("someone-else", None, ""),  # not a producer
    ],
)
def test_the_label_a_page_shows(producer: str | None, model_id: str | None, label: str) -> None:
    assert producer_label(producer, model_id) == label


@pytest.mark.parametrize(
    ("value", "known"),
    [
        ("agent", Producer.AGENT),
        ("house_model", Producer.HOUSE_MODEL),
        ("house_baseline", Producer.HOUSE_BASELINE),
        ("house-baseline", None),  # the executor's spelling is not a producer
        (None, None),
    ],
)
def test_a_stored_value_read_back(value: str | None, known: Producer | None) -> None:
    assert producer_of(value) is known


@pytest.mark.parametrize(
    ("producers", "rated"),
    [
        ([], True),
        (["agent"] * 6, True),
        (["agent", "house_model"] * 3, True),
        (["agent", "house_model", None], True),  # a turn that produced nothing
        (["agent", "house_baseline"] * 3, False),
        (["agent", "house_model", "agent", "house_baseline"], False),  # one fallback is enough
        (["house_baseline", "house_baseline"], False),
    ],
)
def test_a_match_the_baseline_played_in_moves_no_rating(
    producers: list[str | None], rated: bool
) -> None:
    assert counts_for_ratings(producers) is rated


def test_an_unrated_match_says_why() -> None:
    assert "house baseline" in BASELINE_UNRATED
    assert BASELINE_UNRATED.startswith("not rated")
