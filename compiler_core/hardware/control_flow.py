"""If, Loop and Scan priced by their bodies.

A control-flow node computes what its bodies compute: an If one of its branches (priced as
the costlier, since which one runs is known only at run time), a Loop its body once per
iteration, a Scan its body once per slice.  A Loop whose trip count is a constant runs it
that many times; one whose count is computed at run time (or that only stops on its
condition) is priced for one iteration, and the note says so.  Bodies are imported with the
outer values they read typed from the enclosing graph (`function_bodies.body_graph`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import onnx

from ..ir import Node, Value
from ..ir.function_bodies import body_graph
from .tensor_sizes import SizeResolver

CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
FlopsOf = Callable[[Node, SizeResolver], "int | None"]


@dataclass(frozen=True)
class BodyPrice:
    flops: int | None
    note: str


def is_control_flow(node: Node) -> bool:
    return node.domain in ("", "ai.onnx") and node.op_type in CONTROL_FLOW


def body_price(node: Node, sizes: SizeResolver, flops_of: FlopsOf,
               opsets: dict[str, int] | None = None) -> BodyPrice:
    """FLOPs of the node's bodies as they run, and how they were counted."""
    if node.op_type == "If":
        branches = [_flops(node.attrs.get(name), node, [], sizes, flops_of, opsets)
                    for name in ("then_branch", "else_branch")]
        if any(b is None for b in branches):
            return BodyPrice(None, "a branch holds an op GraphLab cannot price")
        return BodyPrice(max(branches), f"If: the costlier branch (then {branches[0]:,}, "
                                        f"else {branches[1]:,} FLOPs)")
    if node.op_type == "Loop":
        return _loop(node, sizes, flops_of, opsets)
    return _scan(node, sizes, flops_of, opsets)


def _loop(node: Node, sizes: SizeResolver, flops_of: FlopsOf, opsets) -> BodyPrice:
    carried = list(node.inputs[2:])
    once = _flops(node.attrs.get("body"), node, [None, None, *carried], sizes, flops_of,
                  opsets)
    if once is None:
        return BodyPrice(None, "its body holds an op GraphLab cannot price")
    trips = _constant_int(node.inputs[0] if node.inputs else None)
    if trips is None:
        return BodyPrice(once, "Loop: the trip count is not known before run time; one "
                               "iteration priced")
    return BodyPrice(trips * once, f"Loop: {trips} iterations of {once:,} FLOPs (fewer if "
                                   f"its condition stops it early)")


def _scan(node: Node, sizes: SizeResolver, flops_of: FlopsOf, opsets) -> BodyPrice:
    scanned = int(node.attrs.get("num_scan_inputs", 0))
    states = list(node.inputs[:len(node.inputs) - scanned])
    once = _flops(node.attrs.get("body"), node, states, sizes, flops_of, opsets)
    if once is None:
        return BodyPrice(None, "its body holds an op GraphLab cannot price")
    first = node.inputs[len(states)] if scanned else None
    shape = sizes.shape(first)
    axes = node.attrs.get("scan_input_axes") or (0,)
    if not shape:
        return BodyPrice(once, "Scan: the number of slices is unknown; one step priced")
    steps = shape[int(axes[0]) % len(shape)]
    return BodyPrice(steps * once, f"Scan: {steps} steps of {once:,} FLOPs")


def _flops(body: onnx.GraphProto | None, node: Node, input_types: list[Value | None],
           sizes: SizeResolver, flops_of: FlopsOf, opsets) -> int | None:
    if not isinstance(body, onnx.GraphProto):
        return None
    graph = body_graph(body, node.implicit_inputs, input_types, opsets)
    if graph is None:
        return None
    parts = [flops_of(inner, sizes) for inner in graph.nodes]
    return None if any(p is None for p in parts) else sum(parts)


def _constant_int(value: Value | None) -> int | None:
    if value is None or not value.is_constant:
        return None
    data = value.constant_value()
    return int(data.reshape(-1)[0]) if data is not None and data.size == 1 else None
