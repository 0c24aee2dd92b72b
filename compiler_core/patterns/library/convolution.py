"""Convolution fusions: Conv+BatchNormalization folding and Conv+activation."""

from __future__ import annotations

from ...ir import FUSED_DOMAIN
from ...ir.contrib_shapes import MS_DOMAIN
from ..language import Pattern, any_value, const, op, optional
from .common import FUSABLE_ACTIVATIONS
from .registry import register


def batch_norm(producer: Pattern, weight_axis: int | None = None) -> Pattern:
    """Inference-mode BatchNormalization with constant parameters, fed by ``producer``;
    with ``weight_axis`` the BN has one channel per slice of the weight along that axis."""
    scale = const().bind("scale")
    if weight_axis is not None:
        scale = scale.same_size_as("weight", axis=weight_axis)
    return op("BatchNormalization", producer, scale, const().bind("b"), const().bind("mean"),
              const().bind("var"), training_mode=0).bind("bn")


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


@register("conv_bn")
def conv_bn() -> Pattern:
    """Conv followed by inference-mode BatchNormalization, all parameters constant.

    Why: BN is an affine map per output channel, so it folds into the Conv's weight and bias
    at compile time — one op and one full pass over the activation disappear.
    The Conv output must be read by the BN only.

    Bindings: ``conv``, ``bn`` (nodes; epsilon is ``bn.attrs['epsilon']``, default 1e-5),
    ``x`` (Conv input), ``weight``, ``bias`` (None when the Conv has none), ``scale``, ``b``,
    ``mean``, ``var`` (BN constants).
    """
    conv = op("Conv", any_value().bind("x"), const().bind("weight"),
              optional(const().bind("bias"))).bind("conv")
    return batch_norm(conv, weight_axis=0).described_as(
        "Conv (constant weight, optional constant bias) followed by inference-mode "
        "BatchNormalization with constant parameters.")


@register("conv_act")
def conv_act() -> Pattern:
    """Conv followed by an activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid,
    HardSwish, Gelu, or Clip with constant bounds).

    Why: the activation can run in the Conv's epilogue while the output is still in registers
    or on-chip memory, saving a round trip of the whole tensor through DRAM.

    Bindings: ``conv``, ``act`` (nodes), ``x``, ``weight``, ``bias`` (None when absent),
    ``clip_min``, ``clip_max`` (Clip bounds, None otherwise).
    """
    conv = op("Conv", any_value().bind("x"), any_value().bind("weight"),
              optional(any_value().bind("bias"))).bind("conv")
    return activation_after(conv).described_as(
        "Conv followed by a fusable activation (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, "
        "HardSwish, Gelu, or Clip with constant bounds).")
