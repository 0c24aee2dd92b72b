"""Prediction beside measurement: the roofline's time per op joined to onnxruntime's profile.

The prediction of a group of nodes (one of ours, or several onnxruntime fused) is the sum of
terms over its nodes, on the target (normally this machine, measured):

    compute  = FLOPs / rate(kind, dtype) traffic = bytes / bandwidth
    overhead = the target's measured cost of an op beyond its work, once per kernel
               onnxruntime runs for the group
    casts    = bytes of the casts onnxruntime inserted / the target's measured Cast rate
    predicted = max(compute, traffic) + casts + overhead

rate(kind, dtype) is the dtype's peak, except for the kinds of op a measured target gives a
rate of their own (`hardware.rate_kinds`: convolutions, strided ones apart), which
run at it.

onnxruntime's CPU has no float16 kernel for MatMul and several other ops: it inserts casts
(``InsertedPrecisionFreeCast_<value>``) that convert the value to float32 and back on every
run (at ORT_DISABLE_ALL the float16 weights too), each its own kernel; a cast moves its value
once in float16 and once in float32, at the rate the target measured for a Cast.

Nodes onnxruntime fused itself run as one kernel: their traffic is what crosses the group's
boundary, not the sum of each node's.  A fused node onnxruntime has no operator for is
written inline (its function's body, kernel names ``_inlfunc_…``) and runs op by op: its
intermediates go through memory, so it is priced as its body run one op after another
(`OpCost.unfused_bytes`), not as the fused kernel the roofline assumes.

Where measured and predicted differ by more than 2x, the term that dominates the prediction is
named as the one the machine does not deliver as modelled, with the rate it did reach (a
compute-bound op that ran at 12 GFLOP/s of a 77 GFLOP/s peak).  Spearman's rank correlation
of predicted and measured per-op times says whether the model orders the ops as the machine
does, whatever the scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..hardware.cost import graph_cost
from ..hardware.rate_kinds import rate_kind
from ..compilation import sized
from ..hardware.targets import Target, get_target
from ..hardware.tensor_sizes import SizeResolver
from ..ir import Graph, Node
from ..records import name_of, record_field
from .node_map import value_name
from .runner import LevelProfile, ProfiledOp

MISS_FACTOR = 2.0   # a prediction off by more than this says which term dominates
INLINE_PREFIX = "_inlfunc_"           # onnxruntime's name for a function's body written inline


@dataclass
class ComparedOp:
    """One profiled group with its prediction and the terms the prediction is made of."""

    profiled: ProfiledOp = record_field(omit=True)   # its keys are written beside ours
    compute_ms: float
    traffic_ms: float
    overhead_ms: float
    roofline_ms: float
    flops: int
    bytes: int
    cast_ms: float = 0.0   # the casts onnxruntime inserted for the group
    cast_bytes: int = 0

    json_derived = (("node", "profiled.node"), ("ids", "profiled.ids"),
                    ("op_type", "profiled.op_type"), "measured_ms",
                    ("measured_min_ms", "profiled.best_ms"),
                    ("measured_max_ms", "profiled.worst_ms"),
                    ("measured_bytes", "profiled.bytes"), ("kernels", "profiled.kernels"),
                    ("traced_by", "profiled.how"),
                    ("fused_by_onnxruntime", "profiled.fused_by_onnxruntime"),
                    ("note", "profiled.note"), "predicted_ms", "ratio", "dominant", "miss")
    json_order = (*ProfiledOp.json_order, "predicted_ms", "ratio", "compute_ms", "traffic_ms",
                  "cast_ms", "overhead_ms", "roofline_ms", "flops", "bytes", "cast_bytes",
                  "dominant", "miss")

    @property
    def predicted_ms(self) -> float:
        return self.roofline_ms + self.cast_ms + self.overhead_ms

    @property
    def measured_ms(self) -> float:
        return self.profiled.measured_ms

    @property
    def ratio(self) -> float | None:
        """measured / predicted (None when nothing was predicted)."""
        return self.measured_ms / self.predicted_ms if self.predicted_ms > 0 else None

    @property
    def dominant(self) -> str:
        """The largest term of the prediction: compute, traffic, casts or overhead."""
        terms = {"compute": self.compute_ms, "traffic": self.traffic_ms,
                 "casts": self.cast_ms, "overhead": self.overhead_ms}
        return max(terms, key=terms.get)

    def miss(self) -> str | None:
        """Why the prediction is off by more than MISS_FACTOR, or None when it is not."""
        ratio = self.ratio
        if ratio is None or 1 / MISS_FACTOR <= ratio <= MISS_FACTOR:
            return None
        seconds = self.measured_ms / 1000
        slower = "slower" if ratio > 1 else "faster"
        if self.dominant == "compute":
            reached = f"it reached {self.flops / seconds / 1e9:.3g} GFLOP/s"
        elif self.dominant == "traffic":
            reached = f"it moved {self.bytes / seconds / 1e9:.3g} GB/s"
        elif self.dominant == "casts":
            reached = f"onnxruntime's casts moved {self.cast_bytes / 1e6:.3g} MB"
        else:
            reached = f"{len(self.profiled.ids)} node(s), {len(self.profiled.kernels)} kernel(s)"
        return f"{ratio:.2g}x {slower} than predicted; {self.dominant} dominates ({reached})"


@dataclass
class Comparison:
    """A graph's profile at one level beside its prediction on one target."""

    target: Target = record_field(convert=name_of)
    profile: LevelProfile = record_field(omit=True)
    ops: list[ComparedOp] = field(default_factory=list)
    predicted_total_ms: float = 0.0
    # our nodes no kernel works for
    not_run: list[str] = record_field(key="not_run_by_onnxruntime", default_factory=list)

    json_derived = (("level", "profile.level_name"), ("total_ms", "profile.total_ms"),
                    "best_ms", "total_ratio", "spearman", "spearman_best", "misses")
    json_order = ("target", "level", "total_ms", "best_ms", "predicted_total_ms", "total_ratio",
                  "spearman", "spearman_best", "misses", "ops", "not_run_by_onnxruntime")

    @property
    def spearman(self) -> float | None:
        """Rank correlation of predicted and measured per-op times (None: fewer than 3 ops)."""
        return spearman([op.predicted_ms for op in self.ops],
                        [op.measured_ms for op in self.ops])

    @property
    def spearman_best(self) -> float | None:
        """The same with each op's fastest run: on a busy machine a median can hold a wait
        for a CPU that has nothing to do with the op."""
        return spearman([op.predicted_ms for op in self.ops],
                        [op.profiled.best_ms for op in self.ops])

    @property
    def best_ms(self) -> float:
        """The fastest timed run: the one a busy machine delayed least."""
        return self.profile.best_ms

    @property
    def total_ratio(self) -> float | None:
        """best run / predicted total (the median is given beside it)."""
        return self.best_ms / self.predicted_total_ms if self.predicted_total_ms > 0 else None

    @property
    def misses(self) -> int:
        """Ops whose prediction is off by more than MISS_FACTOR."""
        return sum(1 for op in self.ops if op.miss())


def compare(graph: Graph, profile: LevelProfile, target: Target | str | None = None,
            bindings: dict[str, int] | None = None) -> Comparison:
    """Each profiled group of ``graph``'s nodes beside its prediction on ``target``."""
    chosen = get_target(target)
    priced = sized(graph, bindings)
    costs = {node.id: cost for node, cost in
             zip(priced.nodes, graph_cost(priced, chosen, bindings).ops)}
    overhead_ms = chosen.overhead_seconds_per_op * 1000
    by_id = {node.id: node for node in graph.nodes}
    ops = []
    priced_by_id = {node.id: node for node in priced.nodes}
    sizes = SizeResolver(bindings)
    values = {v.name: v for n in priced.nodes for v in (*n.inputs, *n.outputs) if v is not None}
    for profiled in profile.ops:
        inline = any(k.startswith(INLINE_PREFIX) for k in profiled.kernels)
        terms = {i: _terms(costs[i], by_id[i], chosen, inline)
                 for i in profiled.ids if i in costs}
        compute = sum(t[0] for t in terms.values())
        moved = sum(t[2] for t in terms.values())
        roofline = sum(max(t[0], t[1]) for t in terms.values())
        if profiled.fused_by_onnxruntime:   # one kernel: only its boundary goes to memory
            moved = _boundary_bytes([priced_by_id[i] for i in terms], sizes) or moved
            roofline = max(compute, moved / chosen.bandwidth_bytes_per_s)
        recast = _recast_bytes(profiled.kernels, values, sizes)
        ops.append(ComparedOp(
            profiled, compute_ms=compute * 1000,
            traffic_ms=moved / chosen.bandwidth_bytes_per_s * 1000,
            overhead_ms=overhead_ms * len(profiled.kernels), roofline_ms=roofline * 1000,
            flops=sum(costs[i].flops for i in terms), bytes=moved,
            cast_ms=recast / chosen.recast_bytes_per_s * 1000, cast_bytes=recast))
    profiled_ids = {i for op in profile.ops for i in op.ids}
    # the groups as predicted, and the nodes no kernel ran at their roofline time
    total = sum(op.predicted_ms for op in ops) + sum(
        c.est_seconds for i, c in costs.items() if i not in profiled_ids) * 1000
    not_run = [f"{n.name or '#' + str(n.id)} ({n.op_type})" for n in graph.nodes
               if n.id not in profiled_ids]
    return Comparison(chosen, profile, ops, total, not_run)


def _terms(cost, node: Node, target: Target, inline: bool) -> tuple[float, float, int]:
    """(compute s, traffic s, bytes) of one node as onnxruntime runs it: a fused node written
    inline as its body op by op, anything else as the roofline prices it; its operations at
    the rate of its kind."""
    moved = cost.bytes
    if inline and node.body is not None and cost.unfused_bytes is not None:
        moved = cost.unfused_bytes
    rate = target.rate(cost.dtype, rate_kind(node))
    return cost.flops / rate, moved / target.bandwidth_bytes_per_s, moved


def _recast_bytes(kernels: tuple[str, ...], values: dict, sizes: SizeResolver) -> int:
    """Bytes moved by the casts onnxruntime inserted among ``kernels`` ("name (op)"): each
    recast value once in its own type and once in float32 (a value of unknown size, none)."""
    moved = 0
    for kernel in kernels:
        name = kernel.rsplit(" (", 1)[0]
        value = values.get(value_name(name)) if value_name(name) != name else None
        shape = sizes.shape(value) if value is not None else None
        if shape is not None:
            moved += sizes.nbytes(value) + 4 * math.prod(shape)
    return moved


def _boundary_bytes(nodes: list[Node], sizes: SizeResolver) -> int | None:
    """Bytes crossing the boundary of nodes run as one kernel: what they read from outside
    and what they write that others read (each value once); None when a size is unknown."""
    inside = {node.id for node in nodes}
    crossing = {}
    for node in nodes:
        for value in node.inputs:
            if value is not None and (value.producer is None or value.producer.id not in inside):
                crossing[value.name] = value
        for value in node.outputs:
            if value is not None and (value.is_graph_output
                                      or any(use[0].id not in inside for use in value.uses)):
                crossing[value.name] = value
    moved = [sizes.nbytes(value) for value in crossing.values()]
    return None if any(m is None for m in moved) else sum(moved)


def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation: Pearson's correlation of the ranks (None below 3 pairs or
    when one side is constant)."""
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    mean_a, mean_b = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(ra, rb))
    var_a = sum((x - mean_a) ** 2 for x in ra)
    var_b = sum((y - mean_b) ** 2 for y in rb)
    return cov / (var_a * var_b) ** 0.5 if var_a and var_b else None
