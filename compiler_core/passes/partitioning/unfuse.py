"""Opening a fused node the accelerator can only partly run, so its parts can be placed apart.

Earlier passes fuse for one processor: a MatMul with its GELU, the whole of attention with its
softmax.  If the accelerator runs the MatMul but not the GELU's Erf, keeping them fused would
send the MatMul — the expensive part — to the CPU too.  Opening the node puts its body back in
the graph (the nodes keep their ids, as before the fusion), so each op is placed on its own.
Only nodes holding a supported Conv, Gemm or MatMul are opened: a fused LayerNorm the chip
cannot run stays a fused LayerNorm on the CPU.
"""

from __future__ import annotations

from ...hardware.targets import Target
from ...ir import Node
from .support import tensor_reason, unsupported_ops

_HEAVY_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})


def worth_opening(node: Node, target: Target) -> bool:
    """A fused node the target cannot run whole but whose heavy op it can run on its own."""
    return (node.body is not None and tensor_reason(node, target) is None
            and bool(unsupported_ops(node, target))
            and any(inner.op_type in _HEAVY_OPS and inner.body is None
                    and not unsupported_ops(inner, target) for inner in node.body.nodes))
