"""The shape of the house, read from the source with ``ast``: which module imports which.

Imports inside functions count (they run sooner or later); those under ``if TYPE_CHECKING:``
do not (they never run).  ``from package import name`` depends on the submodule ``name`` when
there is one, else on the package itself.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("compiler_core", "graphlab")


def _modules() -> dict[str, str]:
    """Dotted module name -> file, for every module of the two packages."""
    found = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    found[dotted.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_names(module: str, tree: ast.AST) -> set[str]:
    """Every dotted name the module imports at run time, wherever the import statement is."""
    package = module if MODULES[module].endswith("__init__.py") else module.rpartition(".")[0]
    names: set[str] = set()
    pending = list(ast.iter_child_nodes(tree))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + [node.module or ""])
            else:
                base = node.module
            base = base.strip(".")
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                         for a in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return names


def _owner(name: str) -> str | None:
    """The module of ours a dotted name lies in (None: outside both packages)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> modules of ours it imports, module -> every top-level package it imports)."""
    edges, outside = {}, {}
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as handle:
            names = _imported_names(module, ast.parse(handle.read(), path))
        edges[module] = {owner for owner in map(_owner, names) if owner not in (None, module)}
        outside[module] = {name.split(".")[0] for name in names}
    return edges, outside


EDGES, TOP_LEVEL = _graph()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(edges[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_the_import_graph_is_read():
    # the reader finds real arrows, function-level ones included, and skips TYPE_CHECKING
    assert "compiler_core.passes" in EDGES["compiler_core.compilation.compile"]
    assert "graphlab.app.cluster" in EDGES["graphlab.app.build_launchers"]   # in a function
    assert "graphlab.app.workbench" not in EDGES["graphlab.app.graph_analyses"]  # TYPE_CHECKING
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle():
    assert _cycles(EDGES) == []


@pytest.mark.parametrize("package", ["compiler_core.hardware"])
def test_the_hardware_models_run_no_pass(package):
    above = ("compiler_core.passes", "compiler_core.compilation")
    wrong = sorted((module, target) for module, targets in EDGES.items()
                   if module.startswith(package) for target in targets
                   if target.startswith(above))
    assert wrong == []


def test_compiler_core_imports_no_ui():
    wrong = sorted((module, top) for module, tops in TOP_LEVEL.items()
                   if module.startswith("compiler_core")
                   for top in tops & {"graphlab", "dash", "plotly", "flask"})
    assert wrong == []


def test_only_the_compile_entry_builds_a_pass_manager_outside_its_own_package():
    builds = re.compile(r"\bPassManager\(")
    found = []
    for folder in ("compiler_core", "graphlab", "benchmarks"):
        for where, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(where, name)
                if not name.endswith(".py") or os.sep + "passes" + os.sep in path:
                    continue
                with open(path, encoding="utf-8") as handle:
                    if builds.search(handle.read()):
                        found.append(os.path.relpath(path, ROOT))
    assert found == [os.path.join("compiler_core", "compilation", "compile.py")]
