"""Kinds of op that run at a rate of their own on a measured target, not at the matmul peak.

A CPU runs a convolution with kernels of its own (onnxruntime's blocked NCHWc convolutions at
ORT_ENABLE_ALL; its FusedConv, a convolution with its activation, as GraphLab's O2 writes it
for onnxruntime), at a rate the matmul peak does not predict, and a strided convolution at a
lower rate still; `graphlab targets --measure` measures both (`profiling.machine_child`) and
`Target.rate` prices an op of either kind at its kind's rate.  A 1x1 convolution runs at
about the 3x3's on the machines measured, and so does ResNet's 7x7 stem on three channels, so
neither has a kind of its own; a grouped (depthwise) convolution is not measured and keeps
the peak.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the target files' checks import the kinds; nothing here needs the IR
    from ..ir import Node

RATE_KINDS = {
    "conv": "a dense convolution at stride 1 (onnxruntime's FusedConv, and a fused node whose "
            "body holds one, too)",
    "strided_conv": "a dense convolution at a stride above 1",
}
_CONVOLUTIONS = {("Conv", ""), ("Conv", "ai.onnx"), ("FusedConv", "com.microsoft")}


def rate_kind(node: Node) -> str | None:
    """The kind whose rate ``node`` runs at (a key of RATE_KINDS), None for the peak."""
    conv = _convolution(node)
    if conv is None or conv.attr("group", 1) != 1:
        return None
    return "strided_conv" if any(s > 1 for s in conv.attr("strides") or ()) else "conv"


def _convolution(node: Node) -> Node | None:
    """The node itself when it is a convolution, else the convolution of its fused body."""
    if (node.op_type, node.domain) in _CONVOLUTIONS:
        return node
    if node.body is None:
        return None
    return next((inner for inner in node.body.nodes
                 if (inner.op_type, inner.domain) in _CONVOLUTIONS), None)
