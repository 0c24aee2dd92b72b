"""Folding BatchNormalization into the Conv, Gemm or MatMul that feeds it."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node
from ...patterns import Match, Pattern, any_value, const, op, optional
from ...wording import plural
from ..analyses.affine import batchnorm_affine, gemm_weight_axes, new_weight, scale_axis
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import Rule, RuleSet


def batch_norm(producer: Pattern, weight_axis: int | None = None) -> Pattern:
    """Inference-mode BatchNormalization with constant parameters, fed by ``producer``;
    with ``weight_axis`` the BN has one channel per slice of the weight along that axis."""
    scale = const().bind("scale")
    if weight_axis is not None:
        scale = scale.same_size_as("weight", axis=weight_axis)
    return op("BatchNormalization", producer, scale, const().bind("b"), const().bind("mean"),
              const().bind("var"), training_mode=0).bind("bn")


class _BatchNormFold(Rule):
    """A linear layer + inference BatchNormalization -> the layer with the BN's per-channel
    affine baked into its weight and bias."""

    def site(self, match: Match) -> Node:
        return match["bn"]

    def check(self, match: Match) -> str | None:
        """Old opsets let BatchNormalization output its running statistics; folded, they
        would be gone."""
        bn = match["bn"]
        extra = [v.name for v in bn.outputs[1:]
                 if v is not None and (v.uses or v.is_graph_output)]
        return f"its statistics output(s) {', '.join(extra)} are read" if extra else None


class ConvBatchNormRule(_BatchNormFold):
    """Pattern ``conv_bn`` -> Conv with per-output-channel (axis 0) scaled weights and a new
    bias."""

    name = "conv_bn"

    def pattern(self) -> Pattern:
        """Conv followed by inference-mode BatchNormalization, all parameters constant.

        Why: BN is an affine map per output channel, so it folds into the Conv's weight and
        bias at compile time — one op and one full pass over the activation disappear.
        The Conv output must be read by the BN only.

        Bindings: ``conv``, ``bn`` (nodes; epsilon is ``bn.attrs['epsilon']``, default 1e-5),
        ``x`` (Conv input), ``weight``, ``bias`` (None when the Conv has none), ``scale``,
        ``b``, ``mean``, ``var`` (BN constants).
        """
        conv = op("Conv", any_value().bind("x"), const().bind("weight"),
                  optional(const().bind("bias"))).bind("conv")
        return batch_norm(conv, weight_axis=0).described_as(
            "Conv (constant weight, optional constant bias) followed by inference-mode "
            "BatchNormalization with constant parameters.")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node:
        conv, weight, bias = match["conv"], match["weight"], match["bias"]
        s, t = batchnorm_affine(match["bn"])
        old_bias = bias.constant_value().astype(np.float64) if bias is not None else 0.0
        inputs = [match["x"],
                  new_weight(graph, weight, scale_axis(weight.constant_value(), s, 0)),
                  new_weight(graph, bias or weight, old_bias * s + t)]
        folded = self.replace(graph, ctx, [conv, match["bn"]], "Conv", inputs,
                              attrs=conv.attrs, name=conv.name)
        folded.attr_types = conv.attr_types
        return folded


class LinearBatchNormRule(_BatchNormFold):
    """Pattern ``linear_bn`` -> one Gemm whose weight's output channels are scaled; declined
    when the BN's channel axis is not the layer's output-channel axis."""

    name = "linear_bn"

    def pattern(self) -> Pattern:
        """MatMul or Gemm (with or without a constant bias) followed by inference-mode
        BatchNormalization with constant parameters.

        Why: like Conv+BN, the BN folds into the weight and bias of the linear layer.
        The bias may be a Gemm's third input or an Add of a constant after the MatMul.

        Bindings: ``linear`` (the MatMul or Gemm node), ``add`` (the bias Add node, None when
        the bias is absent or inside the Gemm), ``bn``, ``x``, ``weight``, ``bias`` (None when
        absent), ``scale``, ``b``, ``mean``, ``var``.
        """
        x, weight = any_value().bind("x"), const().bind("weight")
        matmul = op("MatMul", x, weight).bind("linear")
        gemm = op("Gemm", x, weight, optional(const().bind("bias")), transA=0).bind("linear")
        linear = op("Add", matmul, const().bind("bias")).bind("add") | matmul | gemm
        return batch_norm(linear).described_as(
            "MatMul or Gemm with a constant weight, with or without a constant bias, followed "
            "by inference-mode BatchNormalization with constant parameters.")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        linear, weight, bias, bn = match["linear"], match["weight"], match["bias"], match["bn"]
        normalized = bn.inputs[0]
        if normalized.rank != 2:
            rank = "unknown rank" if normalized.rank is None else f"rank {normalized.rank}"
            return (f"BatchNormalization normalizes axis 1 of the {linear.op_type} output "
                    f"({rank}), but folding can only scale the weight's output channels, which "
                    f"are axis 1 of a rank-2 output only")
        array = weight.constant_value()
        if array.ndim != 2:
            return f"the {linear.op_type} weight {weight.name!r} is not a matrix"
        out_axis = gemm_weight_axes(linear)[1] if linear.op_type == "Gemm" else 1
        s, t = batchnorm_affine(bn)
        if s.size != array.shape[out_axis]:
            return (f"BatchNormalization has {s.size} channels but the {linear.op_type} has "
                    f"{array.shape[out_axis]} outputs")
        old_bias = 0.0
        if bias is not None:
            old_bias = (bias.constant_value().astype(np.float64)
                        * float(linear.attrs.get("beta", 1.0)))
        attrs = {**linear.attrs, "beta": 1.0} if linear.op_type == "Gemm" else None
        inputs = [match["x"], new_weight(graph, weight, scale_axis(array, s, out_axis)),
                  new_weight(graph, bias or weight, old_bias * s + t)]
        absorbed = [n for n in (linear, match["add"], bn) if n is not None]
        return self.replace(graph, ctx, absorbed, "Gemm", inputs, attrs=attrs,
                            name=linear.name)


def _note(graph: Graph, made: list[Node]) -> str:
    return (f"folded {plural(len(made), 'BatchNormalization node')} into the weights of the "
            f"layer before them")


FOLD_BATCHNORM = register_pass(RuleSet(
    "fold_batchnorm", "folding", (ConvBatchNormRule(), LinearBatchNormRule()), note=_note,
    doc="""Fold each inference-mode BatchNormalization into the Conv, Gemm or MatMul right
    before it, so the normalization costs nothing at run time.

    At inference a BatchNormalization is a fixed affine map per channel, y = x·s + t with
    s = γ/√(var + ε) and t = β − mean·s.  Applied to a linear layer's output it can be baked
    into that layer: every output channel's weights are multiplied by s and its bias becomes
    b·s + t.  One op and one full pass over the activation disappear; the new weights are
    new initializers (dead-code elimination removes the old ones).  The fold is declined when
    it would change results: when the layer's output is also read by another node (that node
    must still see the unnormalized values), or when the BatchNorm's channel axis (axis 1) is
    not the layer's output-channel axis, as after a MatMul producing [N, T, C].
    """))
