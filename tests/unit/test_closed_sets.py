"""Closed sets are spelled once: the arenas, and the statuses of a match still open."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import palaestra
from palaestra.protocol.constants import Arena
from palaestra.rules.cage.matchflow import OPEN_MATCH_STATUSES, MatchStatus


def test_the_arenas_are_the_two_protocols() -> None:
    assert [arena.value for arena in Arena] == ["edgearena", "cage"]


def test_only_the_protocol_defines_the_arenas() -> None:
    package = Path(palaestra.__file__).parent
    defining = [
        path.relative_to(package).as_posix()
        for path in sorted(package.rglob("*.py"))
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.ClassDef) and node.name == "Arena"
    ]
    assert defining == ["protocol/constants.py"]


def test_the_open_match_statuses() -> None:
    assert OPEN_MATCH_STATUSES == ("PENDING", "RUNNING")


@pytest.mark.parametrize("status", list(MatchStatus))
def test_a_match_is_open_until_it_is_finished(status: MatchStatus) -> None:
    assert (status.value in OPEN_MATCH_STATUSES) is not status.finished
