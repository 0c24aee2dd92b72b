"""Skip (residual) Add + LayerNorm -> one SkipLayerNormalization node."""

from __future__ import annotations

import numpy as np

from ...ir import FUSED_DOMAIN, Graph, Node, Value
from ...ir.dtypes import to_numpy
from ...patterns import Match, Pattern, any_value, op, optional
from ...patterns.library.common import attr_or_default
from ...patterns.library.normalization import decomposed_layernorm, over_last_axis, residual_sum
from ..framework.pass_registry import register_pass
from ..framework.rules import RuleSet
from .skip_norm import SkipNormRule, skip_norm_note

FUSED_OP = "SkipLayerNormalization"


def _layernorm_op(x: Pattern, domain: str) -> Pattern:
    """LayerNormalization over the last axis reading ``x``: the standard op, or (in GraphLab's
    domain) the fused node LayerNorm recognition makes where the opset has no such op."""
    layernorm = over_last_axis(op("LayerNormalization", x, any_value().bind("scale"),
                                  optional(any_value().bind("shift")), domain=domain))
    return layernorm.bind("layernorm").bind("epsilon", attr_or_default("epsilon", 1e-5)).bind(
        "axis", attr_or_default("axis", -1)).tag("form", "op")


class SkipLayerNormRule(SkipNormRule):
    """Pattern ``skip_layernorm`` -> SkipLayerNormalization(input, skip, gamma, beta, bias),
    whose body is the (bias Add,) residual Add and the normalization; its results are
    the normalized sum and, when read on, the sum.  A norm without shift whose sum absorbed a
    bias gets a zero shift (the bias comes after it in the op's signature)."""

    name = "skip_layernorm"
    fused_op = FUSED_OP
    params = ("scale", "shift")

    def pattern(self) -> Pattern:
        """A residual Add (``residual_sum``: maybe absorbing a projection's bias Add, maybe
        read on by the next block) feeding a layer normalization — either the
        LayerNormalization op over the last axis (standard, or GraphLab's fused
        LayerNormalization that LayerNorm recognition makes below opset 17) or the decomposed
        form of ``layernorm``.

        Why: onnxruntime's SkipLayerNormalization does the residual add (with the bias) and
        the normalization in one pass (24 of them in bert-base) and writes the sum once when
        the residual stream needs it.

        Bindings: those of ``residual_sum``; ``scale``, ``shift`` (None when the op form has
        no bias), ``epsilon`` (float), ``axis`` (-1 for decomposed; the op's axis otherwise),
        ``layernorm`` (the LayerNormalization node, or the shift Add of the decomposed form),
        ``form`` ("op" or "decomposed"); the decomposed form also binds the node names of
        ``layernorm``.
        """
        skip_add = residual_sum()
        standard = _layernorm_op(skip_add, "")
        recognized = _layernorm_op(skip_add, FUSED_DOMAIN)
        decomposed = decomposed_layernorm(skip_add).tag("form", "decomposed")
        return (standard | recognized | decomposed).described_as(
            "A residual Add (its input may carry a projection's bias Add; the sum may be read "
            "on) feeding a layer normalization over the last axis (the LayerNormalization op "
            "or its decomposed form).")

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


SKIP_LAYERNORM = SkipLayerNormRule()


def _note(graph: Graph, made: list[Node]) -> str:
    return skip_norm_note(made, SKIP_LAYERNORM, "LayerNorm")


FUSE_SKIP_LAYERNORM = register_pass(RuleSet(
    "fuse_skip_layernorm", "fusion", (SKIP_LAYERNORM,), note=_note,
    doc="""Fuse a residual Add and the layer normalization that reads it into one
    SkipLayerNormalization node whose body is the Add and the normalization.

    Every transformer block adds x + sublayer(x) and normalizes a sum: unfused, the sum is
    written to memory and read back to be normalized.  Fused (onnxruntime's
    SkipLayerNormalization, 24 of them in bert-base), the sum stays on chip.  The normalization
    may be the LayerNormalization op, the fused LayerNormalization that recognition makes in
    older opsets, or still written out.  In pre-norm models (GPT-2, ViT) the sum also flows on
    to the next block: the fused node returns it as a second result.  The sub-layer's output
    projection usually ends in a bias Add: it joins the fused node too (the op's bias input),
    leaving the projection a bare MatMul.
    """))
