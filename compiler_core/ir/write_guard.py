"""Copy-on-write for snapshots: a callback run once, just before a graph is first changed.

The PassManager keeps one graph per pass.  Copying the whole structure before every pass costs
O(nodes) even for the many passes that find nothing to do; instead a pass works on the previous
pass's graph itself, guarded: the first change to it (a Graph or Node method that rewires, an
attribute set on one of its nodes or values) calls ``before_first_write``, which copies the
graph as it still is for the snapshots that share it, and the pass goes on changing the
original.  A pass that changes nothing copies nothing.

Attribute sets are caught by a ``__setattr__`` that is installed on Node and Value only while a
guard is armed, so nothing pays for it otherwise.  Containers changed in place (``node.attrs[k]
= v``) are not seen: passes change nodes through the Graph's methods (``set_node_attr``), and
the PassManager's check mode compares the structure before and after a pass that wrote nothing
(``structure_key``), so a pass that does is caught in the tests.

A guard also lists the nodes its pass changes (``changed_nodes``), armed or fired, so that the
pass's diff compares those alone instead of every node of the graph: the Graph's and the
Node's methods that rewire, re-attribute, rename or remove a node add its id to the innermost
open guard's list (a pass run inside a pass adds its list to the outer one's).  The list may
name more nodes than changed (a body being built, a node changed back), never fewer, as long
as passes change nodes through those methods; the check mode compares that diff with the one
of every node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from .graph import Graph
    from .node import Node
    from .value import Value

_armed: list["WriteGuard"] = []
# The ids of the nodes the running pass changes: the innermost open guard's list, None
# outside any guard (the Graph and Node add to it without a call).
changed_nodes: set[int] | None = None
# The classes whose attribute sets are caught: Node and Value, named by graph.py (which imports
# them and this module), so that this module, imported by node.py, imports neither.
_watched: tuple[type, ...] = ()


def watch_attribute_sets(node_class: type, value_class: type) -> None:
    """Catch attribute sets on these classes while a guard is armed."""
    global _watched
    _watched = (node_class, value_class)


class WriteGuard:
    """``with WriteGuard(graph, before_first_write): ...`` — see the module docstring."""

    def __init__(self, graph: "Graph", before_first_write: Callable[[], None]):
        self.graph = graph
        self.before_first_write = before_first_write
        self.fired = False
        self.changed_nodes: set[int] = set()
        self._enclosing: set[int] | None = None   # the outer guard's list

    def __enter__(self) -> "WriteGuard":
        global changed_nodes
        if not _armed:
            node_class, value_class = _watched
            node_class.__setattr__ = _node_setattr
            value_class.__setattr__ = _value_setattr
        _armed.append(self)
        self._enclosing, changed_nodes = changed_nodes, self.changed_nodes
        return self

    def __exit__(self, *exc) -> None:
        global changed_nodes
        self._disarm()
        changed_nodes = self._enclosing
        if changed_nodes is not None:
            changed_nodes |= self.changed_nodes

    def _disarm(self) -> None:
        if self in _armed:
            _armed.remove(self)
            if not _armed:
                for watched in _watched:
                    del watched.__setattr__

    def fire(self) -> None:
        """Run the callback once (disarmed first: the copy it makes sets attributes too)."""
        if not self.fired:
            self.fired = True
            self._disarm()
            self.before_first_write()


def touch_graph(graph: "Graph") -> None:
    """``graph`` is about to change."""
    for guard in list(_armed):
        if guard.graph is graph:
            guard.fire()


def note_renamed(value: "Value") -> None:
    """``value`` is about to take another name: its producer and readers name it."""
    if changed_nodes is not None:
        changed_nodes.update(node.id for node, _ in value.uses)
        if value.producer is not None:
            changed_nodes.add(value.producer.id)


def touch_node(node: "Node") -> None:
    """``node`` (a field) is about to change."""
    for guard in list(_armed):
        if guard.graph.has_node(node):
            guard.fire()


def touch_value(value: "Value") -> None:
    """``value`` (its uses or a field) is about to change."""
    for guard in list(_armed):
        if guard.graph.values.get(value.name) is value:
            guard.fire()


def touch_wiring(node: "Node", values: Iterable["Value | None"]) -> None:
    """``node`` is about to read other values: its fields and their uses change."""
    touch_node(node)
    for value in values:
        if value is not None:
            touch_value(value)


def _node_setattr(self: "Node", name: str, value) -> None:
    if _armed and hasattr(self, "id"):   # a node being built is in no graph yet
        touch_node(self)
        if changed_nodes is not None:
            changed_nodes.add(self.id)
    object.__setattr__(self, name, value)


def _value_setattr(self: "Value", name: str, value) -> None:
    if _armed and hasattr(self, "name"):
        touch_value(self)
        if name == "name":
            note_renamed(self)
    object.__setattr__(self, name, value)
