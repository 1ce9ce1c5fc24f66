"""Each package of the rules exports what other packages take from it, and only that."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import palaestra

PACKAGE = Path(palaestra.__file__).parent
RULES = PACKAGE / "rules"
PACKAGES = sorted(path.parent.name for path in RULES.glob("*/__init__.py"))


@pytest.mark.parametrize("name", PACKAGES)
def test_a_rules_package_exports_only_what_other_packages_use(name: str) -> None:
    home = RULES / name
    used: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(home):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                f"palaestra.rules.{name}"
            ):
                used |= {alias.name for alias in node.names}
    loaded = importlib.import_module(f"palaestra.rules.{name}")
    assert loaded.__all__
    assert set(loaded.__all__) - used == set()
