"""Linear layers with their bias and activation: MatMul + bias -> Gemm, and fused epilogues."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from ...ir import FUSED_DOMAIN, Graph, Node, Value
from ...ir.contrib_shapes import MS_DOMAIN
from ...ir.dtypes import is_float
from ...patterns import Match, Pattern, any_value, const, op, optional
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import Rule, RuleSet

FUSED_GEMM = "FusedGemm"
FUSED_CONV = "FusedConv"
FUSED_MATMUL_BIAS = "FusedMatMulBias"
# Activations a Conv/Gemm/MatMul kernel can apply in its epilogue: the ones onnxruntime fuses
# into FusedConv/FusedGemm, plus Gelu (its BiasGelu).  Clip takes min/max inputs.
FUSABLE_ACTIVATIONS = ("Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                       "Gelu")
ACTIVATIONS_TEXT = ("a fusable activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, "
                    "HardSwish, Gelu, or Clip with constant bounds)")


def activation_after(producer: Pattern) -> Pattern:
    """A fusable activation reading ``producer``; Clip needs constant bounds; Gelu may also be
    GraphLab's fused Gelu (what GELU recognition makes below opset 20, where Gelu is no op) or
    onnxruntime's (the same exact GELU, in a model its optimizer wrote)."""
    plain = op(FUSABLE_ACTIVATIONS, producer).bind("act")
    clip = op("Clip", producer, optional(const().bind("clip_min")),
              optional(const().bind("clip_max"))).bind("act")
    fused_gelu = op("Gelu", producer, domain=FUSED_DOMAIN).bind("act")
    ort_gelu = op("Gelu", producer, domain=MS_DOMAIN).bind("act")
    return plain | clip | fused_gelu | ort_gelu


def matmul_add() -> Pattern:
    """MatMul + a constant bias: ``MatMulAddRule``'s pattern, and the start of
    ``MatMulBiasActRule``'s."""
    matmul = op("MatMul", any_value().bind("x"), any_value().bind("weight")).bind("matmul")
    return op("Add", matmul, const().bind("bias")).bind("add").described_as(
        "MatMul whose output gets a constant bias added (in either operand order).")


class MatMulAddRule(Rule):
    """Pattern ``matmul_add`` -> a standard Gemm when 2-D (exactly what Gemm computes), else
    FusedMatMulBias, which keeps the batch dimensions."""

    name = "matmul_add"

    def pattern(self) -> Pattern:
        """MatMul followed by an Add of a constant bias (in either operand order).

        Why: MatMul+bias is a Gemm (or a fused MatMul with bias epilogue), one kernel instead
        of two; it only works when the bias is a constant, not another activation.

        Bindings: ``matmul``, ``add`` (nodes), ``x``, ``weight`` (MatMul inputs), ``bias``.
        """
        return matmul_add()

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
        """``matmul_add`` followed by a fusable activation.

        Why: the bias and the activation run in the layer's epilogue, one kernel for three ops.

        Bindings: those of ``matmul_add``; ``act`` (node), ``clip_min``, ``clip_max`` (Clip
        bounds, None otherwise).
        """
        return activation_after(matmul_add()).described_as(
            f"MatMul plus a constant bias, followed by {ACTIVATIONS_TEXT}.")

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
    """Pattern ``gemm_act`` -> FusedGemm(A, B, C) with the activation."""

    name, layer, fused_op, operands = "gemm_act", "gemm", FUSED_GEMM, ("a", "b", "c")

    def pattern(self) -> Pattern:
        """Gemm followed by an activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid,
        HardSwish, Gelu, or Clip with constant bounds).

        Why: the activation runs in the Gemm's epilogue instead of as a separate pass over
        memory.

        Bindings: ``gemm``, ``act`` (nodes), ``a``, ``b``, ``c`` (Gemm inputs; ``c`` None when
        absent), ``clip_min``, ``clip_max`` (Clip bounds, None otherwise).
        """
        gemm = op("Gemm", any_value().bind("a"), any_value().bind("b"),
                  optional(any_value().bind("c"))).bind("gemm")
        return activation_after(gemm).described_as(f"Gemm followed by {ACTIVATIONS_TEXT}.")


class ConvActRule(_LayerActivationRule):
    """Pattern ``conv_act`` -> FusedConv(X, W, B) with the activation."""

    name, layer, fused_op, operands = "conv_act", "conv", FUSED_CONV, ("x", "weight", "bias")

    def pattern(self) -> Pattern:
        """Conv followed by an activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid,
        HardSwish, Gelu, or Clip with constant bounds).

        Why: the activation can run in the Conv's epilogue while the output is still in
        registers or on-chip memory, saving a round trip of the whole tensor through DRAM.

        Bindings: ``conv``, ``act`` (nodes), ``x``, ``weight``, ``bias`` (None when absent),
        ``clip_min``, ``clip_max`` (Clip bounds, None otherwise).
        """
        conv = op("Conv", any_value().bind("x"), any_value().bind("weight"),
                  optional(any_value().bind("bias"))).bind("conv")
        return activation_after(conv).described_as(f"Conv followed by {ACTIVATIONS_TEXT}.")


class RuntimeBiasMatMulRule(Rule):
    """A 2-D MatMul + an Add of a bias that is *not* a constant -> a standard Gemm (its C may
    be computed at run time); nothing more fuses into it.  Its near misses are matmul_add's,
    so it reports nothing itself."""

    name = "matmul_runtime_bias"
    declines = False
    reported = False

    def pattern(self) -> Pattern:
        """MatMul followed by an Add of a bias computed at run time.

        Why: Gemm's C operand may be computed at run time, so a 2-D one is still a Gemm.

        Bindings: ``matmul``, ``add`` (nodes), ``x``, ``weight``, ``bias``.
        """
        return op("Add", op("MatMul", any_value().bind("x"), any_value().bind("weight"))
                  .bind("matmul"), (~const()).bind("bias")).bind("add")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | None:
        if not _is_gemm_shaped(match["x"], match["weight"], match["bias"]):
            return None
        return self.replace(graph, ctx, [match["matmul"], match["add"]], "Gemm",
                            _linear_operands(match), name=match["matmul"].name)


def _note(graph: Graph, made: list[Node]) -> str:
    counts = Counter(node.op_type for node in made)
    return "made " + ", ".join(f"{n} {op_type}" for op_type, n in counts.items())


FUSE_LINEAR_BIAS_ACT = register_pass(RuleSet(
    "fuse_linear_bias_act", "fusion", note=_note,
    rules=(MatMulBiasActRule(), MATMUL_ADD, GemmActRule(), ConvActRule(),
           RuntimeBiasMatMulRule()),
    doc="""Fuse a Conv, Gemm or MatMul with its constant bias and the activation after it into
    one node (FusedConv, FusedGemm, FusedMatMulBias) whose body is the original ops.

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
    """))


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
