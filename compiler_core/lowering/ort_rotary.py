"""A fused RotaryEmbedding node as onnxruntime's com.microsoft RotaryEmbedding.

onnxruntime's op reads x as [B, N, S, H] (or [B, S, N·H] with num_heads), position ids
([B, S], or one offset added to 0..S−1) and cos/sin caches [positions, rotary_dim/2] holding
one angle per pair of features.  GraphLab's node multiplies x by cos/sin values broadcast to
it, with each angle repeated for both features of a pair (the two halves, or neighbours when
interleaved).  The lowering takes every other value (the first half, or the even features) as
the cache, one row per (batch, position): exact only when the dropped values are provably the
same angles, which is read from how cos and sin were computed (a Concat of a value with itself,
a repeat_interleave, or constant data that says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from ..ir import Graph, Node, Value
from ..passes.analyses.constants import constant_ints, ints_input_or_attr
from ..passes.recognition.rotary import HEADS_FIRST, rotary_layout
from ..passes.analyses.shape_facts import known_dim
from .ort_ops import add_before, replace_fused
from .rotary_cache import gathered_caches

_TRACE_DEPTH = 16  # ops between a cos/sin value and the data that shows its repeated angles
# Ops that never mix the last axis of their (first) input: the angles' pairing survives them.
_ELEMENTWISE = frozenset({"Cos", "Sin", "Cast", "Neg", "Identity"})
_SCALED = frozenset({"Mul", "Div", "Add", "Sub"})


@dataclass(frozen=True)
class _Layout:
    """Where x keeps its axes: the sequence axis, heads (static or None), rotary width."""

    heads_first: bool
    heads: int | None
    rotary_dim: int
    interleaved: bool

    @property
    def seq_axis(self) -> int:
        return 2 if self.heads_first else 1


def lower_rotary(graph: Graph, node: Node) -> Node | str:
    """RotaryEmbedding(x, cos, sin[, shape arithmetic]) -> com.microsoft RotaryEmbedding, or
    why not.  Extra inputs are run-time shape arithmetic the body read; the op needs none."""
    x, cos, sin = node.inputs[:3]
    layout = _layout(node)
    if isinstance(layout, str):
        return layout
    found = _folded_caches(graph, node, layout)
    if found is None:
        for table in (cos, sin):
            if not pairs_share_angles(table, layout.interleaved):
                return (f"{table.name!r} cannot be proven to repeat each angle for both "
                        f"features of a pair, as onnxruntime's half-width cache assumes")
    positions, caches = found or _positions_and_caches(graph, node, layout)
    attrs = {"interleaved": int(layout.interleaved)}
    if layout.rotary_dim != x.shape[-1] or not layout.heads_first:
        attrs.update(rotary_embedding_dim=layout.rotary_dim, num_heads=layout.heads)
    if layout.heads_first:
        return replace_fused(graph, node, "RotaryEmbedding", [x, positions, *caches], attrs)
    # [B, S, N, H] goes in as [B, S, N·H] and comes back to x's shape.
    flat = add_before(graph, node, "Reshape", [x, _constant(graph, node, "flat", (0, 0, -1))])
    result = node.outputs[0]
    rotated = graph.new_value(f"{result.name}/rotated", result.elem_type, None)
    made = graph.add_node("RotaryEmbedding", [flat, positions, *caches], [rotated], attrs=attrs,
                          domain="com.microsoft", name=node.name, provenance=node.provenance,
                          order=node.order - 0.25)
    replace_fused(graph, node, "Reshape", [rotated, add_before(graph, node, "Shape", [x])],
                  domain="")
    return made


def _layout(node: Node) -> _Layout | str:
    """The layout onnxruntime's op will be told, or why it cannot take this node."""
    x, cos, sin = node.inputs[:3]
    types = {x.elem_type, cos.elem_type, sin.elem_type}
    if len(types) != 1 or not types <= {TensorProto.FLOAT, TensorProto.FLOAT16}:
        return (f"onnxruntime's RotaryEmbedding takes x, cos and sin of one float type "
                f"(float32, or float16, whose kernel rounds once where the model rounds after "
                f"each product); here x {x.describe_type()}, cos {cos.describe_type()}")
    layout, heads = rotary_layout(x, cos)
    if layout is None or rotary_layout(x, sin)[0] != layout:
        return (f"onnxruntime's RotaryEmbedding takes [batch, heads, seq, head] or [batch, seq, "
                f"heads, head] with one angle per position for every head; here x "
                f"{x.describe_type()}, cos {cos.describe_type()}, sin {sin.describe_type()}")
    width, rotary_dim = x.shape[-1], int(node.attrs["rotary_dim"])
    if not isinstance(width, int) or any(known_dim(t, -1) != rotary_dim for t in (cos, sin)):
        return (f"cos and sin must hold {rotary_dim} angles per position (the rotated width) "
                f"and the head size must be known; here x {x.describe_type()}, cos "
                f"{cos.describe_type()}")
    full = rotary_dim == width and layout == HEADS_FIRST
    if heads is None and not full:
        return ("onnxruntime's op needs the number of heads for partial rotary or a "
                "[batch, seq, heads, head] input, and it is not static here")
    return _Layout(layout == HEADS_FIRST, heads, rotary_dim, bool(node.attrs["interleaved"]))


# ------------------------------------------------------------------------ the repeated angles
def pairs_share_angles(value: Value, interleaved: bool, depth: int = _TRACE_DEPTH) -> bool:
    """Whether both features of every pair along the last axis get the same value: the two
    halves (rotate_half) or neighbours (interleaved).  Followed back through ops that keep
    the last axis whole, to a Concat of a value with itself, a repeat-interleave (Expand or
    Tile of a unit axis, or a Concat of it with itself, flattened), or constant data."""
    data = value.constant_value()
    if data is not None:
        return _data_pairs_equal(data, interleaved)
    node = value.producer
    if node is None or depth <= 0 or node.domain:
        return False
    source = _last_axis_kept(node)
    if source is not None:
        return pairs_share_angles(source, interleaved, depth - 1)
    if not interleaved:
        return (node.op_type == "Concat" and _on_last_axis(node) and len(node.inputs) == 2
                and node.inputs[0] is node.inputs[1])
    return node.op_type == "Reshape" and _repeats_interleaved(node)


def _data_pairs_equal(data: np.ndarray, interleaved: bool) -> bool:
    if data.ndim == 0 or data.shape[-1] % 2:
        return False
    if interleaved:
        return bool(np.array_equal(data[..., 0::2], data[..., 1::2]))
    half = data.shape[-1] // 2
    return bool(np.array_equal(data[..., :half], data[..., half:]))


def _last_axis_kept(node: Node) -> Value | None:
    """The input whose last axis ``node`` carries over unchanged (each row of the output's last
    axis is one row of that input's), or None."""
    first = node.input(0)
    if first is None:
        return None
    if node.op_type in _ELEMENTWISE:
        return first
    if node.op_type in _SCALED and len(node.inputs) == 2:
        scalars = [v for v in node.inputs if v.is_constant
                   and v.constant_data().size == 1]
        others = [v for v in node.inputs if v not in scalars]
        return others[0] if len(scalars) == 1 and len(others) == 1 else None
    out = node.outputs[0]
    if out is None or out.rank is None or first.rank is None:
        return None
    if node.op_type == "Unsqueeze":
        axes = ints_input_or_attr(node, 1, "axes")
        return first if axes is not None and all(a % out.rank != out.rank - 1 for a in axes) \
            else None
    if node.op_type in ("Expand", "Reshape"):
        return first if _same_static_last(first, out) else None
    if node.op_type == "Gather":
        return first if node.attrs.get("axis", 0) % first.rank != first.rank - 1 else None
    if node.op_type == "GatherND":
        picked = node.inputs[1].shape[-1] if node.inputs[1].shape else None
        batch = node.attrs.get("batch_dims", 0)
        return first if isinstance(picked, int) and picked + batch < first.rank else None
    if node.op_type == "Transpose":
        perm = node.attrs.get("perm")
        return first if perm is not None and perm[-1] == first.rank - 1 else None
    if node.op_type == "Slice":
        axes = constant_ints(node.input(3)) if node.input(3) is not None else None
        return first if axes is not None and all(
            a % first.rank != first.rank - 1 for a in axes) else None
    return None


def _same_static_last(first: Value, out: Value) -> bool:
    """Same known last dim: a Reshape or Expand that keeps it moves whole rows."""
    width = known_dim(first, -1)
    return width is not None and width == known_dim(out, -1)


def _repeats_interleaved(flatten: Node) -> bool:
    """A Reshape of [..., k, 2] into [..., 2k] whose pairs are copies: an Expand or Tile of a
    unit last axis, or a Concat of one [..., k, 1] value with itself."""
    pairs = flatten.inputs[0]
    out = flatten.outputs[0]
    if pairs.rank is None or out.rank is None or pairs.rank != out.rank + 1 or (
            known_dim(pairs, -1) != 2):
        return False
    half, width = known_dim(pairs, -2), known_dim(out, -1)
    if half is None or width != 2 * half:
        return False
    node = pairs.producer
    if node is None:
        return False
    if node.op_type == "Concat":
        return _on_last_axis(node) and len(node.inputs) == 2 and node.inputs[0] is node.inputs[1]
    if node.op_type in ("Expand", "Tile"):
        column = node.inputs[0].shape
        return column is not None and column[-1] == 1
    return False


def _on_last_axis(node: Node) -> bool:
    rank = node.outputs[0].rank
    axis = node.attrs.get("axis")
    return axis == -1 or (rank is not None and axis == rank - 1)


# ------------------------------------------------------------------- caches and positions
def _folded_caches(graph: Graph, node: Node, layout: _Layout
                   ) -> tuple[Value, list[Value]] | None:
    """The model's position ids and constant caches, when cos and sin are computed from ids
    that index constant tables (``rotary_cache``) and repeat each angle for both features of
    a pair; shared by every layer that reads the same tables."""
    x, cos, sin = node.inputs[:3]
    found = gathered_caches(graph, x, cos, sin, layout.seq_axis)
    if found is None or not all(_data_pairs_equal(t, layout.interleaved)
                                for t in (found.cos, found.sin)):
        return None
    step = 2 if layout.interleaved else 1
    stop = layout.rotary_dim if layout.interleaved else layout.rotary_dim // 2
    caches = []
    for table, data in ((cos, found.cos), (sin, found.sin)):
        name = f"{table.name}/rotary_cache"
        known = graph.values.get(name)
        caches.append(known if known is not None and known.is_initializer else
                      graph.add_initializer(name, np.ascontiguousarray(data[:, 0:stop:step])))
    ids = found.position_ids
    if ids.elem_type != TensorProto.INT64:
        ids = add_before(graph, node, "Cast", [ids], {"to": TensorProto.INT64})
    return ids, caches


def _positions_and_caches(graph: Graph, node: Node, layout: _Layout,
                          ) -> tuple[Value, list[Value]]:
    """position_ids and the cos/sin caches.  When the tables are the same for the whole batch
    and provably as long as x's sequence, one row per position and position ids [0] (an
    offset); otherwise the tables broadcast to [B, S] rows and position ids 0..B·S−1.  Both
    are made once per table and size and shared by every layer's queries and keys."""
    x, cos, sin = node.inputs[:3]
    if _one_row_per_position(x, cos, layout) and _one_row_per_position(x, sin, layout):
        positions = _shared_constant(graph, "rotary_position_offset", (0,))
        return positions, [_cache(graph, node, table, layout, None) for table in (cos, sin)]
    sizes = _sizes_key(x, layout)
    rows = _shared(graph, node, f"rotary_rows{sizes}",
                   lambda name: _rows_shape(graph, node, layout, name))
    caches = [_cache(graph, node, table, layout, rows, sizes) for table in (cos, sin)]

    def positions(name: str) -> Value:
        count = add_before(graph, node, "Gather", [add_before(graph, node, "Shape", [caches[0]]),
                                                   _scalar(graph, node, "first", 0)], {"axis": 0})
        indices = add_before(graph, node, "Range", [_scalar(graph, node, "zero", 0), count,
                                                    _scalar(graph, node, "one", 1)])
        target = add_before(graph, node, "Concat", [_dims(graph, node, (0,)),
                                                    _constant(graph, node, "rest", (-1,))],
                            {"axis": 0})
        return _add(graph, node, "Reshape", [indices, target], name=name)
    return _shared(graph, node, f"rotary_position_ids{sizes}", positions), caches


def _sizes_key(x: Value, layout: _Layout) -> str:
    """A name suffix saying which batch and sequence sizes a helper was made for, so a helper
    is shared only where those sizes are provably the same (known dims, equal names); a
    unique suffix otherwise."""
    dims = (x.shape[0], x.shape[layout.seq_axis])
    if all(isinstance(d, (int, str)) for d in dims):
        return f"[{dims[0]},{dims[1]}]"
    return f"[{x.name}]"


def _shared(graph: Graph, node: Node, name: str, build) -> Value:
    """The output of the helper node called ``name``; ``build(name)`` makes it the first time
    (its last node under that name)."""
    known = graph.node_by_name(name)
    return known.outputs[0] if known is not None else build(name)


def _add(graph: Graph, node: Node, op_type: str, inputs: list, attrs: dict | None = None,
         name: str | None = None) -> Value:
    """A helper op before ``node`` (named ``name`` when given); returns its output."""
    if name is None:
        return add_before(graph, node, op_type, inputs, attrs)
    made = graph.add_node(op_type, inputs, 1, attrs=attrs, name=name, provenance=node.provenance,
                          order=node.order - 0.5)
    return made.outputs[0]


def _one_row_per_position(x: Value, table: Value, layout: _Layout) -> bool:
    shape = (1,) * (4 - len(table.shape)) + tuple(table.shape)
    seq = x.shape[layout.seq_axis]
    return shape[0] == 1 and shape[layout.seq_axis] == seq and seq is not None


def _rows_shape(graph: Graph, node: Node, layout: _Layout, name: str) -> Value:
    """x's batch and sequence sizes, as the target a table is broadcast to: [B, 1, S, 1] or
    [B, S, 1, 1]."""
    batch, seq = _dims(graph, node, (0,)), _dims(graph, node, (layout.seq_axis,))
    one = _constant(graph, node, "unit", (1,))
    parts = [batch, one, seq, one] if layout.heads_first else [batch, seq, one, one]
    return _add(graph, node, "Concat", parts, {"axis": 0}, name)


def _cache(graph: Graph, node: Node, table: Value, layout: _Layout,
           rows: Value | None, sizes: str = "") -> Value:
    """The angles of one feature per pair, [rows, rotary_dim/2]: the table's first half, or
    its even features; broadcast to ``rows`` first when given."""
    half = layout.rotary_dim // 2
    step = 2 if layout.interleaved else 1
    stop = layout.rotary_dim if layout.interleaved else half
    data = table.constant_value()
    if data is not None and rows is None:
        name = f"{table.name}/rotary_cache"
        known = graph.values.get(name)
        if known is not None and known.is_initializer:
            return known
        return graph.add_initializer(name, data[..., 0:stop:step].reshape(-1, half))

    def build(name: str) -> Value:
        source = table if rows is None else add_before(graph, node, "Expand", [table, rows])
        picked = add_before(graph, node, "Slice", [
            source, _constant(graph, node, "start", (0,)), _constant(graph, node, "stop", (stop,)),
            _constant(graph, node, "axis", (-1,)), _constant(graph, node, "step", (step,))])
        return _add(graph, node, "Reshape",
                    [picked, _constant(graph, node, "cache_shape", (-1, half))], name=name)
    return _shared(graph, node, f"{table.name}/rotary_cache{sizes}", build)


def _shared_constant(graph: Graph, name: str, values: tuple[int, ...]) -> Value:
    known = graph.values.get(name)
    if known is not None and known.is_initializer:
        return known
    return graph.add_initializer(name, np.array(values, dtype=np.int64))


def _dims(graph: Graph, node: Node, axes: tuple[int, ...]) -> Value:
    """x's sizes along ``axes`` at run time, as a 1-D tensor (Shape's start/end attributes
    need opset 15; a Gather of the whole shape works in every opset)."""
    shape = add_before(graph, node, "Shape", [node.inputs[0]])
    return add_before(graph, node, "Gather", [shape, _constant(graph, node, "axes", axes)],
                      {"axis": 0})


def _constant(graph: Graph, node: Node, hint: str, values: tuple[int, ...]) -> Value:
    return graph.add_initializer(f"{node.name}/{hint}", np.array(values, dtype=np.int64))


def _scalar(graph: Graph, node: Node, hint: str, value: int) -> Value:
    return graph.add_initializer(f"{node.name}/{hint}", np.array(value, dtype=np.int64))
