"""How much arithmetic one ONNX op performs: FLOPs from its input and output shapes.

Conventions, so a student can recompute any number by hand:
- a multiply-accumulate counts as 2 ops (the usual "FLOPs" of MatMul/Conv = 2 * MACs);
- an element-wise op counts 1 op per output element (transcendentals included: accelerators
  evaluate them in special units at about the rate of a multiply), except the few ops listed
  in ``_PER_ELEMENT`` that do several steps per element (Softmax, LayerNorm, GELU, ...);
- pure data movement (Transpose, Gather, Concat, Slice, Pad, Cast, ...) does 0 ops;
- a fused node does the sum of its body's ops.
Shapes come in already resolved to ints (``dims`` of the caller); ``None`` means "cannot say".
"""

from __future__ import annotations

from math import prod
from typing import Callable, Sequence

Shape = Sequence[int]

DATA_MOVEMENT = {
    "Transpose", "Gather", "GatherElements", "GatherND", "Concat", "Slice", "Split", "Pad",
    "Cast", "CastLike", "Tile", "Expand", "ScatterND", "ScatterElements", "DepthToSpace",
    "SpaceToDepth", "Resize", "Upsample", "Compress", "NonZero", "Where", "OneHot", "Range",
    "Trilu", "ReverseSequence", "CumSum",
}
# Ops that only reinterpret metadata: no arithmetic and (on any real runtime) no copy.
METADATA_ONLY = {
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant",
    "ConstantOfShape", "Dropout",
}
ELEMENTWISE = {
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Mod", "Neg", "Abs",
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "Tanh",
    "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Floor", "Ceil", "Round", "Sign", "Clip",
    "Softplus", "Softsign", "Sin", "Cos", "Tan", "Equal", "Less", "Greater", "LessOrEqual",
    "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf", "BitShift", "Mish",
    "ThresholdedRelu", "Shrink", "BiasAdd",
}
# Ops doing several element-wise steps per output element.
_PER_ELEMENT = {
    "Softmax": 5, "LogSoftmax": 6, "LayerNormalization": 8, "SkipLayerNormalization": 9,
    "SimplifiedLayerNormalization": 6, "BatchNormalization": 2, "InstanceNormalization": 8,
    "Gelu": 8, "FastGelu": 8, "BiasGelu": 9, "QuickGelu": 4, "HardSwish": 4,
    "QuantizeLinear": 3, "DequantizeLinear": 2, "DynamicQuantizeLinear": 4,
    "LpNormalization": 3,
}
_REDUCTIONS = {
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin",
    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
}


def _numel(shape: Shape | None) -> int | None:
    return None if shape is None else int(prod(shape))


def _matmul(attrs: dict, ins: list, outs: list) -> int | None:
    a, out = ins[0], outs[0]
    if a is None or out is None or not a:
        return None
    return 2 * _numel(out) * a[-1]


def _gemm(attrs: dict, ins: list, outs: list) -> int | None:
    a, out = ins[0], outs[0]
    if a is None or out is None or len(a) != 2:
        return None
    k = a[0] if attrs.get("transA", 0) else a[1]
    bias = _numel(out) if len(ins) > 2 and ins[2] is not None else 0
    return 2 * _numel(out) * k + bias


def _conv(attrs: dict, ins: list, outs: list) -> int | None:
    weight, out = ins[1] if len(ins) > 1 else None, outs[0]
    if weight is None or out is None:
        return None
    macs_per_output = prod(weight[1:])  # (Cin / group) * kernel elements
    bias = _numel(out) if len(ins) > 2 and ins[2] is not None else 0
    return 2 * _numel(out) * macs_per_output + bias


def _conv_transpose(attrs: dict, ins: list, outs: list) -> int | None:
    x, weight = ins[0], ins[1] if len(ins) > 1 else None
    if x is None or weight is None:
        return None
    return 2 * _numel(x) * prod(weight[1:])


def _pool(attrs: dict, ins: list, outs: list) -> int | None:
    out = outs[0]
    kernel = attrs.get("kernel_shape")
    return None if out is None or not kernel else _numel(out) * int(prod(kernel))


def _reduction(attrs: dict, ins: list, outs: list) -> int | None:
    return _numel(ins[0])


def _einsum(attrs: dict, ins: list, outs: list) -> int | None:
    """2 * (product of every distinct index's size), read from the equation."""
    equation = str(attrs.get("equation", "")).replace(" ", "")
    lhs = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for term, shape in zip(lhs, ins):
        if shape is None or "." in term or len(term) != len(shape):
            return None
        sizes.update(zip(term, shape))
    return 2 * int(prod(sizes.values())) if sizes else None


_RULES: dict[str, Callable[[dict, list, list], int | None]] = {
    "MatMul": _matmul, "MatMulInteger": _matmul, "QLinearMatMul": _matmul,
    "FusedMatMul": _matmul, "Gemm": _gemm, "Conv": _conv, "ConvInteger": _conv,
    "QLinearConv": _conv, "FusedConv": _conv, "NhwcConv": _conv,
    "ConvTranspose": _conv_transpose, "MaxPool": _pool, "AveragePool": _pool, "LpPool": _pool,
    "Einsum": _einsum,
}


def op_flops(op_type: str, attrs: dict, ins: list[Shape | None],
             outs: list[Shape | None]) -> int | None:
    """FLOPs of one (non-fused) op, or None when the op or its shapes are unknown."""
    if op_type in _RULES:
        return _RULES[op_type](attrs, ins, outs)
    if op_type in DATA_MOVEMENT or op_type in METADATA_ONLY:
        return 0
    if op_type in _REDUCTIONS:
        return _reduction(attrs, ins, outs)
    out = _numel(outs[0]) if outs else None
    if op_type in ELEMENTWISE:
        return out
    if op_type in _PER_ELEMENT:
        return None if out is None else out * _PER_ELEMENT[op_type]
    return None
