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
from typing import NamedTuple

from onnx import TensorProto

from ..ir import FUSED_DOMAIN, Graph, Node
from ..passes.framework.base import PassContext
from ..passes.cleanup.cse import EliminateCommonSubexpressions
from ..passes.cleanup.dead_code import EliminateDeadCode
from ..passes.fusion.attention import FUSED_OP as ATTENTION
from ..passes.recognition.rotary import FUSED_OP as ROTARY
from ..passes.framework.rewrite import open_fused_node
from ..records import record_field
from ..verify import FLOAT16_RTOL
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
    float16: bool = False  # an onnxruntime operator computing in float16 (rounds its own way)


class Tolerance(NamedTuple):
    """The looser tolerance a check of an export needs, and why."""

    rtol: float
    why: str


@dataclass
class Lowering:
    """The onnxruntime-flavoured graph and one record per fused node of the input."""

    graph: Graph = record_field(omit=True)
    nodes: list[LoweredNode] = field(default_factory=list)

    runtime = "onnxruntime"
    json_derived = ("runtime", ("lowered", "counts"), "tolerance")
    json_order = ("runtime", "lowered", "tolerance")

    def counts(self) -> dict[str, int]:
        """How many fused nodes became each op (``inline`` for those written out)."""
        counts: dict[str, int] = {}
        for record in self.nodes:
            counts[record.result] = counts.get(record.result, 0) + 1
        return counts

    @property
    def tolerance(self) -> Tolerance | None:
        """The looser tolerance a check of this export needs, and why, when some operators
        compute in float16: their kernels round once where the model rounds after each op
        (or keep float32 where the model rounds to float16), which float16 users accept;
        None when every operator computes what the model does to float32 precision."""
        ops = sorted({r.result.split(":")[-1] for r in self.nodes if r.float16})
        if not ops:
            return None
        return Tolerance(FLOAT16_RTOL,
                         f"float16 operators ({', '.join(ops)}) round their own way")


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
        if isinstance(made, Node):
            result.nodes.append(LoweredNode(node.name, node.op_type,
                                            f"{made.domain or 'ai.onnx'}:{made.op_type}",
                                            float16=_computes_in_float16(made, node)))
            # an operator may keep parts of the body inline (attention: its rotary nodes)
            known = {n.id for n in pending}
            pending += [n for n in lowered.nodes if n.body is not None and n.id not in known]
            continue
        opened = open_fused_node(lowered, ctx, node, "inline_for_onnxruntime")
        result.nodes.append(LoweredNode(node.name, node.op_type, INLINE, reason))
        pending[:0] = [inner for inner in opened if inner.body is not None]
    EliminateDeadCode().run(lowered, ctx)  # shape arithmetic only the fused bodies read
    # operators' helpers that every layer computes alike (attention's sizes and mask bias)
    EliminateCommonSubexpressions().run(lowered, ctx)
    if any(n.domain == MS_DOMAIN for n in lowered.nodes):
        lowered.opset_imports[MS_DOMAIN] = 1
    lowered.opset_imports.pop(FUSED_DOMAIN, None)
    return result


def _computes_in_float16(made: Node, fused: Node) -> bool:
    """Whether the onnxruntime operator ``made`` for ``fused`` computes on float16 data (the
    fused node reads some; the values the lowering makes carry no types), so its kernel's
    rounding is its own."""
    return made.domain == MS_DOMAIN and any(
        v is not None and v.elem_type == TensorProto.FLOAT16 for v in fused.inputs)


def _lower(graph: Graph, node: Node) -> tuple[Node | None, str | None]:
    """Replace ``node`` by onnxruntime ops: (the operator made, None), or (None, the reason)."""
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
    return outcome, None
