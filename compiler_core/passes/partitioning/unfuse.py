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
from ...ir import Graph, Node, Value
from ..base import PassContext
from .support import tensor_reason, unsupported_ops

RULE_OPEN = "open_fused_node"
_HEAVY_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})


def worth_opening(node: Node, target: Target) -> bool:
    """A fused node the target cannot run whole but whose heavy op it can run on its own."""
    return (node.body is not None and tensor_reason(node, target) is None
            and bool(unsupported_ops(node, target))
            and any(inner.op_type in _HEAVY_OPS and inner.body is None
                    and not unsupported_ops(inner, target) for inner in node.body.nodes))


def open_fused_node(graph: Graph, ctx: PassContext, node: Node) -> list[Node]:
    """Replace the fused ``node`` by its body's nodes (the reverse of ``fuse_nodes``)."""
    body = node.body
    mapping: dict[str, Value] = {inner.name: outer for inner, outer
                                 in zip(body.inputs, node.inputs)}
    for name, constant in body.initializers.items():
        mapping[name] = graph.add_initializer(name, constant.const)
    results = {inner.name: outer for inner, outer in zip(body.outputs, node.outputs)}
    start, step = node.order - 1.0, 1.0 / (len(body) + 1)
    graph.remove_node(node)
    opened = []
    for k, inner in enumerate(body.nodes):
        outputs = [None if v is None else results.get(v.name) or
                   graph.new_value(v.name, v.elem_type, v.shape) for v in inner.outputs]
        copy = graph.add_node(
            inner.op_type, [None if v is None else mapping[v.name] for v in inner.inputs],
            outputs, attrs=inner.attrs, domain=inner.domain, name=inner.name, body=inner.body,
            provenance=inner.provenance or ctx.provenance(RULE_OPEN, [inner]),
            order=start + (k + 1) * step,
            node_id=None if graph.node_by_id(inner.id) is not None else inner.id)
        copy.attr_types = inner.attr_types
        for old, new in zip(inner.outputs, outputs):
            if old is not None:
                mapping[old.name] = new
        opened.append(copy)
    return opened
