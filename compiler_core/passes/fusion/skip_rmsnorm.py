"""Residual Add + RMSNorm -> one SkipSimplifiedLayerNormalization node that also returns the
sum when the residual stream reads it on."""

from __future__ import annotations

from ...ir import FUSED_DOMAIN, Graph, Node, Value
from ...patterns import Match, Pattern, any_value, op
from ...patterns.library.common import attr_or_default
from ...patterns.library.normalization import over_last_axis, residual_sum, written_out_rmsnorm
from ..recognition.normalization_gelu import unit_scale
from ..recognition.rmsnorm import FUSED_OP as RMSNORM
from ..framework.pass_registry import register_pass
from ..framework.rules import RuleSet
from .skip_norm import SkipNormRule, skip_norm_note

FUSED_OP = "SkipSimplifiedLayerNormalization"  # onnxruntime's name; the lowering imports it


class SkipRmsNormRule(SkipNormRule):
    """Pattern ``skip_rmsnorm`` -> SkipSimplifiedLayerNormalization(input, skip, scale, bias),
    whose body is the (bias Add,) residual Add and the normalization; its results are
    the normalized sum and, when read elsewhere, the sum itself.  A written-out norm without a
    weight gets a unit scale."""

    name = "skip_rmsnorm"
    fused_op = FUSED_OP
    params = ("scale",)

    def pattern(self) -> Pattern:
        """A residual Add (``residual_sum``: maybe absorbing a projection's bias Add) feeding an
        RMS normalization over the last axis: the fused SimplifiedLayerNormalization that RMSNorm
        recognition makes, the standard RMSNormalization op (opset 23), or still written out (as
        ``rmsnorm`` describes).  The sum may also be read elsewhere — in a decoder the residual
        stream always flows on to the next block — and then is a second result.

        Why: onnxruntime's SkipSimplifiedLayerNormalization adds and normalizes in one pass and
        writes the sum once; unfused, the sum is written, then read back to be normalized.

        Bindings: those of ``residual_sum``, ``scale`` (None when a written-out norm has no
        weight), ``epsilon`` (float), ``form`` ("op" or "written_out"); the root's output is the
        normalized sum.
        """
        skip_add = residual_sum()
        norms = [op(RMSNORM, skip_add, any_value().bind("scale"), domain=FUSED_DOMAIN),
                 op("RMSNormalization", skip_add, any_value().bind("scale"))]
        recognized, standard = (over_last_axis(norm.bind(
            "epsilon", attr_or_default("epsilon", 1e-5))).tag("form", "op") for norm in norms)
        written_out = written_out_rmsnorm(skip_add).tag("form", "written_out")
        return (recognized | standard | written_out).described_as(
            "A residual Add (its input may carry a projection's bias Add; the sum may be read on) "
            "feeding an RMS normalization over the last axis (recognized, the RMSNormalization "
            "op, or written out).")

    def norm_operands(self, graph: Graph, match: Match) -> list[Value | None] | str:
        scale = match["scale"]
        if scale is None:
            total, result = match["skip_add"].outputs[0], match.root.outputs[0]
            scale = unit_scale(graph, total, total.shape[-1] if total.shape else None,
                               result.elem_type)
        return scale if isinstance(scale, str) else [scale]


SKIP_RMSNORM = SkipRmsNormRule()


def _note(graph: Graph, made: list[Node]) -> str:
    return skip_norm_note(made, SKIP_RMSNORM, "RMSNorm")


FUSE_SKIP_RMSNORM = register_pass(RuleSet(
    "fuse_skip_rmsnorm", "fusion", (SKIP_RMSNORM,), note=_note,
    doc="""Fuse a residual Add and the RMS normalization that reads it into one
    SkipSimplifiedLayerNormalization node (the Add and the norm as its body).

    Every block of an LLM decoder adds its sub-layer's output to the residual stream and
    normalizes the sum for the next sub-layer: fused, the sum is written once and never read
    back.  The residual stream goes on to the next block's Add, so the fused node also
    returns the sum (onnxruntime's op has that output too).
    """))
