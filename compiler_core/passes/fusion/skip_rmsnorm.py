"""Residual Add + RMSNorm -> one SkipSimplifiedLayerNormalization node that also returns the
sum when the residual stream reads it on."""

from __future__ import annotations

from ...ir import FUSED_DOMAIN, Graph, Node, Value
from ...patterns import Match, Pattern, any_value, op
from ...patterns.library.common import attr_or_default
from ...patterns.library.registry import register as register_pattern
from ..base import PassContext
from ..recognition.normalization_gelu import unit_scale
from ..recognition.rmsnorm import FUSED_OP as RMSNORM, written_out_rmsnorm
from ..registry import register
from ..rules import RewritePass, Rule

FUSED_OP = "SkipSimplifiedLayerNormalization"  # onnxruntime's name; the lowering imports it


def _normalizes_last_axis(value: Value, _: dict) -> bool:
    node = value.producer
    axis, rank = node.attrs.get("axis", -1), node.inputs[0].rank
    return axis == -1 or (rank is not None and axis == rank - 1)


def _axis_found(value: Value, _: dict) -> str:
    node = value.producer
    return f"axis {node.attrs.get('axis', -1)} (rank {node.inputs[0].rank})"


@register_pattern("skip_rmsnorm")
def skip_rmsnorm() -> Pattern:
    """A residual Add feeding an RMS normalization over the last axis: the fused
    SimplifiedLayerNormalization that RMSNorm recognition makes, the standard
    RMSNormalization op (opset 23), or still written out (as ``rmsnorm`` describes).  The sum
    may also be read elsewhere — in a decoder the residual stream always flows on to the next
    block — and then is a second result.

    Why: onnxruntime's SkipSimplifiedLayerNormalization adds and normalizes in one pass and
    writes the sum once; unfused, the sum is written, then read back to be normalized.

    Bindings: ``skip_add`` (node), ``input``, ``skip`` (the Add's operands), ``scale`` (None
    when a written-out norm has no weight), ``epsilon`` (float), ``form`` ("op" or
    "written_out"); the root's output is the normalized sum.
    """
    skip_add = op("Add", any_value().bind("input"), any_value().bind("skip")).bind(
        "skip_add").allow_external_uses()
    norms = [op(RMSNORM, skip_add, any_value().bind("scale"), domain=FUSED_DOMAIN),
             op("RMSNormalization", skip_add, any_value().bind("scale"))]
    recognized, standard = (norm.bind("epsilon", attr_or_default("epsilon", 1e-5)).where(
        _normalizes_last_axis, "normalization over the last axis", _axis_found).tag(
        "form", "op") for norm in norms)
    written_out = written_out_rmsnorm(skip_add).tag("form", "written_out")
    return (recognized | standard | written_out).described_as(
        "A residual Add feeding an RMS normalization over the last axis (recognized, the "
        "RMSNormalization op, or written out); the sum may also be read on.")


class SkipRmsNormRule(Rule):
    """Library pattern ``skip_rmsnorm`` -> SkipSimplifiedLayerNormalization(input, skip, scale),
    whose body is the Add and the normalization; its results are the normalized sum and, when
    read elsewhere, the sum itself.  It needs three distinct inputs; a written-out norm
    without a weight gets a unit scale."""

    name = "skip_rmsnorm"

    def check(self, match: Match) -> str | None:
        operands = [v for v in (match["input"], match["skip"], match["scale"]) if v is not None]
        if len({v.name for v in operands}) < len(operands):
            return ("one value is read twice (as the residual and the normalized input, or "
                    "as the scale); the fused op needs distinct inputs")
        return None

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        total, result = match["skip_add"].outputs[0], match.root.outputs[0]
        scale = match["scale"]
        if scale is None:
            scale = unit_scale(graph, total, total.shape[-1] if total.shape else None,
                               result.elem_type)
            if isinstance(scale, str):
                return scale
        inside = {node.id for node in match.nodes}
        results = [result]
        if total.is_graph_output or any(user.id not in inside for user in total.users()):
            results.append(total)
        return self.fuse(graph, ctx, match.nodes, FUSED_OP, {"epsilon": float(match["epsilon"])},
                         operands=[match["input"], match["skip"], scale], results=results)


@register
class FuseSkipRmsNorm(RewritePass):
    """Fuse a residual Add and the RMS normalization that reads it into one
    SkipSimplifiedLayerNormalization node (the Add and the norm as its body).

    Every block of an LLM decoder adds its sub-layer's output to the residual stream and
    normalizes the sum for the next sub-layer: fused, the sum is written once and never read
    back.  The residual stream goes on to the next block's Add, so the fused node also
    returns the sum (onnxruntime's op has that output too).
    """

    name = "fuse_skip_rmsnorm"
    family = "fusion"
    rules = (SkipRmsNormRule(),)

    def note(self, graph: Graph, made: list[Node]) -> str:
        summed = sum(1 for node in made if len(node.outputs) > 1)
        return (f"fused {len(made)} residual Add + RMSNorm pair(s), {summed} also returning "
                f"the sum")
