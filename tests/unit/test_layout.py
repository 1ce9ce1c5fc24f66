"""The codebase as a map: private names stay home, no import cycles, small modules and functions.

The layering between packages is import-linter's (``lint-imports``, in ``make lint``); these
tests check what its contracts do not: each failure names every offender, with its place.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import grimp

import palaestra

SOURCE = Path(palaestra.__file__).resolve().parent
ROOT = "palaestra"
MAX_MODULE_LINES = 400
MAX_ENGINE_FUNCTION_LINES = 60


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(module: str) -> bool:
    return (SOURCE.parent / module.replace(".", "/") / "__init__.py").is_file()


def sources() -> Iterator[tuple[Path, str, ast.Module]]:
    for path in sorted(SOURCE.rglob("*.py")):
        yield path, module_name(path), ast.parse(path.read_text(), filename=str(path))


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(SOURCE.parent.parent)}:{line}"


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def home(module: str) -> str:
    """The package a private name of ``module`` belongs to: only its modules may use the name.

    A module's private names belong to its package; a top-level module (``palaestra.clock``)
    keeps its own, as every module is inside ``palaestra``.
    """
    package = module if is_package(module) else module.rpartition(".")[0]
    return module if package == ROOT else package


def inside(importer: str, package: str) -> bool:
    return importer == package or importer.startswith(package + ".")


def absolute(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer if is_package(importer) else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def is_module(name: str) -> bool:
    return is_package(name) or (SOURCE.parent / f"{name.replace('.', '/')}.py").is_file()


def private_parts(importer: str, dotted: str) -> Iterator[tuple[str, str]]:
    """(the private part of ``dotted``, its home) for each one ``importer`` may not use."""
    parts = dotted.split(".")
    for index, part in enumerate(parts[1:], start=1):
        owner = home(".".join(parts[:index]))
        if is_private(part) and not inside(importer, owner):
            yield ".".join(parts[: index + 1]), owner


def private_uses(importer: str, tree: ast.Module) -> Iterator[tuple[int, str, str]]:
    """(line, what is used, its home) for each private name used from another package.

    Imports (``import palaestra.a._b``, ``from palaestra.a import _b``) and attributes of
    imported modules (``from palaestra.a import b`` then ``b._c``) are both uses.
    """
    modules: dict[str, str] = {}  # a local name -> the palaestra module bound to it
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == ROOT:
                    for name, owner in private_parts(importer, alias.name):
                        yield node.lineno, name, owner
                    if alias.asname:
                        modules[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = absolute(importer, node)
            if source.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                for name, owner in private_parts(importer, f"{source}.{alias.name}"):
                    yield node.lineno, name, owner
                if is_module(f"{source}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            for name, owner in private_parts(importer, f"{modules[node.value.id]}.{node.attr}"):
                yield node.lineno, name, owner


def test_private_names_stay_in_their_package() -> None:
    offences = [
        f"{where(path, line)}: {name} (private to {owner})"
        for path, importer, tree in sources()
        for line, name, owner in private_uses(importer, tree)
    ]
    assert not offences, "private names used outside their package:\n" + "\n".join(offences)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the groups of modules that import each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def test_strongly_connected_finds_every_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert strongly_connected(graph) == [["a", "b", "c"], ["d", "e"]]


def test_no_import_cycles_between_modules() -> None:
    graph = grimp.build_graph(ROOT, cache_dir=None)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    cycles = []
    for group in strongly_connected(imports):
        cycles.append(" <-> ".join(group) + ":")
        for importer in group:
            for imported in sorted(imports[importer] & set(group)):
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = ", ".join(f"l.{d['line_number']}" for d in details)
                cycles.append(f"    {importer} -> {imported} ({lines})")
    assert not cycles, "modules that import each other:\n" + "\n".join(cycles)


def ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycles_through_packages() -> None:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, an import the
    module graph does not show: with those added, no package may import itself half-made
    (``import palaestra.rules.ratings`` once failed so, by way of ``rules.cage``)."""
    graph = grimp.build_graph(ROOT, cache_dir=None)
    imports: dict[str, set[str]] = {}
    for module in graph.modules:
        direct = graph.find_modules_directly_imported_by(module)
        started = ancestors(module) | {module}  # already being imported when it runs
        imports[module] = direct | {
            package for imported in direct for package in ancestors(imported) - started
        }
    cycles = [" -> ".join(group) for group in strongly_connected(imports)]
    assert not cycles, "packages that import themselves half-made:\n" + "\n".join(cycles)


def test_modules_are_small() -> None:
    long = [
        f"{where(path, 1)}: {lines} lines"
        for path in sorted(SOURCE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(long)


def test_engine_functions_are_short() -> None:
    long = [
        f"{where(path, node.lineno)}: {node.name} is {length} lines"
        for path, _, tree in sources()
        if inside(module_name(path), f"{ROOT}.engine")
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if (length := (node.end_lineno or node.lineno) - node.lineno + 1)
        > MAX_ENGINE_FUNCTION_LINES
    ]
    assert not long, f"engine functions over {MAX_ENGINE_FUNCTION_LINES} lines:\n" + "\n".join(long)
