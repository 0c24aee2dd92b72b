"""Shape questions with compile-time answers: Shape and Size of values whose dims are known.

Exporters compute reshape targets at run time — Shape(x), Gather one dim, Unsqueeze, Concat —
even where x's dims are fixed.  Once shape inference knows the dims a question asks about
(statically, or after specialize_dims bound the symbolic ones), its answer is a constant.  A
Gather or Slice of a Shape is answered when the dims it picks are known, even if others are not.
"""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value
from ..framework.base import PassResult
from .constants import constant_ints, produces_graph_output, replace_with_constants


def shape_dims(node: Node) -> tuple | None:
    """The dims a Shape node reports (ints, symbolic names or None), honouring start/end."""
    shape = node.inputs[0].shape
    if shape is None:
        return None
    return tuple(shape)[node.attr("start", 0):node.attr("end", len(shape))]


def _shape_source(node: Node, index: int) -> tuple | None:
    producer = node.inputs[index].producer if node.input(index) is not None else None
    if producer is None or producer.op_type != "Shape" or producer.domain:
        return None
    return shape_dims(producer)


def _picked_dims(node: Node) -> tuple | np.ndarray | None:
    """The dims a Shape/Size/Gather/Slice node picks out of a tensor's shape, if it does."""
    if node.op_type == "Shape":
        return shape_dims(node)
    if node.op_type == "Size":
        shape = node.inputs[0].shape
        return None if shape is None else (int(np.prod(shape)) if all(
            isinstance(d, int) for d in shape) else None,)
    dims = _shape_source(node, 0)
    if dims is None:
        return None
    if node.op_type == "Gather" and node.attr("axis", 0) in (0, -1):
        indices = node.inputs[1].constant_value()
        if indices is None or indices.dtype.kind not in "iu":
            return None
        try:
            return np.array(dims, dtype=object)[indices]
        except IndexError:
            return None
    if node.op_type == "Slice":
        params = [constant_ints(node.input(i)) for i in range(1, 5)]
        starts, ends, axes, steps = params
        if starts is None or ends is None or len(starts) != 1 or (
                node.input(3) is not None and axes not in ((0,), (-1,))) or (
                node.input(4) is not None and steps in (None, (0,))):
            return None
        return tuple(dims[starts[0]:ends[0]:steps[0] if steps else 1])
    return None


# The ops whose output can be a constant of known dims (``shape_answer``)
SHAPE_QUERIES = ("Shape", "Size", "Gather", "Slice")


def shape_answer(node: Node) -> np.ndarray | None:
    """The node's output as a constant, if it only reports dims that are all known."""
    if node.domain or node.op_type not in SHAPE_QUERIES:
        return None
    picked = _picked_dims(node)
    if picked is None:
        return None
    flat = np.asarray(picked, dtype=object).reshape(-1)
    if not all(isinstance(d, (int, np.integer)) for d in flat):
        return None
    if node.op_type == "Size":
        return np.array(int(flat[0]), dtype=np.int64)
    return np.asarray(picked, dtype=object).astype(np.int64)


def fold_shape_query(graph: Graph, node: Node, result: PassResult) -> bool:
    """Replace a Shape/Size (or Gather/Slice of a Shape) whose answer is known by it."""
    answer = shape_answer(node)
    if answer is None:
        return False
    if produces_graph_output(node):
        result.decline(node, "shape_is_known", (
            f"its output {node.outputs[0].name!r} is a graph output; a constant there "
            f"would change the model's interface"))
        return False
    replace_with_constants(graph, node, [answer])
    result.rewrites += 1
    return True


def fold_shape_queries(graph: Graph, result: PassResult) -> None:
    for node in graph.nodes:
        if graph.has_node(node):
            fold_shape_query(graph, node, result)


# Shape arithmetic exporters write to compute a Reshape target, followed this many nodes deep.
_SHAPE_TENSOR_DEPTH = 8


def shape_tensor_dims(value: Value | None, depth: int = _SHAPE_TENSOR_DEPTH) -> tuple | None:
    """The entries of a 1-D integer tensor computed from shapes, without running the model.

    Exporters build Reshape targets at run time — Concat(Unsqueeze(Gather(Shape(x), 0)), ...,
    Mul(head, 2)) — even where every entry is a dim of a known tensor.  Each entry comes back as
    an int, the symbolic name of a dim, or None when unknown; None overall when the value is
    not such a tensor.  Lets a rule compare a run-time target with a tensor's shape by name.
    """
    if value is None or depth <= 0:
        return None
    data = value.constant_value()
    if data is not None:
        if data.dtype.kind not in "iu" or data.ndim > 1:
            return None
        return tuple(int(d) for d in data.reshape(-1))
    node = value.producer
    if node is None or node.domain:
        return None
    if node.op_type in ("Shape", "Gather", "Slice") and _picked_dims(node) is not None:
        picked = np.asarray(_picked_dims(node), dtype=object).reshape(-1)
        return tuple(None if d is None else d for d in picked)
    parts = [shape_tensor_dims(v, depth - 1) for v in node.inputs[:1]]
    if node.op_type in ("Unsqueeze", "Squeeze", "Cast", "Identity") and parts[0] is not None:
        return parts[0]
    if node.op_type == "Concat" and node.attr("axis", 0) in (0, -1):
        entries = [shape_tensor_dims(v, depth - 1) for v in node.inputs]
        return None if any(e is None for e in entries) else tuple(d for e in entries for d in e)
    if node.op_type in _SCALAR_ARITHMETIC and len(node.inputs) == 2:
        left, right = parts[0], shape_tensor_dims(node.input(1), depth - 1)
        if left is None or right is None or len(left) != 1 or len(right) != 1:
            return None
        a, b = left[0], right[0]
        if isinstance(a, int) and isinstance(b, int):
            return (_SCALAR_ARITHMETIC[node.op_type](a, b),)
        return (None,)
    return None


_SCALAR_ARITHMETIC = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b,
                      "Mul": lambda a, b: a * b,
                      "Div": lambda a, b: a // b if b and a % b == 0 else None}


def known_dim(value: Value | None, axis: int, depth: int = _SHAPE_TENSOR_DEPTH) -> int | None:
    """Dim ``axis`` of ``value`` when it is a number that shape inference left unknown but the
    producers show: a Transpose moves it, a Slice on another axis keeps it, a Reshape's
    run-time target names it (or its -1 is what the input's dims leave once the dims both
    sides name alike cancel out).  TorchScript exports compute the head split's target at
    run time, so the number of heads is found this way."""
    if value is None or value.rank is None or not -value.rank <= axis < value.rank:
        return None
    axis %= value.rank
    dim = value.shape[axis]
    if isinstance(dim, int) or depth <= 0:
        return dim if isinstance(dim, int) else None
    node = value.producer
    if node is None or node.domain:
        return None
    source = node.inputs[0] if node.inputs else None
    if node.op_type == "Transpose" and node.attrs.get("perm") is not None:
        return known_dim(source, node.attrs["perm"][axis], depth - 1)
    if node.op_type == "Slice":
        axes = constant_ints(node.input(3)) if node.input(3) is not None else None
        if axes is not None and source is not None and all(
                a % source.rank != axis for a in axes):
            return known_dim(source, axis, depth - 1)
        return None
    if node.op_type == "Reshape":
        return _reshaped_dim(node, axis, depth)
    return None


def _reshaped_dim(node: Node, axis: int, depth: int) -> int | None:
    target = shape_tensor_dims(node.input(1))
    source = node.inputs[0]
    if target is None or len(target) != node.outputs[0].rank or source.shape is None:
        return None
    if not node.attrs.get("allowzero", 0):
        target = tuple(source.shape[i] if d == 0 and i < len(source.shape) else d
                       for i, d in enumerate(target))
    wanted = target[axis]
    if isinstance(wanted, int) and wanted > 0:
        return wanted
    if wanted != -1:
        return None
    remaining = list(source.shape)
    product = 1
    for i, d in enumerate(target):
        if i == axis:
            continue
        if isinstance(d, str) and d in remaining:
            remaining.remove(d)  # the same named dim on both sides cancels out
        elif isinstance(d, int) and d > 0:
            product *= d
        else:
            return None
    if not all(isinstance(d, int) for d in remaining):
        return None
    total = int(np.prod(remaining, dtype=np.int64))
    return total // product if product and total % product == 0 else None
