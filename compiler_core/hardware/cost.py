"""Per-op cost on a hardware target: FLOPs, bytes moved, arithmetic intensity, roofline time.

Bytes are what crosses the op's boundary: every input it reads (weights included) and every
output it writes, each distinct value once. Two refinements keep the figures honest:
- ops that only reinterpret metadata (Reshape, Squeeze, Identity, ...) move nothing;
- ops that select elements (Gather, Slice, ...) read at most as much of their data input as
  they write — an embedding lookup reads `seq` rows, not the whole table.
A fused node does its body's arithmetic but moves only what crosses the *fused* boundary — the
intermediates stay on chip — which is exactly why fusion raises an op's intensity and moves it
right on the roofline.

A QDQ-quantized graph is priced the way a deployment compiler runs it (`quantized_io`): each
DequantizeLinear -> GEMM -> QuantizeLinear group is one int8 kernel moving int8 bytes.  In a
partitioned graph (AcceleratorPartition nodes) the other ops run on the target's host CPU, and
each partition also pays for moving its inputs and outputs over the host link.

Each op runs at the target's peak for its dtype; time is the roofline bound
max(flops / peak, bytes / bandwidth), and a graph's estimate is the sum over its ops (one
kernel after another, nothing overlapped). Symbolic dims are resolved with ``bindings`` (the
compile entry decides representative sizes for dims the user left unbound), and the graph is
read as given: callers hand a sized graph (``compilation.sized``: the dims shape inference
could not name, learnt by specializing a copy at those sizes).  A dim that still has no size
counts as 1, and the op lists it in ``assumed_dims``, so every view can mark the ops whose
figures are too small.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..ir import Graph, Node
from ..ir.dtypes import dtype_name
from ..records import record_field, to_json
from .contrib_flops import INT8_OPS as CONTRIB_INT8_OPS
from .control_flow import body_price, is_control_flow
from .op_flops import METADATA_ONLY, SELECTING, is_priced, op_flops
from .quantized_io import folded_into_kernel, is_int8_kernel, stored_value
from .roofline import TargetLike, attainable_ops_per_s, classify, estimate_seconds
from .targets import Target, get_target
from .tensor_sizes import SizeResolver

# Domains whose op names mean what op_flops thinks they mean (ONNX and onnxruntime's contrib
# ops); an op from any other domain is opaque unless it is a fused node with a body.
PRICED_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft",
                            "com.microsoft.nchwc"})
_INT8_OPS = frozenset({"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"})
_TARGET_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8")
PARTITION_OP = "AcceleratorPartition"  # made by the partition pass; the rest runs on the host


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
    assumed_dims: tuple[str, ...] = ()   # dims of its shapes nobody sized, each counted as 1
    unfused_bytes: int | None = None     # a fused node: what its body would move op by op

    json_derived = ("fusion_saving",)

    @property
    def fusion_saving(self) -> float | None:
        """The share of its body's traffic a fused node keeps on chip (None: not fused)."""
        if not self.unfused_bytes:
            return None
        return 1 - self.bytes / self.unfused_bytes


def _roofline_of(target: Target) -> dict:
    """The target as a roofline reads it: its headline peak, bandwidth and ridge point."""
    return {"name": target.name, "peak_ops_per_s": target.peak(),
            "bandwidth_bytes_per_s": target.bandwidth_bytes_per_s,
            "ridge_point": target.ridge_point()}


@dataclass
class GraphCost:
    target: Target = record_field(convert=_roofline_of)
    ops: list[OpCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    TOTALS = ("total_est_seconds", "total_flops", "total_bytes", "nodes", "unmodelled_ops",
              "ops_with_assumed_dims")
    json_derived = TOTALS

    @property
    def total_est_seconds(self) -> float:
        return sum(op.est_seconds for op in self.ops)

    @property
    def total_flops(self) -> int:
        return sum(op.flops for op in self.ops)

    @property
    def total_bytes(self) -> int:
        return sum(op.bytes for op in self.ops)

    @property
    def unmodelled_ops(self) -> list[str]:
        return sorted({op.op_type for op in self.ops if not op.modelled})

    def __repr__(self) -> str:
        bound = Counter(op.bound for op in self.ops)
        return (f"<GraphCost on {self.target.name}: {len(self.ops)} ops, {self.total_flops:.3g} "
                f"FLOP, {self.total_bytes:.3g} bytes, estimated {self.total_est_seconds:.3g} s; "
                f"{bound['compute']} compute-bound, {bound['memory']} memory-bound>")

    @property
    def ops_with_assumed_dims(self) -> int:
        return sum(1 for op in self.ops if op.assumed_dims)

    @property
    def nodes(self) -> int:
        """How many ops were priced."""
        return len(self.ops)

    def totals(self) -> dict:
        """The graph's totals alone (what a comparison shows of each side)."""
        return to_json(self, only=self.TOTALS)


@dataclass
class CostComparison:
    """Two graphs' roofline totals on one target: what a pipeline bought."""

    before: GraphCost = record_field(convert=GraphCost.totals)
    after: GraphCost = record_field(convert=GraphCost.totals)

    json_derived = ("speedup",)

    @property
    def speedup(self) -> float | None:
        """before / after estimated time (None when the after-graph takes no time)."""
        after = self.after.total_est_seconds
        return self.before.total_est_seconds / after if after > 0 else None

    def __repr__(self) -> str:
        speedup = "n/a" if self.speedup is None else f"{self.speedup:.3g}x"
        return (f"<CostComparison on {self.after.target.name}: estimated "
                f"{self.before.total_est_seconds:.3g} s -> {self.after.total_est_seconds:.3g} s "
                f"({speedup})>")


def node_flops(node: Node, sizes: SizeResolver,
               opsets: dict[str, int] | None = None) -> int | None:
    """FLOPs of a node (a fused node: the sum over its body; If/Loop/Scan: their bodies as
    they run, `control_flow`), None if it cannot be priced.  ``opsets``: the graph's, which
    control-flow bodies are read with."""
    if node.body is not None:
        parts = [node_flops(inner, sizes, opsets) for inner in node.body.nodes]
        return None if any(p is None for p in parts) else sum(parts)
    if is_control_flow(node):
        return _control_flow(node, sizes, opsets).flops
    if node.domain not in PRICED_DOMAINS:
        return None
    return op_flops(node.op_type, node.attrs, [sizes.shape(v) for v in node.inputs],
                    [sizes.shape(v) for v in node.outputs], _domain(node))


def _control_flow(node: Node, sizes: SizeResolver, opsets: dict[str, int] | None):
    return body_price(node, sizes, lambda inner, s: node_flops(inner, s, opsets), opsets)


def _domain(node: Node) -> str:
    return "" if node.domain == "ai.onnx" else node.domain


def node_bytes(node: Node, sizes: SizeResolver) -> int | None:
    """Bytes crossing the node's boundary (module docstring), None if a size is unknown."""
    if node.body is None and node.op_type in METADATA_ONLY:
        return 0
    selecting = node.body is None and node.op_type in SELECTING
    crossing = [(value, index) for index, value in enumerate(node.inputs)]
    crossing += [(value, None) for value in node.outputs]
    if is_int8_kernel(node):
        crossing = [(stored_value(v, node if i is not None else None) if v is not None else None,
                     i) for v, i in crossing]
    seen: set[str] = set()
    total = 0
    for value, input_index in crossing:
        if value is None or value.name in seen:
            continue
        seen.add(value.name)
        size = sizes.nbytes(value)
        if size is None:
            return None
        if selecting and input_index == 0:
            written = sizes.nbytes(node.outputs[0])
            size = size if written is None else min(size, written)
        total += size
    return total


def compute_dtype(node: Node) -> str:
    """The dtype whose peak rate the node runs at: its first input/output a target can list."""
    if node.op_type in _INT8_OPS and node.domain in ("", "ai.onnx") or \
            (node.domain, node.op_type) in CONTRIB_INT8_OPS or is_int8_kernel(node):
        return "int8"
    for value in list(node.inputs) + list(node.outputs):
        if value is not None and value.elem_type is not None:
            name = dtype_name(value.elem_type)
            if name in _TARGET_DTYPES:
                return "int8" if name == "uint8" else name
    return "float32"


def unfused_bytes(node: Node, sizes: SizeResolver) -> int | None:
    """Bytes a fused node's body would move run op by op (every intermediate written out and
    read back), None when a size is unknown."""
    moved = [node_bytes(inner, sizes) for inner in node.body.nodes]
    return None if any(b is None for b in moved) else sum(moved)


def _fusion_note(node: Node, unfused: int | None, moved: int | None) -> str:
    """How much traffic the fused node keeps on chip."""
    if moved is None or not unfused:
        return f"fused body of {len(node.body)} ops"
    return (f"fused body of {len(node.body)} ops; run one by one they would move "
            f"{unfused:,} bytes, fused {moved:,} ({1 - moved / unfused:.0%} less)")


def _link_bytes(node: Node, sizes: SizeResolver) -> int:
    """Run-time values a partition exchanges with the host (its weights live on the chip)."""
    values = {v.name: v for v in list(node.inputs) + list(node.outputs)
              if v is not None and not v.is_constant}
    return sum(sizes.nbytes(v) or 0 for v in values.values())


def _unpriced_reason(node: Node) -> str:
    if node.body is not None or is_control_flow(node):
        return "its body holds an op it cannot price"
    if node.domain not in PRICED_DOMAINS or not is_priced(node.op_type, _domain(node)):
        return "unknown op"
    return "unknown shapes or attributes"


def node_cost(node: Node, target: TargetLike = None,
              bindings: dict[str, int] | None = None) -> OpCost:
    """Cost of one node on a target (see the module docstring for the conventions)."""
    return _node_cost(node, get_target(target), SizeResolver(bindings))


def _node_cost(node: Node, target: Target, sizes: SizeResolver,
               on_host: bool = False, opsets: dict[str, int] | None = None) -> OpCost:
    sizes.assumed.clear()
    if folded_into_kernel(node):
        return OpCost(node.name, node.qualified_op, 0, 0, 0.0, "none", 0.0, 0.0, "int8", True,
                      "folded into the int8 kernel next to it")
    notes = []
    if is_control_flow(node):
        price = _control_flow(node, sizes, opsets)
        flops = price.flops
        notes.append(price.note)
    else:
        flops = node_flops(node, sizes, opsets)
    moved = node_bytes(node, sizes)
    dtype = compute_dtype(node)
    unfused = None
    if node.body is not None:
        unfused = unfused_bytes(node, sizes)
        notes.append(_fusion_note(node, unfused, moved))
    modelled = flops is not None and moved is not None
    if not modelled:
        notes.append(f"GraphLab cannot price {node.qualified_op} ({_unpriced_reason(node)})")
        flops, moved = flops or 0, moved or 0
    assumed = tuple(sorted(sizes.assumed))
    if assumed:
        notes.append(sizes.assumed_note())
    if flops == 0 and moved == 0:
        intensity, bound, attainable, seconds = 0.0, "none", 0.0, 0.0
    elif on_host:
        host = target.host
        intensity = flops / moved if moved else math.inf
        attainable = min(host.peak_ops_per_s, host.bandwidth_bytes_per_s * intensity)
        ridge = host.peak_ops_per_s / host.bandwidth_bytes_per_s
        bound = "compute" if intensity >= ridge else "memory"
        seconds = host.seconds(flops, moved)
        notes.insert(0, "runs on the host CPU (not in an accelerator partition)")
    else:
        intensity = flops / moved if moved else math.inf
        attainable = attainable_ops_per_s(intensity, target, dtype)
        bound = classify(intensity, target, dtype)
        seconds = estimate_seconds(flops, moved, target, dtype)
        if node.op_type == PARTITION_OP and target.host is not None:
            crossing = _link_bytes(node, sizes)
            seconds += crossing / target.host.link_bytes_per_s
            notes.append(f"plus {crossing:,} activation bytes over the host link (weights "
                         f"stay on the chip)")
    return OpCost(node.name, node.qualified_op, int(flops), int(moved), intensity, bound,
                  attainable, seconds, dtype, modelled, "; ".join(notes), assumed, unfused)


def graph_cost(graph: Graph, target: TargetLike = None,
               bindings: dict[str, int] | None = None) -> GraphCost:
    """Cost of every node, in execution order, and the whole-graph roofline estimate of a
    sized graph (module docstring)."""
    chosen = get_target(target)
    priced = graph
    sizes = SizeResolver(bindings)
    ops = []
    assumed: set[str] = set()
    partitioned = chosen.host is not None and any(
        n.op_type == PARTITION_OP for n in priced.nodes)
    for node in priced.nodes:
        on_host = partitioned and node.op_type != PARTITION_OP
        ops.append(_node_cost(node, chosen, sizes, on_host, priced.opset_imports))
        assumed |= sizes.assumed
    sizes.assumed = assumed
    return GraphCost(chosen, ops, [sizes.assumed_note()] if assumed else [])


def compare_costs(before: Graph, after: Graph, target: TargetLike = None,
                  bindings: dict[str, int] | None = None) -> CostComparison:
    """Both graphs priced on one target with the same bindings (e.g. a pipeline's first and
    last snapshot, each sized at the bindings): the estimated speed-up is before / after."""
    chosen = get_target(target)
    return CostComparison(graph_cost(before, chosen, bindings),
                          graph_cost(after, chosen, bindings))
