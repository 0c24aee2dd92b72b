"""Linear layers with their bias and activation: MatMul + bias -> Gemm, and fused epilogues."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from ...ir import Graph, Node, Value
from ...ir.dtypes import is_float
from ...patterns import Match, Pattern, any_value, const, get_pattern, op
from ...patterns.library.convolution import activation_after
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import RewritePass, Rule

FUSED_GEMM = "FusedGemm"
FUSED_CONV = "FusedConv"
FUSED_MATMUL_BIAS = "FusedMatMulBias"


class MatMulAddRule(Rule):
    """Library pattern ``matmul_add`` -> a standard Gemm when 2-D (exactly what Gemm
    computes), else FusedMatMulBias, which keeps the batch dimensions."""

    name = "matmul_add"

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        if _is_gemm_shaped(match["x"], match["weight"], match["bias"]):
            return self.gemm(graph, ctx, match)
        return self.fuse(graph, ctx, [match["matmul"], match["add"]], FUSED_MATMUL_BIAS,
                         operands=_linear_operands(match))

    def gemm(self, graph: Graph, ctx: PassContext, match: Match) -> Node:
        """The matched MatMul and bias Add as one Gemm named after the MatMul."""
        return self.replace(graph, ctx, [match["matmul"], match["add"]], "Gemm",
                            _linear_operands(match), name=match["matmul"].name)


MATMUL_ADD = MatMulAddRule()


class MatMulBiasActRule(Rule):
    """``matmul_add`` followed by a fusable activation -> FusedGemm around the Gemm the
    MatMul + bias becomes when 2-D, else FusedMatMulBias with the activation."""

    name = "matmul_bias_act"

    def pattern(self) -> Pattern:
        return activation_after(get_pattern("matmul_add")).named(self.name).described_as(
            "MatMul plus a constant bias, followed by a fusable activation (Relu, LeakyRelu, "
            "Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu, or Clip with constant bounds).")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        act = match["act"]
        attrs = {"activation": act.op_type}
        if _is_gemm_shaped(match["x"], match["weight"], match["bias"]):
            gemm = MATMUL_ADD.gemm(graph, ctx, match)
            return self.fuse(graph, ctx, [gemm, act], FUSED_GEMM, attrs,
                             operands=_linear_operands(match))
        return self.fuse(graph, ctx, [match["matmul"], match["add"], act], FUSED_MATMUL_BIAS,
                         attrs, operands=_linear_operands(match))


class _LayerActivationRule(Rule):
    """A layer and the activation after it -> one fused node reading the layer's inputs."""

    layer: ClassVar[str]               # binding of the layer node
    fused_op: ClassVar[str]
    operands: ClassVar[tuple[str, ...]]  # bindings of the fused op's inputs, in order

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        act = match["act"]
        return self.fuse(graph, ctx, [match[self.layer], act], self.fused_op,
                         {"activation": act.op_type},
                         operands=[match[k] for k in self.operands])


class GemmActRule(_LayerActivationRule):
    """Library pattern ``gemm_act`` -> FusedGemm(A, B, C) with the activation."""

    name, layer, fused_op, operands = "gemm_act", "gemm", FUSED_GEMM, ("a", "b", "c")


class ConvActRule(_LayerActivationRule):
    """Library pattern ``conv_act`` -> FusedConv(X, W, B) with the activation."""

    name, layer, fused_op, operands = "conv_act", "conv", FUSED_CONV, ("x", "weight", "bias")


class RuntimeBiasMatMulRule(Rule):
    """A 2-D MatMul + an Add of a bias that is *not* a constant -> a standard Gemm (its C may
    be computed at run time); nothing more fuses into it.  Its near misses are matmul_add's,
    so it reports nothing itself."""

    name = "matmul_runtime_bias"
    declines = False
    reported = False

    def pattern(self) -> Pattern:
        return op("Add", op("MatMul", any_value().bind("x"), any_value().bind("weight"))
                  .bind("matmul"), (~const()).bind("bias")).bind("add")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | None:
        if not _is_gemm_shaped(match["x"], match["weight"], match["bias"]):
            return None
        return self.replace(graph, ctx, [match["matmul"], match["add"]], "Gemm",
                            _linear_operands(match), name=match["matmul"].name)


@register_pass
class FuseLinearBiasAct(RewritePass):
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
    rules = (MatMulBiasActRule(), MATMUL_ADD, GemmActRule(), ConvActRule(),
             RuntimeBiasMatMulRule())

    def note(self, graph: Graph, made: list[Node]) -> str:
        counts = Counter(node.op_type for node in made)
        return "made " + ", ".join(f"{n} {op_type}" for op_type, n in counts.items())


def _linear_operands(match: Match) -> list[Value]:
    return [match["x"], match["weight"], match["bias"]]


def _is_gemm_shaped(x: Value, weight: Value, bias: Value) -> bool:
    """x [M, K] · W [K, N] + bias that broadcasts to [M, N] without growing it: a Gemm."""
    shape = bias.static_shape()
    if shape is None or weight.shape is None:
        return False
    return (x.rank == 2 and weight.rank == 2 and is_float(x.elem_type) and len(shape) <= 2
            and (len(shape) < 2 or shape[0] == 1)
            and (not shape or shape[-1] in (1, weight.shape[-1])))
