"""What a pass changed: node ids removed, added and modified between two graphs.

Ids are stable across passes, so the diff is a set difference; a node whose id survives but
whose op, attributes or wiring changed is "modified".  For each modified node the diff also
says what changed on it (`NodeChange`): which input now reads which value, which attribute
went from what to what, the outputs' dtype and shape before → after — so an orange mark
always has a visible cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import onnx

from ...ir import Graph, Node, Value
from ...ir.dtypes import dtype_text, is_dtype_attribute
from ...ir.printer import format_attr


@dataclass(frozen=True)
class NodeChange:
    """One thing a pass changed on a node it kept: its kind ("input", "attribute", "output",
    "op", "name", "body"), where on the node ("input 1 (B)", "attribute axes", "output 0
    type") and the text before and after."""

    kind: str
    where: str
    before: str
    after: str

    def text(self) -> str:
        return f"{self.where}: {self.before} → {self.after}"


@dataclass
class GraphDiff:
    removed: list[int] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    modified: list[int] = field(default_factory=list)
    # what changed on each modified node (empty for diffs made elsewhere, e.g. two models)
    changes: dict[int, list[NodeChange]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added or self.modified)

    def changes_of(self, node_id: int) -> list[NodeChange]:
        # a diff pickled before changes were recorded has none
        return getattr(self, "changes", {}).get(node_id, [])

    def __repr__(self) -> str:
        return (f"GraphDiff(removed {len(self.removed)}, added {len(self.added)}, modified "
                f"{len(self.modified)})")


def diff_graphs(before: Graph, after: Graph, candidates: set[int] | None = None) -> GraphDiff:
    """What changed from ``before`` to ``after``; ``candidates``, when given, names every node
    that may have changed (a pass's write guard lists them), and only those are compared."""
    before_ids = before.node_ids()
    after_ids = after.node_ids()
    shared = before_ids & after_ids if candidates is None else \
        candidates & before_ids & after_ids
    modified, changes = [], {}
    before_node, after_node = before.node_by_id, after.node_by_id
    for i in sorted(shared):
        a, b = before_node(i), after_node(i)
        if not same_node(a, b):
            modified.append(i)
            changes[i] = node_changes(a, b)
    return GraphDiff(sorted(before_ids - after_ids), sorted(after_ids - before_ids), modified,
                     changes)


def same_node(a: Node, b: Node) -> bool:
    """Op, name, the names it reads and writes, attributes and body all the same (a diff
    asks this of every node two graphs share: no lists built, attributes a copy shares
    compared by identity first)."""
    if (a.op_type != b.op_type or a.domain != b.domain or a.name != b.name
            or a.body is not b.body):
        return False
    if not (_same_names(a.inputs, b.inputs) and _same_names(a.outputs, b.outputs)):
        return False
    attrs_a, attrs_b = a.attrs, b.attrs
    if attrs_a.keys() != attrs_b.keys():
        return False
    for key, x in attrs_a.items():
        if not _same_attr(x, attrs_b[key]):
            return False
    return True


def _same_names(xs, ys) -> bool:
    """Two lists of values (None for an omitted one) name the same values in order."""
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if (x.name if x is not None else "") != (y.name if y is not None else ""):
            return False
    return True


def node_changes(a: Node, b: Node) -> list[NodeChange]:
    """What differs between a node before a pass (``a``) and after it (``b``)."""
    changes = []
    if (a.op_type, a.domain) != (b.op_type, b.domain):
        changes.append(NodeChange("op", "op", a.qualified_op, b.qualified_op))
    if a.name != b.name:
        changes.append(NodeChange("name", "name", a.name, b.name))
    slots = _input_names(b)
    for index in range(max(len(a.inputs), len(b.inputs))):
        va = a.inputs[index] if index < len(a.inputs) else None
        vb = b.inputs[index] if index < len(b.inputs) else None
        if _name(va) != _name(vb):
            where = f"input {index}" + (f" ({slots[index]})" if index < len(slots) else "")
            changes.append(NodeChange("input", where, _value_text(va), _value_text(vb)))
    for name in sorted(set(a.attrs) | set(b.attrs)):
        xa, xb = a.attrs.get(name), b.attrs.get(name)
        if xa is not None and xb is not None and _same_attr(xa, xb):
            continue
        changes.append(NodeChange("attribute", f"attribute {name}",
                                  _attr_text(a, name, xa), _attr_text(b, name, xb)))
    for index in range(max(len(a.outputs), len(b.outputs))):
        va = a.outputs[index] if index < len(a.outputs) else None
        vb = b.outputs[index] if index < len(b.outputs) else None
        if _name(va) != _name(vb):
            changes.append(NodeChange("output", f"output {index}", _value_text(va),
                                      _value_text(vb)))
        elif va is not None and vb is not None and va.describe_type() != vb.describe_type():
            changes.append(NodeChange("output", f"output {index} type", va.describe_type(),
                                      vb.describe_type()))
    if a.body is not b.body:
        changes.append(NodeChange("body", "fused body", _body_text(a), _body_text(b)))
    return changes


def _name(value: Value | None) -> str:
    return value.name if value is not None else ""


def _value_text(value: Value | None) -> str:
    if value is None:
        return "(none)"
    if value.producer is not None:
        return f"'{value.name}' (from {value.producer.op_type} '{value.producer.name}')"
    if value.is_initializer:
        return f"'{value.name}' (weight {value.describe_type()})"
    if value.is_graph_input:
        return f"'{value.name}' (graph input)"
    return f"'{value.name}'"


def _attr_text(node: Node, name: str, value) -> str:
    if value is None:
        return "absent"
    return dtype_text(value) if is_dtype_attribute(node.op_type, name) else format_attr(value)


def _body_text(node: Node) -> str:
    return "none" if node.body is None else f"{len(node.body)} nodes"


def _input_names(node: Node) -> list[str]:
    """The schema's names of the node's inputs ('X', 'B', ...), where onnx knows the op."""
    names, variadic = _schema_inputs(node.op_type, "" if node.domain == "ai.onnx"
                                     else node.domain)
    return list(names) + [names[-1]] * max(0, len(node.inputs) - len(names)) if variadic \
        else list(names)


@lru_cache(maxsize=None)
def _schema_inputs(op_type: str, domain: str) -> tuple[tuple[str, ...], bool]:
    try:
        schema = onnx.defs.get_schema(op_type, domain=domain)
    except onnx.defs.SchemaError:
        return (), False
    names = tuple(p.name for p in schema.inputs)
    variadic = bool(names) and (schema.inputs[-1].option
                                == onnx.defs.OpSchema.FormalParameterOption.Variadic)
    return names, variadic


def _same_attr(x, y) -> bool:
    if x is y:
        return True
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.shape == y.shape
                and x.dtype == y.dtype and bool(np.array_equal(x, y)))
    return bool(x == y)
