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


PACKAGE = Path(palaestra.__file__).parent

#: The agent SDK's classes share their names with the tables they are sent from and stored in.
SDK_AND_TABLE = {"Agent", "Task", "Turn"}
#: The edgearena wire models and the leaderboard's role filter state their values as pydantic
#: quotes them back in its messages ("role: Input should be 'SCOUT'"), which agents and API
#: clients read, and as the OpenAPI document lists them: those literals stay the wire's.
WIRE_LITERALS = {"api/routes_leaderboard.py": 3, "protocol/edgearena.py": 10}


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text()))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_a_class_name_has_one_home() -> None:
    homes: dict[str, list[str]] = {}
    for module, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                homes.setdefault(node.name, []).append(module)
    assert {name for name, where in homes.items() if len(where) > 1} <= SDK_AND_TABLE


def _is_enum(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        (base.id if isinstance(base, ast.Name) else getattr(base, "attr", ""))
        in ("Enum", "StrEnum")
        for base in node.bases
    )


def _closed_values(trees: list[tuple[str, ast.Module]]) -> set[str]:
    """Every status-like value of an enum: upper case letters, four or more."""
    return {
        statement.value.value
        for _, tree in trees
        for node in ast.walk(tree)
        if _is_enum(node)
        for statement in node.body  # type: ignore[attr-defined]
        if isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
        and statement.value.value.isupper()
        and len(statement.value.value) >= 4
        and statement.value.value.replace("_", "").isalpha()
    }


def _literals_outside_enums() -> dict[str, int]:
    trees = _modules()
    values = _closed_values(trees)
    found: dict[str, int] = {}
    for module, tree in trees:
        inside = {
            id(inner) for node in ast.walk(tree) if _is_enum(node) for inner in ast.walk(node)
        }
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        count = sum(
            isinstance(node, ast.Constant)
            and node.value in values
            and id(node) not in inside | docstrings
            for node in ast.walk(tree)
        )
        if count:
            found[module] = count
    return found


def test_statuses_are_spelled_by_their_enums() -> None:
    found = _literals_outside_enums()
    elsewhere = {m: n for m, n in found.items() if m not in WIRE_LITERALS}
    assert elsewhere == {}
    assert {m: n for m, n in found.items() if m in WIRE_LITERALS} == WIRE_LITERALS
