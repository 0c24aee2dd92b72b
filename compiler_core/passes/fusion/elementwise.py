"""Vertical fusion: chains of element-wise ops become one fused node."""

from __future__ import annotations

import onnx

from ...ir import Graph, Node
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.op_kinds import is_elementwise
from ..framework.pass_registry import register_pass
from ..framework.rewrite import fuse_nodes

RULE = "fuse_elementwise"
FUSED_OP = "FusedElementwise"
_FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                          onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE})


@register_pass
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
        fusible = _FusibleCache()
        claimed: set[int] = set()
        chains: list[list[Node]] = []
        blocked: dict[int, tuple[Node, str]] = {}
        for node in reversed(graph.nodes):  # grow each chain upwards from its last node
            if node.id in claimed or not fusible(node):
                continue
            chain, left_out = _grow_chain(node, claimed, fusible)
            inside = {n.id for n in chain}
            claimed |= inside
            if len(chain) > 1:
                chains.append(chain)
            for producer in left_out:
                if producer.id not in claimed:
                    blocked.setdefault(producer.id,
                                       (producer, _outside_reader(producer, inside)))
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


class _FusibleCache(dict):
    """``_fusible`` per node id, asked once per node however many chains look at it."""

    def __call__(self, node: Node) -> bool:
        found = self.get(node.id)
        if found is None:
            found = self[node.id] = _fusible(node)
        return found


def _fusible(node: Node) -> bool:
    """An element-wise op with one floating-point result that is not a lone scalar."""
    outputs = [v for v in node.outputs if v is not None]
    return (is_elementwise(node) and len(outputs) == 1
            and outputs[0].elem_type in _FLOAT_TYPES and outputs[0].numel() != 1)


def _grow_chain(last: Node, claimed: set[int], fusible: _FusibleCache,
                ) -> tuple[list[Node], list[Node]]:
    """``last`` plus every element-wise producer whose result only the chain reads, and the
    fusible producers left out (read outside the chain).

    A worklist: each member, as it joins, counts its reads of its producers' results; a
    producer joins once the chain holds all its readers (a producer read by two members
    joins once both are in), so the chain grows in time proportional to its edges.
    """
    chain = [last]
    members = {last.id}
    reads: dict[int, int] = {}       # producer id -> uses of its result by members
    seen: dict[int, Node] = {}       # fusible producers met, in the order they were met
    for member in chain:             # grows while it is walked
        read = (*member.inputs, *member.implicit_inputs)
        for value in dict.fromkeys(read):
            producer = value.producer if value is not None else None
            if (producer is None or producer.id in members or producer.id in claimed
                    or not fusible(producer)):
                continue
            seen.setdefault(producer.id, producer)
            reads[producer.id] = reads.get(producer.id, 0) + read.count(value)  # by identity
            result = producer.outputs[0]
            if reads[producer.id] == len(result.uses) and not result.is_graph_output:
                members.add(producer.id)
                chain.append(producer)
    return chain, [p for i, p in seen.items() if i not in members]


def _outside_reader(producer: Node, inside: set[int]) -> str:
    """Why ``producer``'s result must be materialised (read outside the chain)."""
    value = producer.outputs[0]
    if value.is_graph_output:
        return f"its result {value.name} is a model output, so it must be written to memory"
    reader = next(r for r in value.users() if r.id not in inside)
    return (f"its result {value.name} is also read by {reader.name} "
            f"({reader.op_type}), outside the chain")
