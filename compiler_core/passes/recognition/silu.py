"""SiLU / Swish and the SwiGLU gate written out in primitive ops become one node each."""

from __future__ import annotations

from ...ir import Graph, Node
from ...ir.dtypes import is_float
from ...patterns import Match
from ...wording import plural
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import RewritePass, Rule
SWISH = "Swish"    # ONNX's name for it; the lowering imports these spellings
SWIGLU = "SwiGLU"


def _alpha(match: Match) -> float:
    alpha = match["alpha"]
    return 1.0 if alpha is None else float(alpha)


class SwiGluRule(Rule):
    """Library pattern ``swiglu`` -> one fused SwiGLU(gate, up) node computing
    gate·Sigmoid(α·gate)·up, whose body is the original ops; ``alpha`` is recorded."""

    name = "swiglu"

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        gate, up = match["gate"], match["up"]
        if not is_float(gate.elem_type):
            return f"the gate {gate.name!r} is not a floating-point tensor"
        return self.fuse(graph, ctx, match.nodes, SWIGLU, {"alpha": _alpha(match)},
                         operands=[gate, up])


class SiluRule(Rule):
    """Library pattern ``silu`` -> a fused Swish(X, alpha) node whose body is the original ops.
    Not the standard Swish of opset 24: onnxruntime 1.32 runs that op only in models of opset
    24 exactly, and a recognition must not make a model that no longer loads."""

    name = "silu"

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        x = match["input"]
        if not is_float(x.elem_type):
            return f"the input {x.name!r} is not a floating-point tensor"
        return self.fuse(graph, ctx, match.nodes, SWISH, {"alpha": _alpha(match)}, operands=[x])


@register_pass
class RecognizeSilu(RewritePass):
    """Replace the SwiGLU gate SiLU(gate)·up — the element-wise part of an LLM's gated MLP,
    down(silu(gate(x)) · up(x)) — by one SwiGLU node, and any other x·Sigmoid(x) (SiLU, or
    Swish x·Sigmoid(α·x)) by one Swish node.

    The gated MLP's element-wise part is three passes over its widest activation (Sigmoid,
    ·gate, ·up) that keep two intermediates in memory; as one kernel it reads gate and up
    once and writes the product once, so the MLP is its GEMMs plus one element-wise op.  A
    lone SiLU saves one pass and its Sigmoid's intermediate.  Both are fused nodes whose
    bodies are the original ops (``--runtime onnxruntime`` writes Swish as QuickGelu).
    """

    name = "recognize_silu"
    family = "recognition"
    rules = (SwiGluRule(), SiluRule())  # the gate first: a SwiGLU contains a SiLU

    def note(self, graph: Graph, made: list[Node]) -> str:
        gates = sum(1 for node in made if node.op_type == SWIGLU)
        return f"made {plural(len(made), 'node')}: {gates} SwiGLU, {len(made) - gates} Swish"
