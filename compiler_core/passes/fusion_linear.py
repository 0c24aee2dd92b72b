"""Linear layers with their bias and activation: MatMul + bias -> Gemm, and fused epilogues."""

from __future__ import annotations

from ..ir import Graph, Node, Value
from ..ir.dtypes import is_float
from ..patterns import Match, Pattern, any_value, const, get_pattern, match_all, op
from ..patterns.library.convolution import activation_after
from .base import Pass, PassContext, PassResult
from .pattern_pass import decline, find_matches
from .registry import register
from .rewrite import fuse_nodes, replace_by_op

# (library pattern, binding of the layer node, fused op, bindings of the fused op's inputs)
_LAYER_ACTIVATIONS = (("gemm_act", "gemm", "FusedGemm", ("a", "b", "c")),
                      ("conv_act", "conv", "FusedConv", ("x", "weight", "bias")))
_CYCLE = "fusing would create a cycle: a value leaves the matched ops and comes back"


def matmul_bias_act() -> Pattern:
    """The library's ``matmul_add`` followed by a fusable activation (bindings of both)."""
    return activation_after(get_pattern("matmul_add")).named("matmul_bias_act").described_as(
        "MatMul plus a constant bias, followed by a fusable activation (Relu, LeakyRelu, "
        "Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu, or Clip with constant bounds).")


@register
class FuseLinearBiasAct(Pass):
    """Fuse a Conv, Gemm or MatMul with its constant bias and the activation after it into one
    node (FusedConv, FusedGemm, FusedMatMulBias) whose body is the original ops.

    A linear layer's bias and activation are cheap per element but each is a full pass over
    the output when run as a separate op; fused, they run in the layer's epilogue while the
    output is still in registers.  A 2-D MatMul followed by the Add of a constant bias is
    exactly what the standard Gemm op computes, so it becomes a Gemm; other MatMuls keep their
    batch dimensions and become FusedMatMulBias.  The bias must be a constant to be folded into
    a fused kernel: a bias that arrives at run time (a graph input, another activation) is a
    different computation, and the pattern report names what was found instead.  Such a 2-D
    MatMul + Add still becomes one Gemm (Gemm's C operand may be computed at run time), but
    nothing more is fused into it.  An activation is absorbed only when the layer's output is
    read by nothing else.
    """

    name = "fuse_linear_bias_act"
    family = "fusion"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        counts: dict[str, int] = {}
        for pattern in (matmul_bias_act(), "matmul_add"):
            for match in find_matches(graph, pattern, ctx, result):
                _count(counts, _fuse_matmul(graph, ctx, match, result))
        for pattern, layer, op_type, operands in _LAYER_ACTIVATIONS:
            for match in find_matches(graph, pattern, ctx, result):
                _count(counts, _fuse_activation(graph, ctx, match, [match[layer]], op_type,
                                                [match[k] for k in operands], result))
        for match in match_all(graph, _runtime_bias_matmul()):
            if _is_gemm_shaped(match["x"], match["weight"], match["bias"]):
                _count(counts, replace_by_op(
                    graph, ctx, [match["matmul"], match["add"]], "Gemm", "matmul_runtime_bias",
                    [match["x"], match["weight"], match["bias"]], name=match["matmul"].name))
        result.rewrites = sum(counts.values())
        if counts:
            result.notes.append("made " + ", ".join(f"{n} {op}" for op, n in counts.items()))
        return result


def _count(counts: dict[str, int], made: Node | None) -> None:
    if made is not None:
        counts[made.op_type] = counts.get(made.op_type, 0) + 1


def _fuse_matmul(graph: Graph, ctx: PassContext, match: Match,
                 result: PassResult) -> Node | None:
    """MatMul + bias (+ activation): a Gemm (+ FusedGemm) when 2-D, else FusedMatMulBias."""
    matmul, add, act = match["matmul"], match["add"], match.bindings.get("act")
    x, weight, bias = match["x"], match["weight"], match["bias"]
    if _is_gemm_shaped(x, weight, bias):
        gemm = replace_by_op(graph, ctx, [matmul, add], "Gemm", "matmul_add", [x, weight, bias],
                             name=matmul.name)
        if act is None:
            return gemm
        return _fuse_activation(graph, ctx, match, [gemm], "FusedGemm", [x, weight, bias],
                                result)
    return _fuse_activation(graph, ctx, match, [matmul, add], "FusedMatMulBias",
                            [x, weight, bias], result)


def _fuse_activation(graph: Graph, ctx: PassContext, match: Match, layer: list[Node],
                     op_type: str, operands: list[Value | None],
                     result: PassResult) -> Node | None:
    """``layer`` and the match's activation (if any) -> one fused node reading ``operands``."""
    act = match.bindings.get("act")
    attrs = {"activation": act.op_type} if act is not None else None
    fused = fuse_nodes(graph, ctx, layer + ([act] if act is not None else []), op_type,
                       match.pattern_name, attrs, operands=operands)
    if fused is None:
        decline(result, match.root.name, match.pattern_name, _CYCLE)
    return fused


def _runtime_bias_matmul() -> Pattern:
    """MatMul + Add of a bias that is *not* a constant (the constant case fuses further)."""
    return op("Add", op("MatMul", any_value().bind("x"), any_value().bind("weight"))
              .bind("matmul"), (~const()).bind("bias")).bind("add")


def _is_gemm_shaped(x: Value, weight: Value, bias: Value) -> bool:
    """x [M, K] · W [K, N] + bias that broadcasts to [M, N] without growing it: a Gemm."""
    shape = bias.static_shape()
    if shape is None or weight.shape is None:
        return False
    return (x.rank == 2 and weight.rank == 2 and is_float(x.elem_type) and len(shape) <= 2
            and (len(shape) < 2 or shape[0] == 1)
            and (not shape or shape[-1] in (1, weight.shape[-1])))
