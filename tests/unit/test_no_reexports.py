"""A module exports what it defines: a name has one home, and importers name that home.

A package's ``__init__`` is exempt: its ``__all__`` is the package's public API.
"""

from __future__ import annotations

import ast
from pathlib import Path

import palaestra

PACKAGE = Path(palaestra.__file__).parent

#: Re-exports still to be moved, by module: names some importers still take from there.
PENDING: dict[str, set[str]] = {
    "rules/judge/verdict.py": {"Rule"},
    "rules/judge/views.py": {"skeleton"},
    "store/models.py": {"Base"},
}


def _reexported(tree: ast.Module) -> set[str]:
    exported: set[str] = set()
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            exported = {ast.literal_eval(element) for element in node.value.elts}  # type: ignore[attr-defined]
        elif isinstance(node, ast.ImportFrom):
            imported |= {alias.asname or alias.name for alias in node.names}
    return exported & imported


def test_modules_export_only_what_they_define() -> None:
    found = {
        path.relative_to(PACKAGE).as_posix(): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py"
        if (names := _reexported(ast.parse(path.read_text())))
    }
    unexpected = {
        module: names - PENDING.get(module, set())
        for module, names in found.items()
        if names - PENDING.get(module, set())
    }
    assert unexpected == {}
