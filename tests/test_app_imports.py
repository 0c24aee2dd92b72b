"""The app's modules import one way: no module is, through its imports, its own importer, and
the view's state knows nothing of the panels that show it."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import graphlab.app

APP = Path(graphlab.app.__file__).parent
PACKAGE = "graphlab.app"


def module_name(path: Path) -> str:
    parts = path.relative_to(APP).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def exists(name: str) -> bool:
    relative = Path(*name.split(".")[2:])
    return (APP / relative).with_suffix(".py").exists() or (APP / relative / "__init__.py").exists()


def imports(path: Path, module_level_only: bool) -> set[str]:
    """The graphlab.app modules ``path`` imports (at module level, or anywhere in it)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in (tree.body if module_level_only else ast.walk(tree)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.startswith(PACKAGE):
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if exists(sub) else target)
    return found


def import_graph(module_level_only: bool) -> nx.DiGraph:
    graph = nx.DiGraph()
    for path in APP.rglob("*.py"):
        graph.add_node(module_name(path))
        graph.add_edges_from((module_name(path), t) for t in imports(path, module_level_only))
    return graph


def test_no_app_module_imports_itself_through_others():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph(True)) if len(c) > 1]
    assert not circles, circles


def test_the_panel_circle_is_gone_even_counting_imports_inside_functions():
    """Imports inside functions are left only where an optional backend (Redis, Celery) is
    chosen at run time; none passes through the panels."""
    circles = [c for c in nx.strongly_connected_components(import_graph(False)) if len(c) > 1]
    assert not [c for c in circles if any(".panels." in m for m in c) or len(c) > 3], circles


def test_the_view_state_imports_no_panel():
    graph = import_graph(False)
    reached = nx.descendants(graph, f"{PACKAGE}.view_state")
    assert not [m for m in reached if ".panels" in m], reached
