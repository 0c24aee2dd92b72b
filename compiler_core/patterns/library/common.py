"""Small helpers the library patterns share."""

from __future__ import annotations

from ...ir import Node, Value
from ..checks import predicate
from ..language import ConstPattern, const

# Activations a Conv/Gemm/MatMul kernel can apply in its epilogue: the ones onnxruntime fuses
# into FusedConv/FusedGemm, plus Gelu (its BiasGelu).  Clip takes min/max inputs.
FUSABLE_ACTIVATIONS = ("Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                       "Gelu")

SCALAR = predicate(lambda a: a.size == 1, "(a scalar)")


def scalar_const() -> ConstPattern:
    return const(where=SCALAR)


def as_float(value: Value) -> float:
    """A scalar constant's value as a Python float (for bindings such as epsilon)."""
    return float(value.constant_value().reshape(-1)[0])


def attr_or_default(name: str, default):
    """An extractor binding a node's attribute (with the ONNX default when omitted)."""
    def extract(node: Node):
        return node.attrs.get(name, default)
    return extract
