"""Which inputs of a quantized op are the scales and zero points of which tensor.

An integer op's meaning hides in its small inputs: QLinearConv reads x, x_scale,
x_zero_point, w, ... and what a tensor's codes stand for is scale · (code − zero point).
This table names those slots per op (ONNX's own ops, onnxruntime's contrib ops and GraphLab's
fused QDQ groups, which take onnxruntime's operands), so the app and reports can say
"w: per channel (axis 0), 24 scales 0.0011 … 0.0153, zero point 0".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .node import Node
from .value import Value

MAX_READ_BYTES = 16 * 1024   # larger scale tensors are described by their shape alone
# op -> (tensor, slot of its codes or None, slot of its scale or None, slot of its zero point)
_SLOTS: dict[str, tuple[tuple[str, int | None, int | None, int | None], ...]] = {
    "QuantizeLinear": (("y", None, 1, 2),),
    "DequantizeLinear": (("x", 0, 1, 2),),
    "QLinearConv": (("x", 0, 1, 2), ("w", 3, 4, 5), ("y", None, 6, 7)),
    "QLinearMatMul": (("a", 0, 1, 2), ("b", 3, 4, 5), ("y", None, 6, 7)),
    "MatMulInteger": (("a", 0, None, 2), ("b", 1, None, 3)),
    "ConvInteger": (("x", 0, None, 2), ("w", 1, None, 3)),
    "QLinearAdd": (("a", 0, 1, 2), ("b", 3, 4, 5), ("c", None, 6, 7)),
    "QLinearMul": (("a", 0, 1, 2), ("b", 3, 4, 5), ("c", None, 6, 7)),
    "QLinearGlobalAveragePool": (("x", 0, 1, 2), ("y", None, 3, 4)),
    "QLinearAveragePool": (("x", 0, 1, 2), ("y", None, 3, 4)),
    "QLinearSigmoid": (("x", 0, 1, 2), ("y", None, 3, 4)),
    "QLinearLeakyRelu": (("x", 0, 1, 2), ("y", None, 3, 4)),
    "QGemm": (("a", 0, 1, 2), ("b", 3, 4, 5), ("y", None, 7, 8)),
    "DynamicQuantizeMatMul": (("b", 1, 2, 3),),
    "MatMulIntegerToFloat": (("a", 0, 2, 4), ("b", 1, 3, 5)),
}


@dataclass(frozen=True)
class QuantizedTensor:
    """One tensor of a quantized op: its role, and its scale and zero point as text."""

    tensor: str
    scale: str
    zero_point: str


def quantization_params(node: Node) -> list[QuantizedTensor]:
    """The scales and zero points ``node`` reads, one row per quantized tensor ([] for an op
    that has none).  DynamicQuantizeLinear computes its own at run time."""
    if node.op_type == "DynamicQuantizeLinear":
        return [QuantizedTensor("y", "computed at run time (output 1)",
                                "computed at run time (output 2)")]
    axis = node.attrs.get("axis")
    rows = []
    for tensor, codes, scale, zero in _SLOTS.get(node.op_type, ()):
        name = tensor
        if codes is not None and node.input(codes) is not None:
            name = f"{tensor} ({node.input(codes).name})"
        rows.append(QuantizedTensor(name, _describe(node.input(scale), axis, "scale"),
                                    _describe(node.input(zero), axis, "zero point")))
    return rows


def _describe(value: Value | None, axis, what: str) -> str:
    if value is None:
        return "none (0)" if what == "zero point" else "none"
    if not value.is_constant:
        return f"computed at run time ({value.name})"
    stored = value.stored
    if stored.nbytes > MAX_READ_BYTES:
        return f"{stored.size} values {list(stored.shape)} ({value.name})"
    data = np.asarray(value.constant_value())
    kind = str(data.dtype)
    if data.size == 1:
        return f"{_number(data.reshape(-1)[0])} ({kind})"
    where = f" (axis {axis})" if axis is not None else ""
    flat = data.reshape(-1)
    if np.all(flat == flat[0]):
        return f"per channel{where}: {data.size} × {_number(flat[0])} ({kind})"
    return (f"per channel{where}: {data.size} values {_number(flat.min())} … "
            f"{_number(flat.max())} ({kind})")


def _number(x) -> str:
    return f"{float(x):.4g}" if np.issubdtype(np.asarray(x).dtype, np.floating) else str(int(x))
