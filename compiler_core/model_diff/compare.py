"""What differs between two matched nodes, and between two models' inputs and outputs.

A matched pair differs in its attributes (defaults filled in), the constants it reads
("weights", with the largest element-wise difference when the shapes agree), its input wiring
(a slot reads another matched node, another graph input, or a node the other model lacks),
its outputs (one side leaves an optional output out), their dtypes, or their shapes.  Shapes
compare concrete sizes: a symbolic dim matches any symbolic dim (exporters name them
differently), an unknown dim or rank matches anything, a concrete size against a symbolic one
differs (one model was specialized); a dim shape inference made up ('unk__7') is unknown.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import numpy as np

from ..ir import Graph, Node, Value
from ..ir.dtypes import dtype_name, dtype_text, is_dtype_attribute
from ..ir.lazy_tensors import LazyTensor, values_of
from ..ir.printer import format_attr
from ..ir.shape_inference import is_unnamed_dim
from ..patterns.schema_defaults import attribute_default
from .align import Aligner, align, source_key
from .fingerprints import Fingerprints, attribute_key, body_key
from .records import Change, DiffNode, ModelDiff, NodePair, op_name

SHOWN_VALUES = 8   # a constant this small is shown by value


def diff_models(a: Graph, b: Graph, a_label: str = "A", b_label: str = "B") -> ModelDiff:
    """Match the nodes of two models that share no ids and report what differs."""
    start = time.perf_counter()
    aligner = align(a, b)
    alignment = aligner.alignment
    b_nodes = {n.id: n for n in aligner.fb.nodes}
    pairs = []
    for na in aligner.fa.nodes:
        if na.id in alignment.a_to_b:
            nb = b_nodes[alignment.a_to_b[na.id]]
            pairs.append(NodePair(DiffNode.of(na, a), DiffNode.of(nb, b), alignment.how[na.id],
                                  tuple(pair_changes(aligner, na, nb))))
    only_a = [DiffNode.of(n, a) for n in aligner.fa.nodes if n.id not in alignment.a_to_b]
    only_b = [DiffNode.of(n, b) for n in aligner.fb.nodes if n.id not in alignment.b_to_a]
    return ModelDiff(a_label, b_label, pairs, only_a, only_b, interface_changes(a, b),
                     time.perf_counter() - start, a, b)


def pair_changes(aligner: Aligner, na: Node, nb: Node) -> list[Change]:
    return (_attribute_changes(aligner.fa, aligner.fb, na, nb) + _input_changes(aligner, na, nb)
            + _output_changes(na, nb))


# -- attributes --------------------------------------------------------------------------------

def _attribute_changes(fa: Fingerprints, fb: Fingerprints, na: Node, nb: Node) -> list[Change]:
    attrs_a, attrs_b = fa.attrs[na.id], fb.attrs[nb.id]
    changes = []
    for name in sorted(set(attrs_a) | set(attrs_b)):
        va, vb = (values_of(v) if isinstance(v, LazyTensor) else v
                  for v in (attrs_a.get(name), attrs_b.get(name)))
        if va is not None and vb is not None and attribute_key(va) == attribute_key(vb):
            continue
        text_a, text_b = _attribute_text(na, name, va), _attribute_text(nb, name, vb)
        if isinstance(va, np.ndarray) and isinstance(vb, np.ndarray):
            text_b += _largest_difference(va, vb)
        changes.append(Change("attributes", f"attribute {name}", text_a, text_b))
    if body_key(na) != body_key(nb):
        changes.append(Change("attributes", "fused body", _body_text(na), _body_text(nb)))
    return changes


def _body_text(node: Node) -> str:
    if node.body is None:
        return "none"
    ops = Counter(n.qualified_op for n in node.body.nodes).most_common()
    return f"{len(node.body)} nodes: " + ", ".join(f"{count} {op}" for op, count in ops)


def _attribute_text(node: Node, name: str, value: Any) -> str:
    if isinstance(value, np.ndarray):
        return _constant_text(value)
    shown = dtype_text if is_dtype_attribute(node.op_type, name) else format_attr
    if value is not None:
        return shown(value)
    default = attribute_default(node.op_type, node.domain, name)
    return "absent" if default is None else f"{shown(default)} (default)"


# -- inputs ------------------------------------------------------------------------------------

def _input_changes(aligner: Aligner, na: Node, nb: Node) -> list[Change]:
    alignment = aligner.alignment
    changes = []
    for i, j in aligner.paired_slots(na, nb):
        va, vb = na.input(i), nb.input(j)
        if source_key(aligner.fa, va, alignment.a_id) == source_key(aligner.fb, vb,
                                                                    alignment.b_to_a.get):
            continue
        data_a = va.constant_value() if va is not None else None
        data_b = vb.constant_value() if vb is not None else None
        if data_a is not None and data_b is not None:
            changes.append(Change("weights", f"input {i}", _constant_text(data_a),
                                  _constant_text(data_b) + _largest_difference(data_a, data_b)))
        else:
            changes.append(Change("inputs", f"input {i}",
                                  _source_text(va, alignment.a_to_b, "A", aligner.fa.graph),
                                  _source_text(vb, alignment.b_to_a, "B", aligner.fb.graph)))
    return changes


def _source_text(value: Value | None, matched: dict[int, int], side: str,
                 graph: Graph | None = None) -> str:
    """What a slot reads, for a reader: a constant, a node's output or a graph input."""
    if value is None:
        return "nothing"
    data = value.constant_value()
    if data is not None:
        return _constant_text(data)
    producer = value.producer
    if producer is None:
        return f"graph input {value.name!r}"
    output = f" output {value.output_index}" if len(producer.outputs) > 1 else ""
    alone = "" if producer.id in matched else f", only in {side}"
    return f"{op_name(producer, graph)} {producer.name!r}{output}{alone}"


def _constant_text(data: np.ndarray) -> str:
    kind = f"{data.dtype}{list(data.shape)}"
    if data.size <= SHOWN_VALUES:
        return f"{kind} {np.array2string(data.reshape(-1), separator=',')}"
    return kind


def _largest_difference(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape or a.dtype.kind not in "fiub" or b.dtype.kind not in "fiub":
        return ""
    delta = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return f", max |Δ| {float(delta.max()) if delta.size else 0.0:.3g}"


# -- outputs -----------------------------------------------------------------------------------

def _output_changes(na: Node, nb: Node) -> list[Change]:
    changes = []
    for index in range(max(len(na.outputs), len(nb.outputs))):
        oa = na.outputs[index] if index < len(na.outputs) else None
        ob = nb.outputs[index] if index < len(nb.outputs) else None
        where = f"output {index}"
        if oa is None or ob is None:
            if (oa is None) != (ob is None):
                changes.append(Change("outputs", where, "absent" if oa is None else "present",
                                      "absent" if ob is None else "present"))
            continue
        changes += value_changes(oa, ob, where)
    return changes


def value_changes(va: Value, vb: Value, where: str) -> list[Change]:
    """dtype and shape differences of two values (an output pair, or a graph input pair)."""
    changes = []
    if va.elem_type is not None and vb.elem_type is not None and va.elem_type != vb.elem_type:
        changes.append(Change("dtypes", where, dtype_name(va.elem_type),
                              dtype_name(vb.elem_type)))
    if not same_shape(va.shape, vb.shape):
        changes.append(Change("shapes", where, va.describe_type(), vb.describe_type()))
    return changes


def same_shape(a: tuple | None, b: tuple | None) -> bool:
    """Equal as far as both are known (see the module docstring)."""
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if is_unnamed_dim(x) or is_unnamed_dim(y):
            continue
        if isinstance(x, int) != isinstance(y, int) or (isinstance(x, int) and x != y):
            return False
    return True


# -- the models' interface ---------------------------------------------------------------------

def interface_changes(a: Graph, b: Graph) -> list[Change]:
    """Graph inputs and outputs by name: present on one side only, or of another type."""
    changes = []
    for kind, values_a, values_b in (
            ("inputs", _runtime_inputs(a), _runtime_inputs(b)),
            ("outputs", {v.name: v for v in a.outputs}, {v.name: v for v in b.outputs})):
        noun = "graph input" if kind == "inputs" else "graph output"
        for name in list(values_a) + [n for n in values_b if n not in values_a]:
            va, vb = values_a.get(name), values_b.get(name)
            where = f"{noun} {name!r}"
            if va is None or vb is None:
                changes.append(Change(kind, where, va.describe_type() if va else "absent",
                                      vb.describe_type() if vb else "absent"))
            else:
                changes += value_changes(va, vb, where)
    return changes


def _runtime_inputs(graph: Graph) -> dict[str, Value]:
    return {v.name: v for v in graph.inputs if not v.is_initializer}
