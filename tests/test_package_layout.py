"""The package's shape: a small root, a purpose for every package, no import circle.

The import graph counts every import, function-level ones included (they are
circles all the same, only deferred), and the implicit import of each parent
package; imports under ``if TYPE_CHECKING:`` are left out, as they never run."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "srperf"
MAX_ROOT_MODULES = 8


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The srperf modules a module imports, resolved to modules that exist."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    edges: set[str] = set()
    for target in found:
        if not target.startswith("srperf"):
            continue
        while target and target not in known:
            target = target.rpartition(".")[0]
        parts = target.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            edges.add(".".join(parts[:i]))
    edges.discard(name)
    return edges


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imported(ast.parse(path.read_text()), name,
                            path.name == "__init__.py", known)
            for name, path in modules.items()}


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return circles


def test_the_root_holds_a_handful_of_modules() -> None:
    loose = sorted(p.name for p in ROOT.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= MAX_ROOT_MODULES, loose


def test_every_package_says_what_it_is_for() -> None:
    silent = [str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("__init__.py")
              if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not silent, silent


def test_no_import_circle() -> None:
    circles = import_circles(import_graph())
    assert not circles, "\n".join(" <-> ".join(c) for c in circles)


def test_the_circle_finder_sees_a_function_level_circle() -> None:
    graph = {"srperf.a": {"srperf"}, "srperf.b": {"srperf", "srperf.a"}, "srperf": set()}
    assert import_circles(graph) == []
    graph["srperf.a"].add("srperf.b")
    assert import_circles(graph) == [["srperf.a", "srperf.b"]]


def test_imports_written_in_strings_name_modules_that_exist() -> None:
    """Code run by ``python -c`` (a child CLI, a worker) is a string the import
    graph cannot see; its ``from srperf.<module> import <name>`` must still resolve after a move."""
    import importlib
    import re

    pattern = re.compile(r"from (srperf(?:\.\w+)*) import (\w+)")
    stale: list[str] = []
    for folder in (ROOT, ROOT.parent / "tests", ROOT.parent / "drivers", ROOT.parent / "bench"):
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                    continue
                for module, name in pattern.findall(node.value):
                    try:
                        found = hasattr(importlib.import_module(module), name)
                    except ImportError:
                        found = False
                    if not found:
                        stale.append(f"{path.name}:{node.lineno}: from {module} import {name}")
    assert stale == []
