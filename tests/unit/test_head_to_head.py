"""The head-to-head grid: each pairing's matches by how they were decided, and its picture."""

from __future__ import annotations

import re

from palaestra.rules.ratings.head_to_head import head_to_head
from palaestra.web.grid_chart import head_to_head_grid

NAMES = {"a": "Alpha", "b": "Bravo", "c": "<Charlie>"}


def test_each_pairing_counts_its_matches_by_how_they_were_decided() -> None:
    grid = head_to_head(
        [
            ("a", "b", "attacker", "leak"),
            ("a", "b", "attacker", "hijack"),
            ("a", "b", "attacker", "utility"),
            ("a", "b", "draw", "utility"),
            ("a", "b", "defender", "utility"),
            ("b", "a", "defender", "forfeit"),
            ("a", "b", "voided", None),  # not a result: not counted
        ],
        NAMES,
    )
    assert [f["name"] for f in grid["attackers"]] == ["Alpha", "Bravo"]
    assert [f["name"] for f in grid["defenders"]] == ["Alpha", "Bravo"]
    assert grid["cells"][0] == [
        None,
        {"leak": 1, "hijack": 1, "attacker": 1, "draw": 1, "defender": 1},
    ]
    assert grid["cells"][1] == [
        {"leak": 0, "hijack": 0, "attacker": 0, "draw": 0, "defender": 1},
        None,
    ]


def test_only_the_busiest_fighters_of_each_side_are_shown() -> None:
    matches = [("a", "c", "defender", "utility")] * 3 + [("b", "c", "draw", "utility")]
    grid = head_to_head(matches, NAMES, most=1)
    assert [f["id"] for f in grid["attackers"]] == ["a"]
    assert [f["id"] for f in grid["defenders"]] == ["c"]


def test_the_picture_shows_each_cell_and_escapes_names() -> None:
    grid = head_to_head(
        [("a", "c", "attacker", "leak"), ("a", "c", "attacker", "leak"), ("a", "c", "draw", None)],
        NAMES,
    )
    svg = str(head_to_head_grid(grid))
    assert re.findall(r"<text [^>]*>(\d+)\u2013(\d+)\u2013(\d+)</text>", svg) == [("2", "1", "0")]
    assert 'class="h2h-leak"' in svg  # coloured by what decided most of them
    assert "<Charlie>" not in svg
    assert "&lt;Charlie&gt;" in svg
    assert "2 attacker won: the code leaked, 1 draw" in svg
