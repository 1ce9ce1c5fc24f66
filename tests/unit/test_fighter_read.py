"""A fighter's read model: from its row, whether it has an endpoint and never the URL; and
from its own dump, the same model again."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from palaestra.engine.cage.reading import FighterRead


def row(endpoint_url: str | None) -> SimpleNamespace:
    return SimpleNamespace(
        id="f-1",
        name="fighter",
        entrant_type="harness",
        fighter_class="rogue",
        status="ACTIVE",
        harness_name=None,
        sandbox_attested=False,
        endpoint_url=endpoint_url,
        rated_challenges=True,
        friendly_challenges=False,
    )


@pytest.mark.parametrize("url", [None, "https://agent.example/cage"])
def test_a_fighter_is_read_from_its_row_and_again_from_its_dump(url: str | None) -> None:
    read = FighterRead.model_validate(row(url))
    assert read.has_endpoint is (url is not None)
    dumped = read.model_dump()
    assert "endpoint_url" not in dumped
    assert url is None or url not in str(dumped)  # whether there is one, never the URL
    assert FighterRead.model_validate(dumped) == read
