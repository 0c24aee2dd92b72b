"""Skip (residual) Add + LayerNorm -> one SkipLayerNormalization node."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value
from ...ir.dtypes import to_numpy
from ...patterns import Match
from ..framework.pass_registry import register_pass
from ..framework.rules import RewritePass
from .skip_norm import SkipNormRule, skip_norm_note

FUSED_OP = "SkipLayerNormalization"


class SkipLayerNormRule(SkipNormRule):
    """Library pattern ``skip_layernorm`` -> SkipLayerNormalization(input, skip, gamma, beta,
    bias), whose body is the (bias Add,) residual Add and the normalization; its results are
    the normalized sum and, when read on, the sum.  A norm without shift whose sum absorbed a
    bias gets a zero shift (the bias comes after it in the op's signature)."""

    name = "skip_layernorm"
    fused_op = FUSED_OP
    params = ("scale", "shift")

    def norm_operands(self, graph: Graph, match: Match) -> list[Value | None] | str:
        scale, shift = match["scale"], match.bindings.get("shift")
        if shift is None and match.bindings.get("bias") is not None:
            width = match["input"].shape[-1] if match["input"].shape else None
            if not isinstance(width, int):
                return (f"the normalized axis of {match['input'].name!r} has unknown size, so "
                        f"no zero shift can stand before the absorbed bias")
            shift = graph.add_initializer(f"{match.root.name}_zero_shift",
                                          np.zeros(width, dtype=to_numpy(scale.elem_type)))
        return [scale, shift]


@register_pass
class FuseSkipLayerNorm(RewritePass):
    """Fuse a residual Add and the layer normalization that reads it into one
    SkipLayerNormalization node whose body is the Add and the normalization.

    Every transformer block adds x + sublayer(x) and normalizes a sum: unfused, the sum is
    written to memory and read back to be normalized.  Fused (onnxruntime's
    SkipLayerNormalization, 24 of them in bert-base), the sum stays on chip.  The normalization
    may be the LayerNormalization op, the fused LayerNormalization that recognition makes in
    older opsets, or still written out.  In pre-norm models (GPT-2, ViT) the sum also flows on
    to the next block: the fused node returns it as a second result.  The sub-layer's output
    projection usually ends in a bias Add: it joins the fused node too (the op's bias input),
    leaving the projection a bare MatMul.
    """

    name = "fuse_skip_layernorm"
    family = "fusion"
    rules = (SkipLayerNormRule(),)

    def note(self, graph: Graph, made: list[Node]) -> str:
        return skip_norm_note(made, self.rules[0], "LayerNorm")
