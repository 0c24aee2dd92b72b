"""Skip (residual) Add + LayerNorm -> one SkipLayerNormalization node."""

from __future__ import annotations

from ..ir import Graph
from .base import Pass, PassContext, PassResult
from .pattern_pass import decline, find_matches
from .registry import register
from .rewrite import fuse_nodes

FUSED_OP = "SkipLayerNormalization"


@register
class FuseSkipLayerNorm(Pass):
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

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        for match in find_matches(graph, "skip_layernorm", ctx, result):
            operands = [match["input"], match["skip"], match["scale"], match["shift"]]
            present = [v for v in operands if v is not None]
            if len({v.name for v in present}) < len(present):
                decline(result, match.root.name, "skip_layernorm",
                        "one value is read twice (as the residual and the normalized input, or "
                        "as scale and bias); the fused op needs distinct inputs")
                continue
            fused = fuse_nodes(graph, ctx, match.nodes, FUSED_OP, "skip_layernorm",
                               {"epsilon": float(match["epsilon"])}, operands=operands)
            if fused is None:
                decline(result, match.root.name, "skip_layernorm",
                        "fusing would create a cycle: a value leaves the matched ops and "
                        "comes back")
                continue
            result.rewrites += 1
        if result.rewrites:
            result.notes.append(f"fused {result.rewrites} residual Add + LayerNorm pair(s)")
        return result
