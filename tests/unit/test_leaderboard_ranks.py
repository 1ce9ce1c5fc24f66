"""The published cage table's ranks: rated fighters ranked by their intervals, the rest last."""

from __future__ import annotations

from typing import Any

from palaestra.rules.ratings.leaderboard_tables import filter_cage


def fighter(name: str, overall: tuple[float, float, float] | None) -> dict[str, Any]:
    interval = (
        None if overall is None else dict(zip(("value", "low", "high"), overall, strict=True))
    )
    return {"name": name, "entrant_type": "harness", "class": "rogue", "overall": interval}


def test_a_fighter_that_played_one_side_has_no_rank_and_comes_last() -> None:
    table = {
        "fighters": [
            fighter("attacks-only", None),
            fighter("weak", (-1.0, -1.5, -0.5)),
            fighter("strong", (1.0, 0.5, 1.5)),
            fighter("defends-only", None),
            fighter("middling", (0.2, -0.6, 0.9)),
        ]
    }
    ranked = [(row["name"], row["rank"]) for row in filter_cage(table)["fighters"]]
    assert ranked == [
        ("strong", 1),
        ("middling", 1),
        ("weak", 2),
        ("attacks-only", None),
        ("defends-only", None),
    ]


def test_a_table_of_unrated_fighters_ranks_none() -> None:
    table = {"fighters": [fighter("b", None), fighter("a", None)]}
    assert [(r["name"], r["rank"]) for r in filter_cage(table)["fighters"]] == [
        ("a", None),
        ("b", None),
    ]
