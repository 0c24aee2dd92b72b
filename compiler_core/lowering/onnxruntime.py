"""The final graph as onnxruntime runs it best: fused nodes become its contrib operators.

The portable export writes each fused node as a call of a model-local function.  onnxruntime
inlines such calls when it loads the model, but only after it has looked for its own fusions, so
a function-form model loses them: O2-compiled BERT ran 1.5x slower than its input model.  This
export replaces every fused node whose semantics an onnxruntime operator matches exactly by
that operator (Attention, SkipLayerNormalization, Gelu, FastGelu, FusedConv, FusedGemm, ...),
and writes every other fused node's body inline, as plain ONNX nodes, where onnxruntime's own
fusions still see the pattern.  The report says, per fused node, which op it became or why it
was written inline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import FUSED_DOMAIN, Graph, Node
from ..passes.base import PassContext
from ..passes.cleanup.dead_code import EliminateDeadCode
from ..passes.fusion.attention import FUSED_OP as ATTENTION
from ..passes.recognition.rotary import FUSED_OP as ROTARY
from ..passes.rewrite import open_fused_node
from .ort_attention import lower_attention
from .ort_ops import MS_DOMAIN, LOWERINGS
from .ort_rotary import lower_rotary

INLINE = "inline"


@dataclass
class LoweredNode:
    """What became of one fused node: the op it became (``domain:op``) or ``inline`` and why."""

    node: str
    fused_op: str
    result: str
    reason: str | None = None

    def to_dict(self) -> dict:
        return {"node": self.node, "fused_op": self.fused_op, "result": self.result,
                "reason": self.reason}


@dataclass
class Lowering:
    """The onnxruntime-flavoured graph and one record per fused node of the input."""

    graph: Graph
    nodes: list[LoweredNode] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many fused nodes became each op (``inline`` for those written out)."""
        counts: dict[str, int] = {}
        for record in self.nodes:
            counts[record.result] = counts.get(record.result, 0) + 1
        return counts

    def to_dict(self) -> dict:
        return {"runtime": "onnxruntime", "lowered": self.counts(),
                "nodes": [record.to_dict() for record in self.nodes]}


def lower_for_onnxruntime(graph: Graph) -> Lowering:
    """A copy of ``graph`` with no fused node left: each one lowered to an onnxruntime op or
    written inline (bodies of bodies too — a partition region holding fused nodes)."""
    lowered = graph.copy()
    ctx = PassContext(pass_name="lower_onnxruntime")
    result = Lowering(lowered)
    pending = [node for node in lowered.nodes if node.body is not None]
    while pending:
        node = pending.pop(0)
        made, reason = _lower(lowered, node)
        if made is not None:
            result.nodes.append(LoweredNode(node.name, node.op_type, made))
            # an operator may keep parts of the body inline (attention: its rotary nodes)
            known = {n.id for n in pending}
            pending += [n for n in lowered.nodes if n.body is not None and n.id not in known]
            continue
        opened = open_fused_node(lowered, ctx, node, "inline_for_onnxruntime")
        result.nodes.append(LoweredNode(node.name, node.op_type, INLINE, reason))
        pending[:0] = [inner for inner in opened if inner.body is not None]
    EliminateDeadCode().run(lowered, ctx)  # shape arithmetic only the fused bodies read
    if any(n.domain == MS_DOMAIN for n in lowered.nodes):
        lowered.opset_imports[MS_DOMAIN] = 1
    lowered.opset_imports.pop(FUSED_DOMAIN, None)
    return result


def _lower(graph: Graph, node: Node) -> tuple[str | None, str | None]:
    """Replace ``node`` by onnxruntime ops: (``domain:op`` made, None), or (None, the reason)."""
    if node.op_type == ATTENTION:
        outcome = lower_attention(graph, node)
    elif node.op_type == ROTARY:
        outcome = lower_rotary(graph, node)
    elif node.op_type in LOWERINGS:
        outcome = LOWERINGS[node.op_type](graph, node)
    else:
        return None, (f"onnxruntime has no operator for a fused {node.op_type}; written inline "
                      f"so its own fusions can still match the ops")
    if isinstance(outcome, str):
        return None, outcome
    return f"{outcome.domain or 'ai.onnx'}:{outcome.op_type}", None
