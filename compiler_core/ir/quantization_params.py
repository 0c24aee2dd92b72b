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

from .graph import Graph
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


def broken_scales(graph: Graph) -> str | None:
    """A warning naming the quantization scales that are not finite positive numbers (None
    when there are none).  Codes read with such a scale dequantize to inf or NaN, so what the
    model computes from there is meaningless, whatever a compiler or runtime does with it; a
    calibration range reaching infinity (an attention mask of -inf) is the usual cause."""
    found = []
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        for tensor, _, scale, _ in _SLOTS.get(node.op_type, ()):
            value = node.input(scale) if scale is not None else None
            if value is None or not value.is_constant or value.stored is not None and \
                    value.stored.nbytes > MAX_READ_BYTES:
                continue
            data = np.asarray(value.constant_value(), dtype=np.float64)
            bad = data[~(np.isfinite(data) & (data > 0))]
            if bad.size:
                found.append(f"{node.op_type} {node.name!r} {tensor} scale {_number(bad[0])}")
    if not found:
        return None
    listed = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    many = len(found) > 1
    what = "scales are not finite positive numbers" if many else \
        "scale is not a finite positive number"
    return (f"{len(found)} quantization {what} ({listed}): codes read with "
            f"{'them' if many else 'it'} dequantize to inf or NaN, "
            f"so the outputs computed from there mean nothing (the usual cause: a calibration "
            f"range reaching infinity, such as an attention mask of -inf); quantize again "
            f"with {'those tensors' if many else 'that tensor'} left in float")
