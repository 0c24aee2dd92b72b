"""Tensor shapes through the ops that tie sizes together, and the equations they imply.

Each rule takes the walk and a node and returns the shapes of the node's outputs (None where it
cannot tell; the IR's inferred shape is used then).  Rules write an equation wherever the op
only runs if two sizes agree — the facts ``walk`` collects.
"""

from __future__ import annotations

from typing import Callable

from ..ir import Node
from ..ir.shape_inference import BROADCASTING, SAME_AS_FIRST_INPUT
from .algebra import Poly, product
from .walk import Walk

Shape = tuple[Poly, ...]
ONE = Poly.const(1)
BIG_INDEX = 1 << 62       # slice ends at or past this mean "to the end"


def broadcast(walk: Walk, node: Node, shapes: list[Shape | None], what: str) -> Shape | None:
    """Numpy broadcasting; two dims that are both not 1 must be equal."""
    if any(s is None for s in shapes):
        return None
    ranked = [s for s in shapes if s]   # a scalar broadcasts to anything: no dim to tie
    if ranked and all(_same_dims(s, ranked[0]) for s in ranked[1:]):
        return ranked[0]   # the usual element-wise op: nothing to tie, the shape passes on
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        sized = [d for d in dims if d != ONE]
        for other in sized[1:]:
            walk.equal(sized[0], other, node, what)
        result.append(sized[0] if sized else ONE)
    return tuple(result)


def _same_dims(shape: Shape, other: Shape) -> bool:
    """The same dims, object for object (shapes read from the IR share their dims)."""
    return len(shape) == len(other) and all(a is b for a, b in zip(shape, other))


def _elementwise(walk: Walk, node: Node) -> list[Shape | None]:
    shapes = [walk.shape(v) for v in node.inputs if v is not None]
    return [broadcast(walk, node, shapes, f"{node.op_type} broadcasts its inputs together")]


def _same_as_first(walk: Walk, node: Node) -> list[Shape | None]:
    return [walk.shape(node.inputs[0])]


def _matmul(walk: Walk, node: Node) -> list[Shape | None]:
    a, b = walk.shape(node.inputs[0]), walk.shape(node.input(1))
    if a is None or b is None or not a or not b:
        return [None]
    a2 = a if len(a) > 1 else (ONE,) + a
    b2 = b if len(b) > 1 else b + (ONE,)
    walk.equal(a2[-1], b2[-2], node, "MatMul multiplies the last dim of its first input "
                                     "with the second-to-last of its second")
    batch = broadcast(walk, node, [a2[:-2], b2[:-2]], "MatMul broadcasts its batch dims")
    return [batch + (a2[-2],) * (len(a) > 1) + (b2[-1],) * (len(b) > 1)]


def _gemm(walk: Walk, node: Node) -> list[Shape | None]:
    a, b = walk.shape(node.inputs[0]), walk.shape(node.input(1))
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return [None]
    m, k = a[::-1] if node.attr("transA", 0) else a
    k2, n = b[::-1] if node.attr("transB", 0) else b
    walk.equal(k, k2, node, "Gemm multiplies A's inner dim with B's")
    return [(m, n)]


def _reshape(walk: Walk, node: Node) -> list[Shape | None]:
    data, target = walk.shape(node.inputs[0]), walk.content(node.input(1))
    if data is None or target is None:
        return [None]
    dims = list(target.reshape(-1))
    _note_sizes(walk, dims)
    if not node.attr("allowzero", 0):
        dims = [data[i] if d == Poly.const(0) and i < len(data) else d
                for i, d in enumerate(dims)]
    count = product(data)
    if Poly.const(-1) in dims:
        rest = product(d for d in dims if d != Poly.const(-1))
        inferred = count.divided_by(rest)
        dims = [(inferred if inferred is not None else walk.fresh()) if d == Poly.const(-1)
                else d for d in dims]
    else:
        walk.equal(count, product(dims), node,
                   f"a Reshape to {_text(dims)} must keep the elements of its input "
                   f"{_text(data)}")
    return [tuple(dims)]


def _expand(walk: Walk, node: Node) -> list[Shape | None]:
    data, target = walk.shape(node.inputs[0]), walk.content(node.input(1))
    if target is None:
        return [None]
    _note_sizes(walk, target.reshape(-1))
    return [broadcast(walk, node, [data, tuple(target.reshape(-1))],
                      f"Expand to {_text(target.reshape(-1))} needs each dim of its input "
                      f"to be 1 or equal")]


def _transpose(walk: Walk, node: Node) -> list[Shape | None]:
    data = walk.shape(node.inputs[0])
    if data is None:
        return [None]
    perm = node.attr("perm") or tuple(reversed(range(len(data))))
    return [tuple(data[p] for p in perm)] if len(perm) == len(data) else [None]


def _unsqueeze(walk: Walk, node: Node) -> list[Shape | None]:
    data, axes = walk.shape(node.inputs[0]), axes_of(walk, node)
    if data is None or axes is None:
        return [None]
    rank = len(data) + len(axes)
    axes = sorted(a % rank for a in axes)
    dims = list(data)
    for axis in axes:
        dims.insert(axis, ONE)
    return [tuple(dims)]


def _squeeze(walk: Walk, node: Node) -> list[Shape | None]:
    data, axes = walk.shape(node.inputs[0]), axes_of(walk, node)
    if data is None:
        return [None]
    if axes is None:
        if node.input(1) is not None or "axes" in node.attrs:
            return [None]
        return [tuple(d for d in data if d != ONE)]
    drop = {a % len(data) for a in axes} if data else set()
    for axis in drop:
        walk.equal(data[axis], ONE, node, f"Squeeze removes axis {axis}, which must be 1")
    return [tuple(d for i, d in enumerate(data) if i not in drop)]


def _flatten(walk: Walk, node: Node) -> list[Shape | None]:
    data = walk.shape(node.inputs[0])
    if data is None:
        return [None]
    axis = node.attr("axis", 1) % (len(data) + 1) if data else 0
    return [(product(data[:axis]), product(data[axis:]))]


def _concat(walk: Walk, node: Node) -> list[Shape | None]:
    shapes = [walk.shape(v) for v in node.inputs if v is not None]
    if not shapes or any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1:
        return [None]
    axis = node.attr("axis", 0) % len(shapes[0]) if shapes[0] else 0
    for other in shapes[1:]:
        for i, (a, b) in enumerate(zip(shapes[0], other)):
            if i != axis:
                walk.equal(a, b, node, f"Concat joins tensors along axis {axis}; their other "
                                       f"dims must agree")
    total = sum((s[axis] for s in shapes), Poly())
    return [tuple(total if i == axis else d for i, d in enumerate(shapes[0]))]


def _split(walk: Walk, node: Node) -> list[Shape | None]:
    data = walk.shape(node.inputs[0])
    outputs = len(node.outputs)
    if data is None or not data:
        return [None] * outputs
    axis = node.attr("axis", 0) % len(data)
    sizes = walk.ints(node.input(1)) if node.input(1) is not None else node.attr("split")
    if sizes is not None:
        walk.equal(data[axis], Poly.const(sum(sizes)), node,
                   f"Split cuts axis {axis} into pieces of {list(sizes)}")
        pieces = [Poly.const(s) for s in sizes]
    else:
        piece = data[axis].divided_by(Poly.const(outputs))
        pieces = [piece if piece is not None else walk.fresh() for _ in range(outputs)]
    return [tuple(p if i == axis else d for i, d in enumerate(data)) for p in pieces]


def _slice(walk: Walk, node: Node) -> list[Shape | None]:
    data = walk.shape(node.inputs[0])
    if data is None:
        return [None]
    starts, ends = walk.content(node.input(1)), walk.content(node.input(2))
    axes = walk.ints(node.input(3)) if node.input(3) is not None else None
    steps = walk.ints(node.input(4)) if node.input(4) is not None else None
    if starts is None or ends is None or (node.input(3) is not None and axes is None) or (
            node.input(4) is not None and steps is None):
        return [None]
    starts, ends = list(starts.reshape(-1)), list(ends.reshape(-1))
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    dims = list(data)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if not -len(data) <= axis < len(data):
            return [None]
        axis %= len(data)
        dims[axis] = _sliced(walk, node, data[axis], start, end, step)
    return [tuple(dims)]


def _sliced(walk: Walk, node: Node, dim: Poly, start: Poly, end: Poly, step: int) -> Poly:
    """The size of dim[start:end]: end - start when the slice takes all it asks for — a
    symbolic end must then fit in the dim (a bound) — and unknown when a number may be
    clamped by a symbolic dim."""
    if step != 1:
        return walk.fresh()
    start, end = _index(dim, start), _index(dim, end)
    if dim.value is not None and start.value is not None and end.value is not None:
        return Poly.const(max(0, min(end.value, dim.value) - max(0, start.value)))
    if end.value is not None and end.value > 1 and dim.value is None:
        return walk.fresh()          # min(end, dim): which one, only the sizes tell
    walk.bound(end, dim, node, f"a Slice up to {end} of a dim of {dim} needs {end} <= {dim}")
    return end - start


def _index(dim: Poly, index: Poly) -> Poly:
    """A slice bound as a position: a negative number counts from the end of ``dim``."""
    number = index.as_int()
    if number is None:
        return index
    if number >= BIG_INDEX:
        return dim
    return dim + number if number < 0 else Poly.const(number)


def _gather(walk: Walk, node: Node) -> list[Shape | None]:
    data, indices = walk.shape(node.inputs[0]), walk.shape(node.input(1))
    if data is None or indices is None or not data:
        return [None]
    axis = node.attr("axis", 0) % len(data)
    return [data[:axis] + indices + data[axis + 1:]]


def _reduce(walk: Walk, node: Node) -> list[Shape | None]:
    data = walk.shape(node.inputs[0])
    axes = axes_of(walk, node)
    if data is None:
        return [None]
    if axes is None:
        if node.input(1) is not None:
            return [None]
        axes = [] if node.attr("noop_with_empty_axes", 0) else list(range(len(data)))
    drop = {a % len(data) for a in axes} if data else set()
    keep = node.attr("keepdims", 1)
    return [tuple(ONE if i in drop else d for i, d in enumerate(data) if keep or i not in drop)]


def _layer_norm(walk: Walk, node: Node) -> list[Shape | None]:
    data, scale = walk.shape(node.inputs[0]), walk.shape(node.input(1))
    if data is not None and scale is not None and data:
        axis = node.attr("axis", -1) % len(data)
        broadcast(walk, node, [data[axis:], scale],
                  f"{node.op_type} scales the normalized dims by a weight of that shape")
    return [data] + [None] * (len(node.outputs) - 1)


def _constant_of_shape(walk: Walk, node: Node) -> list[Shape | None]:
    target = walk.content(node.inputs[0])
    return [None if target is None else tuple(target.reshape(-1))]


def _range(walk: Walk, node: Node) -> list[Shape | None]:
    start, limit, delta = (walk.content(node.input(i)) for i in range(3))
    if start is None or limit is None or delta is None or delta.reshape(-1)[0] != ONE:
        return [None]
    return [(limit.reshape(-1)[0] - start.reshape(-1)[0],)]


def _shape(walk: Walk, node: Node) -> list[Shape | None]:
    data = walk.shape(node.inputs[0])
    if data is None:
        return [None]
    start, end = node.attr("start", 0), node.attr("end", len(data))
    return [(Poly.const(len(data[start:end])),)]


def _note_sizes(walk: Walk, dims) -> None:
    """Numbers a target holds are sizes the model may be fixed at: candidates to try."""
    walk.facts.target_sizes.update(n for n in (d.as_int() for d in dims)
                                   if n is not None and n > 1)


def axes_of(walk: Walk, node: Node) -> list[int] | None:
    """Axes from the attribute (older opsets) or the second input (newer ones)."""
    if "axes" in node.attrs:
        return list(node.attrs["axes"])
    return walk.ints(node.input(1)) if node.input(1) is not None else None


def _text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


RULES: dict[str, Callable[[Walk, Node], list[Shape | None]]] = {
    **{op: _elementwise for op in BROADCASTING},
    **{op: _same_as_first for op in SAME_AS_FIRST_INPUT
       if op not in ("LayerNormalization", "SkipLayerNormalization",
                     "SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization")},
    "Cast": _same_as_first, "CastLike": _same_as_first, "Not": _same_as_first,
    "Trilu": _same_as_first, "CumSum": _same_as_first, "IsNaN": _same_as_first,
    "IsInf": _same_as_first,
    "MatMul": _matmul, "Gemm": _gemm, "Reshape": _reshape, "Expand": _expand,
    "Transpose": _transpose, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze,
    "Flatten": _flatten, "Concat": _concat, "Split": _split, "Slice": _slice,
    "Gather": _gather, "ConstantOfShape": _constant_of_shape, "Range": _range,
    "Shape": _shape, "Size": lambda walk, node: [()],
    "LayerNormalization": _layer_norm, "RMSNormalization": _layer_norm,
    **{op: _reduce for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                              "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
                              "ReduceSumSquare", "ReduceLogSum")},
}
