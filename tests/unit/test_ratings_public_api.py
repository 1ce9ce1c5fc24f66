"""The deliberately exported names of the ratings, leaderboard, matchmaking and export services."""

from __future__ import annotations

import importlib

import pytest

EXPORTS = {
    "palaestra.engine.ratings.live": {"BASELINE_PLAYED", "live_ratings", "rate_pending"},
    "palaestra.engine.ratings.live_table": {"cage_fighters", "fighter_classes", "live_table"},
    "palaestra.engine.ratings.leaderboard": {
        "RatingsWorker",
        "Snapshot",
        "latest",
        "recompute",
        "view",
    },
    "palaestra.rules.ratings.leaderboard_tables": {
        "ENTRANT_TYPES",
        "FighterFacts",
        "build_cage",
        "build_edgearena",
        "filter_agents",
        "filter_cage",
        "live_rows",
    },
    "palaestra.engine.cage.matchmaker": {
        "CreateMatch",
        "Matchmaker",
        "MatchmakingState",
        "is_paused",
        "matchmaking_state",
        "set_paused",
        "through_referee",
    },
    "palaestra.engine.export.dataset": {"ExportSummary", "export_dataset"},
    "palaestra.api.leaderboard_schemas": {
        "CageRow",
        "DifferenceRow",
        "GroupRow",
        "Interval",
        "LeaderboardOut",
        "LiveRow",
        "MatchmakingOut",
        "PublishedOut",
    },
    "palaestra.cli.ratings": {
        "export",
        "leaderboard",
        "matchmaking",
        "parse_since",
        "with_platform",
    },
}


@pytest.mark.parametrize(("module", "names"), sorted(EXPORTS.items()))
def test_all_is_pinned(module: str, names: set[str]) -> None:
    loaded = importlib.import_module(module)
    assert set(loaded.__all__) == names
    for name in names:
        assert hasattr(loaded, name), name


def test_parse_since() -> None:
    from palaestra.cli.ratings import parse_since

    assert parse_since("1767225600") == 1_767_225_600.0
    assert parse_since("2026-01-01") == 1_767_225_600.0
    assert parse_since("2026-01-01T02:00:00+02:00") == 1_767_225_600.0
    assert parse_since("2026-01-01T00:00:00Z") == 1_767_225_600.0
