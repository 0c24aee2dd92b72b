"""Which ONNX ops are element-wise: the vocabulary the fusion and layout passes share.

An element-wise op computes each output element from the input elements at the same position
(after numpy-style broadcasting).  Two consequences make these ops the compiler's favourite
material: a chain of them can run as one loop that keeps values in registers (fusion), and they
do not care how a tensor is laid out in memory, as long as every operand uses the same layout
(layout conversion).
"""

from __future__ import annotations

from ...ir import Node

UNARY_ELEMENTWISE = frozenset({
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu", "Cos",
    "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "Identity",
    "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not", "Reciprocal", "Relu", "Round",
    "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Tan",
    "Tanh", "ThresholdedRelu",
    "Clip",  # its optional min/max inputs are scalars
})
BROADCASTING_ELEMENTWISE = frozenset({
    "Add", "And", "BitShift", "Div", "Equal", "Greater", "GreaterOrEqual", "Less",
    "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Or", "Pow", "PRelu", "Sub", "Sum",
    "Where", "Xor",
})
ELEMENTWISE = UNARY_ELEMENTWISE | BROADCASTING_ELEMENTWISE


def is_elementwise(node: Node) -> bool:
    """A standard-domain element-wise op (fused nodes and custom domains are opaque)."""
    return node.domain == "" and node.body is None and node.op_type in ELEMENTWISE
