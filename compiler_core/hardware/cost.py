"""Per-op cost on a hardware target: FLOPs, bytes moved, arithmetic intensity, roofline time.

Bytes are what crosses the op's boundary: every input it reads (weights included) and every
output it writes.  A fused node does its body's arithmetic but moves only what crosses the
*fused* boundary — the intermediates stay on chip — which is exactly why fusion raises an op's
intensity and moves it right on the roofline.  Ops that only reinterpret metadata (Reshape,
Squeeze, Identity, ...) move nothing.

Symbolic dims are resolved with ``bindings``; a dim nobody bound counts as 1 and the op's
``note`` says so, because a roofline of an unbound dynamic model is only an illustration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import Graph, Node, Value
from ..ir.dtypes import dtype_name, element_bits
from .op_flops import METADATA_ONLY, op_flops
from .roofline import TargetLike
from .targets import Target, get_target

_INT8_OPS = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"}


@dataclass
class OpCost:
    node: str
    op_type: str
    flops: int
    bytes: int
    intensity: float
    bound: str              # "compute", "memory", or "none" (no work: metadata-only ops)
    attainable_ops_per_s: float
    est_seconds: float
    dtype: str
    modelled: bool = True   # False: the op's semantics or shapes are unknown (cost 0 assumed)
    note: str = ""

    def to_dict(self) -> dict:
        return {"node": self.node, "op_type": self.op_type, "flops": self.flops,
                "bytes": self.bytes, "intensity": _finite(self.intensity), "bound": self.bound,
                "attainable_ops_per_s": self.attainable_ops_per_s,
                "est_seconds": self.est_seconds, "dtype": self.dtype,
                "modelled": self.modelled, "note": self.note}


@dataclass
class GraphCost:
    target: Target
    ops: list[OpCost] = field(default_factory=list)

    @property
    def total_est_seconds(self) -> float:
        return sum(op.est_seconds for op in self.ops)

    @property
    def total_flops(self) -> int:
        return sum(op.flops for op in self.ops)

    @property
    def total_bytes(self) -> int:
        return sum(op.bytes for op in self.ops)

    def to_dict(self) -> dict:
        target = self.target
        return {
            "target": {"name": target.name, "peak_ops_per_s": target.peak(),
                       "bandwidth_bytes_per_s": target.bandwidth_bytes_per_s,
                       "ridge_point": target.ridge_point()},
            "ops": [op.to_dict() for op in self.ops],
            "total_est_seconds": self.total_est_seconds,
            "total_flops": self.total_flops,
            "total_bytes": self.total_bytes,
            "unmodelled_ops": sorted({op.op_type for op in self.ops if not op.modelled}),
        }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


class _Shapes:
    """Resolves value shapes to ints with the user's bindings, remembering what it assumed."""

    def __init__(self, bindings: dict[str, int] | None):
        self.bindings = dict(bindings or {})
        self.assumed: set[str] = set()

    def shape(self, value: Value | None) -> tuple[int, ...] | None:
        if value is None or value.shape is None or value.type_proto is not None:
            return None
        dims = []
        for dim in value.shape:
            if isinstance(dim, int):
                dims.append(dim)
            elif isinstance(dim, str) and dim in self.bindings:
                dims.append(self.bindings[dim])
            else:
                self.assumed.add(str(dim) if dim is not None else "?")
                dims.append(1)
        return tuple(dims)

    def nbytes(self, value: Value | None) -> int | None:
        shape = self.shape(value)
        if shape is None:
            return None
        return (math.prod(shape) * element_bits(value.elem_type) + 7) // 8


def _flops(node: Node, shapes: _Shapes) -> int | None:
    if node.body is not None:
        parts = [_flops(inner, shapes) for inner in node.body.nodes]
        return None if any(p is None for p in parts) else sum(parts)
    return op_flops(node.op_type, node.attrs, [shapes.shape(v) for v in node.inputs],
                    [shapes.shape(v) for v in node.outputs])


def _bytes(node: Node, shapes: _Shapes) -> int | None:
    if node.body is None and node.op_type in METADATA_ONLY:
        return 0
    seen: set[str] = set()
    total = 0
    for value in list(node.inputs) + list(node.outputs):
        if value is None or value.name in seen:
            continue
        seen.add(value.name)
        size = shapes.nbytes(value)
        if size is None:
            return None
        total += size
    return total


def _compute_dtype(node: Node) -> str:
    if node.op_type in _INT8_OPS:
        return "int8"
    for value in list(node.inputs) + list(node.outputs):
        if value is not None and value.elem_type is not None:
            name = dtype_name(value.elem_type)
            if name in ("float32", "float16", "bfloat16", "float64", "int8", "uint8"):
                return "int8" if name == "uint8" else name
    return "float32"


def node_cost(node: Node, target: TargetLike = None,
              bindings: dict[str, int] | None = None) -> OpCost:
    """Cost of one node on a target (see the module docstring for the conventions)."""
    chosen = get_target(target)
    shapes = _Shapes(bindings)
    return _node_cost(node, chosen, shapes)


def _node_cost(node: Node, target: Target, shapes: _Shapes) -> OpCost:
    shapes.assumed.clear()
    flops = _flops(node, shapes)
    moved = _bytes(node, shapes)
    dtype = _compute_dtype(node)
    notes = []
    modelled = flops is not None and moved is not None
    if not modelled:
        notes.append(f"GraphLab cannot price {node.qualified_op}"
                     + (" (unknown op)" if flops is None else " (unknown shapes)"))
        flops, moved = flops or 0, moved or 0
    if shapes.assumed:
        notes.append("unbound dims counted as 1: " + ", ".join(sorted(shapes.assumed)))
    peak = target.peak(dtype)
    bandwidth = target.bandwidth_bytes_per_s
    if flops == 0 and moved == 0:
        intensity, bound, attainable, seconds = 0.0, "none", 0.0, 0.0
    else:
        intensity = flops / moved if moved else math.inf
        attainable = min(peak, bandwidth * intensity)
        bound = "compute" if intensity >= target.ridge_point(dtype) else "memory"
        seconds = max(flops / peak, moved / bandwidth)
    return OpCost(node.name, node.qualified_op, int(flops), int(moved), intensity, bound,
                  attainable, seconds, dtype, modelled, "; ".join(notes))


def graph_cost(graph: Graph, target: TargetLike = None,
               bindings: dict[str, int] | None = None) -> GraphCost:
    """Cost of every node, in execution order, and the whole-graph roofline estimate."""
    chosen = get_target(target)
    shapes = _Shapes(bindings)
    return GraphCost(chosen, [_node_cost(node, chosen, shapes) for node in graph.nodes])
