"""Vertical fusion: chains of element-wise ops become one fused node."""

from __future__ import annotations

import onnx

from ...ir import Graph, Node
from ...wording import plural
from ..base import Pass, PassContext, PassResult
from ..op_kinds import is_elementwise
from ..registry import register
from ..rewrite import fuse_nodes

RULE = "fuse_elementwise"
FUSED_OP = "FusedElementwise"
_FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                          onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE})


@register
class FuseElementwise(Pass):
    """Fuse chains of element-wise ops (Add, Mul, Erf, Relu, Where, ...) whose intermediate
    results nobody else reads into one node, so the chain runs as a single loop.

    Run one element-wise op at a time and every intermediate tensor makes a round trip through
    memory: written by one kernel, read back by the next.  For ops that do a few flops per
    element that traffic, not arithmetic, sets the speed.  A fused kernel reads the chain's inputs
    once, keeps the intermediates in registers and writes only the final result — the classic
    loop fusion of XLA and TVM.  A value that is also read outside the chain (or is a model
    output) must be materialised, so the chain stops there.  Only floating-point tensors with more
    than one element are fused (integer and scalar chains are shape arithmetic, which constant
    folding should remove), and nodes an earlier, more specific fusion made (GELU, LayerNorm, ...)
    are left as they are.
    """

    name = "fuse_elementwise"
    family = "fusion"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        claimed: set[int] = set()
        chains: list[list[Node]] = []
        blocked: dict[int, tuple[Node, str]] = {}
        for node in reversed(graph.nodes):  # grow each chain upwards from its last node
            if node.id in claimed or not _fusible(node):
                continue
            chain = _grow_chain(node, claimed)
            claimed.update(n.id for n in chain)
            if len(chain) > 1:
                chains.append(chain)
            for producer in _candidate_producers(chain, claimed):
                blocked.setdefault(producer.id, (producer, _outside_reader(producer, chain)))
        for producer, reason in blocked.values():
            result.decline(producer, RULE, reason)
        fused_ops = 0
        for chain in chains:
            if fuse_nodes(graph, ctx, chain, FUSED_OP, RULE) is not None:
                result.rewrites += 1
                fused_ops += len(chain)
        if result.rewrites:
            result.notes.append(f"fused {fused_ops} element-wise ops into "
                                f"{plural(result.rewrites, FUSED_OP + ' node')}")
        return result


def _fusible(node: Node) -> bool:
    """An element-wise op with one floating-point result that is not a lone scalar."""
    outputs = [v for v in node.outputs if v is not None]
    return (is_elementwise(node) and len(outputs) == 1
            and outputs[0].elem_type in _FLOAT_TYPES and outputs[0].numel() != 1)


def _grow_chain(last: Node, claimed: set[int]) -> list[Node]:
    """``last`` plus every element-wise producer whose result only the chain reads.

    Grown to a fixed point: a producer read by two chain members joins once both are in.
    """
    chain = [last]
    grew = True
    while grew:
        grew = False
        for producer in _candidate_producers(chain, claimed):
            if _outside_reader(producer, chain) is None:
                chain.append(producer)
                grew = True
    return chain


def _candidate_producers(chain: list[Node], claimed: set[int]) -> list[Node]:
    """Fusible producers of the chain's inputs that are in no chain yet."""
    members = {n.id for n in chain}
    found: dict[int, Node] = {}
    for node in chain:
        for value in node.inputs:
            producer = value.producer if value is not None else None
            if (producer is not None and producer.id not in members
                    and producer.id not in claimed and _fusible(producer)):
                found.setdefault(producer.id, producer)
    return list(found.values())


def _outside_reader(producer: Node, chain: list[Node]) -> str | None:
    """Why ``producer``'s result must be materialised (read outside the chain), or None."""
    value = producer.outputs[0]
    if value.is_graph_output:
        return f"its result {value.name} is a model output, so it must be written to memory"
    members = {n.id for n in chain}
    for reader in value.users():
        if reader.id not in members:
            return (f"its result {value.name} is also read by {reader.name} "
                    f"({reader.op_type}), outside the chain")
    return None
