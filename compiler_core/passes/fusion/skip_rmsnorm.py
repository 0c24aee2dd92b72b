"""Residual Add + RMSNorm -> one SkipSimplifiedLayerNormalization node that also returns the
sum when the residual stream reads it on."""

from __future__ import annotations

from ...ir import FUSED_DOMAIN, Graph, Node, Value
from ...patterns import Match, Pattern, any_value, op
from ...patterns.library.common import attr_or_default
from ...patterns.library.registry import register as register_pattern
from ..base import PassContext
from ..recognition.rmsnorm import FUSED_OP as RMSNORM
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
    SimplifiedLayerNormalization that RMSNorm recognition makes, or the standard
    RMSNormalization op (opset 23).  The sum may also be read elsewhere — in a decoder the
    residual stream always flows on to the next block — and then is a second result.

    Why: onnxruntime's SkipSimplifiedLayerNormalization adds and normalizes in one pass and
    writes the sum once; unfused, the sum is written, then read back to be normalized.

    Bindings: ``skip_add`` and ``norm`` (nodes), ``input``, ``skip`` (the Add's operands),
    ``scale``, ``epsilon`` (float).
    """
    skip_add = op("Add", any_value().bind("input"), any_value().bind("skip")).bind(
        "skip_add").allow_external_uses()
    norms = [op(RMSNORM, skip_add, any_value().bind("scale"), domain=FUSED_DOMAIN),
             op("RMSNormalization", skip_add, any_value().bind("scale"))]
    recognized, standard = (norm.bind("norm").bind(
        "epsilon", attr_or_default("epsilon", 1e-5)).where(
        _normalizes_last_axis, "normalization over the last axis", _axis_found) for norm in norms)
    return (recognized | standard).described_as(
        "A residual Add feeding an RMS normalization over the last axis (recognized, or the "
        "RMSNormalization op); the sum may also be read on.")


class SkipRmsNormRule(Rule):
    """Library pattern ``skip_rmsnorm`` -> SkipSimplifiedLayerNormalization(input, skip, scale),
    whose body is the Add and the normalization; its results are the normalized sum and, when
    read elsewhere, the sum itself.  It needs three distinct inputs."""

    name = "skip_rmsnorm"

    def check(self, match: Match) -> str | None:
        operands = [match["input"], match["skip"], match["scale"]]
        if len({v.name for v in operands}) < len(operands):
            return ("one value is read twice (as the residual and the normalized input, or "
                    "as the scale); the fused op needs distinct inputs")
        return None

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        add, norm = match["skip_add"], match["norm"]
        total = add.outputs[0]
        results = [norm.outputs[0]]
        if total.is_graph_output or any(user is not norm for user in total.users()):
            results.append(total)
        return self.fuse(graph, ctx, [add, norm], FUSED_OP, {"epsilon": float(match["epsilon"])},
                         operands=[match["input"], match["skip"], match["scale"]],
                         results=results)


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
