"""Name-scope groups: the collapsible hierarchy that keeps 1,000+-node graphs readable.

Exporters name nodes after the module that made them ('/bert/encoder/layer.0/attention/...').
Each scope becomes a group; a scope holding nothing but one sub-scope is merged with it, so
the tree has no empty levels.  A node without a scope joins the scope its sources share (a node
a pass made out of others belongs where they were), else the one its consumers share (the
exporter's loose Constants sit inside the group they feed instead of crowding the top level).
A collapsed group is drawn as one compact box (see nested_layout).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from compiler_core.ir import Graph

GROUP_PREFIX = "g:"


@dataclass
class Group:
    id: str                      # 'g:/bert/encoder/layer.0'
    label: str                   # 'encoder/layer.0' (relative to the parent group)
    parent: str | None
    children: list[str] = field(default_factory=list)
    node_ids: list[int] = field(default_factory=list)   # direct members
    size: int = 0                # all members, nested ones included


@dataclass(frozen=True)
class StructureCut:
    """Why groups were found from structure: the scopes that were cut ('' the top level) with
    the nodes of their own each held, and whether the model's nodes carry any scope at all."""

    crowded: tuple[tuple[str, int], ...]
    unscoped: bool          # no node of the model carries a name scope
    limit: int              # a scope with more nodes of its own than this is cut

    @classmethod
    def of(cls, graph: Graph, crowded: dict[str, int], limit: int) -> "StructureCut":
        return cls(tuple(sorted(crowded.items())), not any(n.scope for n in graph.nodes), limit)

    def reason(self) -> str:
        """'the model's nodes carry no name scopes', or which scopes held too many nodes."""
        if self.unscoped:
            return "the model's nodes carry no name scopes"
        parts = []
        for scope, count in self.crowded:
            where = (f"{count} nodes have no name scope" if not scope else
                     f"scope {scope} holds {count} nodes of its own")
            parts.append(where)
        shown = parts[:3] + ([f"{len(parts) - 3} more"] if len(parts) > 3 else [])
        return "; ".join(shown) + f" (more than {self.limit} in one group)"


def structure_note(cut: StructureCut | None) -> str:
    """The legend's line under the panes when groups were found from structure: why, and how
    to read their names."""
    why = f" ({cut.reason()})" if cut is not None else ""
    return (f"Groups found from the structure{why}: \"block k\" is one repeat of a layer the "
            "graph repeats, \"blocks 0–9\" a run of them; other groups are stretches of the "
            "order named by their main ops and positions (\"MatMul · Add 41–80\").")


class ScopeTree:
    """The groups of a set of nodes, and which group or node represents a node when collapsed.

    structured: some groups were found from the graph's structure (`structure_scopes`), not
    named by the exporter, so the page says what they are; ``cut`` says why.
    """

    cut: StructureCut | None = None   # (a tree pickled before it was recorded has none)

    def __init__(self, node_scopes: Iterable[tuple[int, str]], structured: bool = False,
                 cut: StructureCut | None = None):
        self.structured = structured
        self.cut = cut
        self.groups: dict[str, Group] = {}
        self.group_of: dict[int, str] = {}
        raw: dict[str, set[str]] = {"": set()}
        members: dict[str, list[int]] = {}
        for node_id, scope in node_scopes:
            path = normalise_scope(scope)
            members.setdefault(path, []).append(node_id)
            while path:
                parent = path.rsplit("/", 1)[0]
                raw.setdefault(parent, set()).add(path)
                raw.setdefault(path, set())
                path = parent
        self.roots: list[str] = []
        self.top_level_nodes: list[int] = members.get("", [])
        self._build("", None, "", raw, members)
        self._count_sizes()

    def _build(self, path: str, parent: str | None, label_prefix: str,
               raw: dict[str, set[str]], members: dict[str, list[int]]) -> None:
        for child in sorted(raw[path], key=_natural):
            label = label_prefix + child.rsplit("/", 1)[-1]
            if len(raw[child]) == 1 and not members.get(child):
                self._build(child, parent, label + "/", raw, members)  # merge a trivial level
                continue
            if not raw[child] and len(members.get(child, ())) == 1:
                self._adopt(parent, members[child])  # a one-node group is just noise
                continue
            group = Group(GROUP_PREFIX + child, label, parent, node_ids=members.get(child, []))
            self.groups[group.id] = group
            (self.groups[parent].children if parent else self.roots).append(group.id)
            for node_id in group.node_ids:
                self.group_of[node_id] = group.id
            self._build(child, group.id, "", raw, members)

    def _adopt(self, parent: str | None, node_ids: list[int]) -> None:
        if parent is None:
            self.top_level_nodes = self.top_level_nodes + node_ids
            return
        self.groups[parent].node_ids = self.groups[parent].node_ids + node_ids
        for node_id in node_ids:
            self.group_of[node_id] = parent

    def _count_sizes(self) -> None:
        for group_id in reversed(list(self.groups)):
            group = self.groups[group_id]
            group.size = len(group.node_ids) + sum(self.groups[c].size for c in group.children)

    def ancestors(self, group_id: str | None) -> list[str]:
        """Outermost first, ``group_id`` included."""
        chain: list[str] = []
        while group_id is not None:
            chain.append(group_id)
            group_id = self.groups[group_id].parent
        return chain[::-1]

    def representative(self, node_id: int, expanded: set[str] | frozenset[str],
                       ) -> tuple[str | None, str | None]:
        """(collapsed group standing for the node or None, innermost expanded group or None)."""
        parent = None
        for group_id in self.ancestors(self.group_of.get(node_id)):
            if group_id not in expanded:
                return group_id, parent
            parent = group_id
        return None, parent

    def groups_containing(self, node_ids: Iterable[int]) -> set[str]:
        found: set[str] = set()
        for node_id in node_ids:
            found.update(self.ancestors(self.group_of.get(node_id)))
        return found

    def visible_expanded(self, expanded: set[str] | frozenset[str]) -> frozenset[str]:
        """The expanded groups whose ancestors are all expanded: the ones that are drawn open."""
        return frozenset(g for g in expanded if g in self.groups
                         and all(a in expanded for a in self.ancestors(g)))


def pipeline_scopes(graphs: Iterable[Graph], given: dict[int, str] | None = None
                    ) -> dict[int, str]:
    """Every node's scope across the graphs: the ``given`` one (see structure_scopes), else
    its own, else unscoped nodes are placed by their sources or consumers (the first graph
    holding a node decides, so the answer never changes later)."""
    given = given or {}
    scopes: dict[int, str] = {}
    for graph in graphs:
        resolved: dict[int, str] = {}
        for node in reversed(graph.nodes):  # consumers before producers
            scope = scopes.get(node.id)
            if scope is None:
                scope = (given.get(node.id) or node.scope or _sources_scope(node, scopes)
                         or _consumers_scope(node, graph, resolved))
                scopes[node.id] = scope
            resolved[node.id] = scope
    return scopes


def _sources_scope(node, scopes: dict[int, str]) -> str:
    sources = node.provenance.sources if node.provenance is not None else ()
    return _shared([scopes[s] for s in sources if s in scopes])


def _consumers_scope(node, graph: Graph, resolved: dict[int, str]) -> str:
    outputs = {v.name for v in graph.outputs}
    consumers: list[str] = []
    for value in node.outputs:
        if value is None:
            continue
        if value.name in outputs:
            return ""
        consumers += [resolved.get(user.id, "") for user, _ in value.uses]
    return _shared(consumers)


def _shared(scopes: list[str]) -> str:
    """The longest scope that contains all of ``scopes`` ('' for none)."""
    if not scopes:
        return ""
    shared = normalise_scope(scopes[0]).split("/")
    for scope in scopes[1:]:
        parts = normalise_scope(scope).split("/")
        common = 0
        while common < min(len(shared), len(parts)) and shared[common] == parts[common]:
            common += 1
        shared = shared[:common]
    return "/".join(shared)


def normalise_scope(scope: str) -> str:
    parts = [p for p in scope.split("/") if p]
    return "/" + "/".join(parts) if parts else ""


def _natural(path: str) -> list:
    """'layer.2' before 'layer.10'."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]
