"""Fully connected layers: MatMul/Gemm with bias, BatchNormalization folding, activations."""

from __future__ import annotations

from ..language import Pattern, any_value, const, op, optional
from .convolution import activation_after, batch_norm
from .registry import register


@register("linear_bn")
def linear_bn() -> Pattern:
    """MatMul or Gemm (with or without a constant bias) followed by inference-mode
    BatchNormalization with constant parameters.

    Why: like Conv+BN, the BN folds into the weight and bias of the linear layer.
    The bias may be a Gemm's third input or an Add of a constant after the MatMul.

    Bindings: ``linear`` (the MatMul or Gemm node), ``add`` (the bias Add node, None when the
    bias is absent or inside the Gemm), ``bn``, ``x``, ``weight``, ``bias`` (None when absent),
    ``scale``, ``b``, ``mean``, ``var``.
    """
    x, weight = any_value().bind("x"), const().bind("weight")
    matmul = op("MatMul", x, weight).bind("linear")
    gemm = op("Gemm", x, weight, optional(const().bind("bias")), transA=0).bind("linear")
    linear = op("Add", matmul, const().bind("bias")).bind("add") | matmul | gemm
    return batch_norm(linear).described_as(
        "MatMul or Gemm with a constant weight, with or without a constant bias, followed by "
        "inference-mode BatchNormalization with constant parameters.")


@register("matmul_add")
def matmul_add() -> Pattern:
    """MatMul followed by an Add of a constant bias (in either operand order).

    Why: MatMul+bias is a Gemm (or a fused MatMul with bias epilogue), one kernel instead of
    two; it only works when the bias is a constant, not another activation.

    Bindings: ``matmul``, ``add`` (nodes), ``x``, ``weight`` (MatMul inputs), ``bias``.
    """
    matmul = op("MatMul", any_value().bind("x"), any_value().bind("weight")).bind("matmul")
    return op("Add", matmul, const().bind("bias")).bind("add").described_as(
        "MatMul whose output gets a constant bias added (in either operand order).")


@register("gemm_act")
def gemm_act() -> Pattern:
    """Gemm followed by an activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid,
    HardSwish, Gelu, or Clip with constant bounds).

    Why: the activation runs in the Gemm's epilogue instead of as a separate pass over memory.

    Bindings: ``gemm``, ``act`` (nodes), ``a``, ``b``, ``c`` (Gemm inputs; ``c`` None when
    absent), ``clip_min``, ``clip_max`` (Clip bounds, None otherwise).
    """
    gemm = op("Gemm", any_value().bind("a"), any_value().bind("b"),
              optional(any_value().bind("c"))).bind("gemm")
    return activation_after(gemm).described_as(
        "Gemm followed by a fusable activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, "
        "HardSwish, Gelu, or Clip with constant bounds).")
