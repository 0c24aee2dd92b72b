"""Skip (residual) Add + LayerNorm -> one SkipLayerNormalization node."""

from __future__ import annotations

from ...ir import Graph, Node
from ...patterns import Match
from ..base import PassContext
from ..registry import register
from ..rules import RewritePass, Rule

FUSED_OP = "SkipLayerNormalization"


class SkipLayerNormRule(Rule):
    """Library pattern ``skip_layernorm`` -> SkipLayerNormalization(input, skip, gamma, beta),
    whose body is the Add and the normalization; it needs four distinct inputs."""

    name = "skip_layernorm"

    def check(self, match: Match) -> str | None:
        present = [v for v in self._operands(match) if v is not None]
        if len({v.name for v in present}) < len(present):
            return ("one value is read twice (as the residual and the normalized input, or "
                    "as scale and bias); the fused op needs distinct inputs")
        return None

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        return self.fuse(graph, ctx, match.nodes, FUSED_OP,
                         {"epsilon": float(match["epsilon"])}, operands=self._operands(match))

    @staticmethod
    def _operands(match: Match) -> list:
        return [match["input"], match["skip"], match["scale"], match["shift"]]


@register
class FuseSkipLayerNorm(RewritePass):
    """Fuse a residual Add and the layer normalization that reads it into one
    SkipLayerNormalization node whose body is the Add and the normalization.

    Every transformer block ends with x + sublayer(x) followed by a LayerNorm: unfused, the
    sum is written to memory and read back to be normalized.  Fused (onnxruntime's
    SkipLayerNormalization, 24 of them in bert-base), the sum stays on chip.  The normalization
    may be the LayerNormalization op, the fused LayerNormalization that recognition makes in
    older opsets, or still written out.  The sum must be read by the normalization only: in
    pre-LN models such as GPT-2 the residual stream also flows on to the next block, and the
    pattern report names that reader.
    """

    name = "fuse_skip_layernorm"
    family = "fusion"
    rules = (SkipLayerNormRule(),)

    def note(self, graph: Graph, made: list[Node]) -> str:
        return f"fused {len(made)} residual Add + LayerNorm pair(s)"
