"""RMSNorm written out in primitive ops becomes one normalization node.

LLM decoders (Llama, Qwen2, Mistral) normalize with x / sqrt(mean(x²) + ε) · w: no mean is
subtracted.  Exporters write it as five to nine element-wise ops — each a full pass over the
activation — in several spellings, and half-precision models wrap it in casts: HF computes
the statistics in float32 (Cast up), casts the result back, then multiplies by the weight
(or multiplies first and casts last).
"""

from __future__ import annotations

from onnx import TensorProto

from ...ir import Graph, Node, Value
from ...ir.dtypes import is_float
from ...patterns import Match, Pattern, any_value
from ...patterns.library.normalization import WEIGHT_AFTER_CAST, written_out_rmsnorm
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import Rule, RuleSet
from .normalization_gelu import default_opset, unit_scale

FUSED_OP = "SimplifiedLayerNormalization"  # onnxruntime's name for it; lowering imports this
RMSNORM_OPSET = 23  # RMSNormalization is a standard op from this default-domain opset on
class RmsNormRule(Rule):
    """Pattern ``rmsnorm`` -> one RMS normalization: the standard RMSNormalization op
    from opset 23 when it computes exactly the same (float32, or float16/bfloat16 upcast to
    float32, cast back, then weighted: its stash_type 1), else a fused
    SimplifiedLayerNormalization node (GraphLab's domain) whose body is the original ops,
    casts included.  A missing weight becomes a unit scale of the result's type."""

    name = "rmsnorm"

    def pattern(self) -> Pattern:
        """RMS normalization over the last axis, written out: x² (Pow 2, or x·x) → ReduceMean
        → Add ε → Sqrt → x / sqrt (Div), or x · 1/sqrt (Reciprocal, or Div of 1), or
        x · (…)^−0.5 (Pow) → optionally · weight.  Half-precision forms: x cast to float32
        first, the result cast back, the weight multiplied after the cast back or before it.

        Why: one kernel reads the activation once instead of five to nine times
        (onnxruntime's SimplifiedLayerNormalization, ONNX RMSNormalization from opset 23).

        Bindings: ``input`` (x before any upcast), ``scale`` (the weight, absent when
        unscaled: a vector over the last axis), ``epsilon`` (float), ``upcast`` and
        ``downcast`` (the Cast nodes, None when absent), ``weight_order`` (WEIGHT_AFTER_CAST,
        WEIGHT_BEFORE_CAST or NO_CAST); nodes ``mean`` and ``add_eps``; the root is the node
        whose output is the result.
        """
        return written_out_rmsnorm(any_value().bind("input")).described_as(
            "RMS normalization over the last axis written out as a square, ReduceMean, Add "
            "epsilon, Sqrt, and a division (or a reciprocal, or a power of -0.5), then an "
            "optional weight; in half precision with casts to float32 and back around it.")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        x, scale = match["input"], match["scale"]
        if not is_float(x.elem_type):
            return f"the input {x.name!r} is not a floating-point tensor"
        result = match.root.outputs[0]
        if scale is None:
            scale = unit_scale(graph, x, x.shape[-1] if x.shape else None, result.elem_type)
            if isinstance(scale, str):
                return scale
        attrs = {"axis": -1, "epsilon": float(match["epsilon"])}
        if default_opset(graph) >= RMSNORM_OPSET and _standard_op_computes_it(match, scale):
            return self.replace(graph, ctx, match.nodes, "RMSNormalization", [x, scale],
                                dict(attrs, stash_type=TensorProto.FLOAT))
        if match["upcast"] is not None:
            attrs["stash_type"] = TensorProto.FLOAT  # computed in float32, as onnxruntime's op
        return self.fuse(graph, ctx, match.nodes, FUSED_OP, attrs, operands=[x, scale])


def _standard_op_computes_it(match: Match, scale: Value) -> bool:
    """RMSNormalization (stash_type 1) casts X to float32, normalizes, casts the result back to
    X's type and then multiplies by the scale of that type: the written-out ops must do
    exactly that (a float64 or all-float16 norm does not; nor a weight applied in float32)."""
    x, upcast, downcast = match["input"], match["upcast"], match["downcast"]
    same_type = scale.elem_type == x.elem_type == match.root.outputs[0].elem_type
    if upcast is None:
        return same_type and x.elem_type == TensorProto.FLOAT and downcast is None
    return (same_type and downcast is not None
            and match["weight_order"] == WEIGHT_AFTER_CAST)


RECOGNIZE_RMSNORM = register_pass(RuleSet(
    "recognize_rmsnorm", "recognition", (RmsNormRule(),),
    doc="""Replace an RMSNorm written out in primitive ops — x / sqrt(mean(x²) + ε) · w, with
    the square as Pow or Mul and the division as Div, Reciprocal + Mul, Div of 1 or Pow −0.5,
    in half precision wrapped in casts to float32 and back — by one node.

    LLM decoders normalize every block's input this way; one kernel reads the activation once.
    Runs after LayerNorm recognition: the core of a written-out LayerNorm is an RMSNorm of
    x − mean(x), and the LayerNorm should win.
    """))
