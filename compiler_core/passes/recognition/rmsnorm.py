"""RMSNorm written out in primitive ops becomes one normalization node.

LLM decoders (Llama, Qwen2, Mistral) normalize with x / sqrt(mean(x²) + ε) · w: no mean is
subtracted.  Exporters write it as five to seven element-wise ops — each a full pass over the
activation — in several spellings.
"""

from __future__ import annotations

from ...ir import Graph, Node
from ...ir.dtypes import is_float
from ...patterns import Match, Pattern, any_value, const, op
from ...patterns.library.common import as_float, scalar_const
from ...patterns.library.normalization import last_axis_mean
from ...patterns.library.registry import register as register_pattern
from ..base import PassContext
from ..registry import register
from ..rules import RewritePass, Rule
from .normalization_gelu import default_opset, unit_scale

FUSED_OP = "SimplifiedLayerNormalization"  # onnxruntime's name for it; lowering imports this
RMSNORM_OPSET = 23  # RMSNormalization is a standard op from this default-domain opset on


@register_pattern("rmsnorm")
def rmsnorm() -> Pattern:
    """RMS normalization over the last axis, written out: x² (Pow 2, or x·x) → ReduceMean →
    Add ε → Sqrt → x / sqrt (Div), or x · 1/sqrt (Reciprocal, or Div of 1) → optionally ·
    weight.

    Why: one kernel reads the activation once instead of five to seven times (onnxruntime's
    SimplifiedLayerNormalization, ONNX RMSNormalization from opset 23).

    Bindings: ``input``, ``scale`` (the weight, absent when unscaled), ``epsilon`` (float);
    nodes ``mean`` and ``add_eps``; the root is the node whose output is the result.
    """
    x = any_value().bind("input")
    square = op("Pow", x, const(2.0)) | op("Mul", x, x)
    add_eps = op("Add", last_axis_mean(square, "mean"),
                 scalar_const().bind("epsilon", as_float)).bind("add_eps")
    root = op("Sqrt", add_eps)
    normalized = (op("Div", x, root) | op("Mul", x, op("Reciprocal", root))
                  | op("Mul", x, op("Div", const(1.0), root)))
    weight = any_value().bind("scale").same_size_as("input", axis=-1)
    return (op("Mul", normalized, weight) | normalized).described_as(
        "RMS normalization over the last axis written out as a square, ReduceMean, Add "
        "epsilon, Sqrt, and a division (or a reciprocal and a Mul), then an optional weight.")


class RmsNormRule(Rule):
    """Library pattern ``rmsnorm`` -> one RMS normalization: the standard RMSNormalization op
    from opset 23, else a fused SimplifiedLayerNormalization node (GraphLab's domain) whose
    body is the original ops.  A missing weight becomes a unit scale."""

    name = "rmsnorm"

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        x, scale = match["input"], match.bindings.get("scale")
        if not is_float(x.elem_type):
            return f"the input {x.name!r} is not a floating-point tensor"
        if scale is None:
            scale = unit_scale(graph, x, x.shape[-1] if x.shape else None)
            if isinstance(scale, str):
                return scale
        attrs = {"axis": -1, "epsilon": float(match["epsilon"])}
        if default_opset(graph) >= RMSNORM_OPSET:
            return self.replace(graph, ctx, match.nodes, "RMSNormalization", [x, scale], attrs)
        return self.fuse(graph, ctx, match.nodes, FUSED_OP, attrs, operands=[x, scale])


@register
class RecognizeRmsNorm(RewritePass):
    """Replace an RMSNorm written out in primitive ops — x / sqrt(mean(x²) + ε) · w, with the
    square as Pow or Mul and the division as Div, Reciprocal + Mul or Div of 1 — by one node.

    LLM decoders normalize every block's input this way; one kernel reads the activation once.
    Runs after LayerNorm recognition: the core of a written-out LayerNorm is an RMSNorm of
    x − mean(x), and the LayerNorm should win.
    """

    name = "recognize_rmsnorm"
    family = "recognition"
    rules = (RmsNormRule(),)
