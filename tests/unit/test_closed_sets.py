"""Closed sets are spelled once: the arenas, and the statuses of a match still open."""

from __future__ import annotations

import pytest

from palaestra.checks import conformance
from palaestra.engine.ratings import leaderboard
from palaestra.protocol.constants import Arena
from palaestra.rules.matchflow import OPEN_MATCH_STATUSES, MatchStatus


def test_the_arenas_are_the_two_protocols() -> None:
    assert [arena.value for arena in Arena] == ["edgearena", "cage"]


def test_the_leaderboard_and_the_conformance_runner_name_the_same_arenas() -> None:
    assert leaderboard.Arena is Arena
    assert conformance.Arena is Arena


def test_the_open_match_statuses() -> None:
    assert OPEN_MATCH_STATUSES == ("PENDING", "RUNNING")


@pytest.mark.parametrize("status", list(MatchStatus))
def test_a_match_is_open_until_it_is_finished(status: MatchStatus) -> None:
    assert (status.value in OPEN_MATCH_STATUSES) is not status.finished
