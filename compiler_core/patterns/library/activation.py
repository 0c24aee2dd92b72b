"""Activations written out in primitive ops: GELU (erf and tanh forms), SiLU / Swish, and the
SwiGLU gate of LLM MLPs."""

from __future__ import annotations

import math

from ...ir.contrib_shapes import MS_DOMAIN
from ..language import Pattern, any_value, const, op
from .common import as_float, scalar_const
from .registry import register

SQRT_2 = math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
QUICK_GELU_ALPHA = 1.702   # onnxruntime's QuickGelu when its alpha is omitted


def _erf_part(x: Pattern) -> Pattern:
    """erf(x / √2), with the division also written as a Mul by 1/√2."""
    scaled = op("Div", x, const(SQRT_2)) | op("Mul", x, const(1.0 / SQRT_2))
    return op("Erf", scaled).bind("erf").tag("form", "erf")


def _tanh_part(x: Pattern) -> Pattern:
    """tanh(√(2/π)·(x + 0.044715·x³)), with x³ as Pow(x, 3) or x·x·x."""
    cube = op("Pow", x, const(3.0)) | op("Mul", op("Mul", x, x), x)
    inner = op("Add", x, op("Mul", const(0.044715), cube))
    return op("Tanh", op("Mul", const(SQRT_2_OVER_PI), inner)).bind("tanh").tag("form", "tanh")


@register("gelu")
def gelu() -> Pattern:
    """GELU written out: x·0.5·(1 + erf(x/√2)) or 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))),
    with the three products grouped in any of the ways exporters write them (0.5·(x·(1+…)),
    x·(0.5·(1+…)), (x·0.5)·(1+…)) and every operand order of Add and Mul.

    Why: a dozen element-wise ops, each a full pass over the activation, become one Gelu
    (or FastGelu for the tanh form) kernel.

    Bindings: ``input`` (x), ``form`` ("erf" or "tanh"), ``erf`` / ``tanh`` (the Erf or Tanh
    node; the other one is None).  The GELU's output is the root node's output.
    """
    x = any_value().bind("input")
    half = const(0.5)
    one_plus = op("Add", _erf_part(x) | _tanh_part(x), const(1.0))
    return (op("Mul", half, op("Mul", x, one_plus))
            | op("Mul", x, op("Mul", half, one_plus))
            | op("Mul", op("Mul", x, half), one_plus)).described_as(
        "GELU written out in primitive ops, in its erf form x·0.5·(1+erf(x/√2)) or its tanh "
        "form 0.5·x·(1+tanh(√(2/π)(x+0.044715x³))), in any common operand order.")


def _swish(x: Pattern) -> Pattern:
    """x·Sigmoid(x), or x·Sigmoid(α·x); the Sigmoid is matched first so it binds x."""
    scaled = op("Mul", x, scalar_const().bind("alpha", as_float))
    return op("Mul", op("Sigmoid", scaled | x).bind("sigmoid"), x)


@register("silu")
def silu() -> Pattern:
    """SiLU (Swish with β = 1) written out: x·Sigmoid(x); or Swish x·Sigmoid(α·x) (α = 1.702
    is CLIP's QuickGELU).  Mul operands in either order.

    Why: two element-wise passes (and the Sigmoid's intermediate in memory) become one
    kernel (onnxruntime's QuickGelu, ONNX's Swish from opset 24).

    Bindings: ``input`` (x), ``alpha`` (float, None for 1), ``sigmoid`` (node).
    """
    return _swish(any_value().bind("input")).described_as(
        "SiLU / Swish written out: x·Sigmoid(x), or x·Sigmoid(α·x).")


@register("swiglu")
def swiglu() -> Pattern:
    """The gate of a SwiGLU MLP: SiLU(gate)·up, the SiLU written out (x·Sigmoid(x), or with
    α) or already one op (ONNX's Swish, onnxruntime's QuickGelu: x·Sigmoid(α·x)); gate and up are usually two projections of the same input
    (Llama, Qwen2, Mistral: down(silu(gate(x)) · up(x))).

    Why: the gated MLP's element-wise part is three passes over its widest activation
    (Sigmoid, ·gate, ·up) with two intermediates in memory; as one kernel it reads gate and
    up once and writes the product once, leaving the MLP as its GEMMs plus one element-wise op.

    Bindings: ``gate``, ``up`` (values), ``alpha`` (float, None for 1).
    """
    gate = any_value().bind("gate")
    swish = (_swish(gate) | op("Swish", gate).bind("alpha", lambda n: n.attrs.get("alpha", 1.0))
             | op("QuickGelu", gate, domain=MS_DOMAIN).bind(
                 "alpha", lambda n: n.attrs.get("alpha", QUICK_GELU_ALPHA)))
    up = any_value().bind("up").where(lambda v, _: not v.is_constant,
                                      "a tensor computed at run time (not a constant scale)",
                                      lambda v, _: "a constant", needs_bindings=False)
    return op("Mul", swish, up).described_as(
        "The gate of a SwiGLU MLP: SiLU(gate)·up, with the SiLU written out or as Swish.")
