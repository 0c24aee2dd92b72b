"""How much arithmetic one ONNX op performs: FLOPs from its input and output shapes.

Conventions, so a student can recompute any number by hand:
- a multiply-accumulate counts as 2 ops (the usual "FLOPs" of MatMul/Conv = 2 * MACs), and a
  bias added to the result 1 op per output element;
- an element-wise op counts 1 op per output element (transcendentals included: accelerators
  evaluate them in special units at about the rate of a multiply); a variadic one (Sum, Max,
  ...) with n inputs counts n - 1;
- an op that does several element-wise steps counts them per output element (``PER_ELEMENT``):
  Softmax is max, subtract, exp, sum, divide = 5, the same as its decomposed form;
- a reduction counts 1 op per input element, a pooling window 1 op per window element;
- pure data movement (Transpose, Gather, Concat, Slice, Pad, Cast, ...) and metadata-only ops
  (Reshape, Squeeze, Identity, ...) do 0 ops;
- a fused node does the sum of its body's ops (the caller adds them up);
- onnxruntime's operators (com.microsoft) and ONNX's composite Attention and RotaryEmbedding
  count as their decomposed forms would (`contrib_flops`).
Shapes come in already resolved to ints; ``None`` means "absent or cannot say".
"""

from __future__ import annotations

from math import prod
from typing import Callable, Sequence

from .contrib_flops import RULES as CONTRIB_RULES
from .flop_rules import item_at, numel
from .ml_flops import RULES as ML_RULES

Shape = Sequence[int]

# Ops that copy or select elements without arithmetic.
DATA_MOVEMENT = frozenset({
    "Transpose", "Gather", "GatherElements", "GatherND", "Concat", "Slice", "Split", "Pad",
    "Cast", "CastLike", "Tile", "Expand", "Scatter", "ScatterND", "ScatterElements",
    "DepthToSpace", "SpaceToDepth", "Resize", "Upsample", "Compress", "NonZero", "OneHot",
    "Range", "Trilu", "ReverseSequence", "ConstantOfShape", "EyeLike",
})
# Data-movement ops that read only the elements they output, not their whole data input
# (an embedding lookup reads `seq` rows of the table, not the table).
SELECTING = frozenset({"Gather", "GatherElements", "GatherND", "Slice", "Compress"})
# Ops that only reinterpret metadata: no arithmetic and (on any real runtime) no copy.
METADATA_ONLY = frozenset({
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant",
    "Dropout",
})
# One op per output element; each output element depends only on the inputs at its position.
ELEMENTWISE = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Neg", "Abs", "Relu", "LeakyRelu", "PRelu", "Elu",
    "Selu", "Celu", "Sigmoid", "HardSigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Erf",
    "Floor", "Ceil", "Round", "Sign", "Clip", "Softplus", "Softsign", "Sin", "Cos", "Tan",
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Equal", "Less",
    "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf",
    "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Mish",
    "ThresholdedRelu", "Shrink", "Where",
})
VARIADIC_ELEMENTWISE = frozenset({"Sum", "Max", "Min", "Mean"})
# Ops doing several element-wise steps per output element.
PER_ELEMENT = {
    "Softmax": 5, "LogSoftmax": 6, "Hardmax": 2, "CumSum": 1,
    "LayerNormalization": 7,            # mean, subtract, square, mean, divide, scale, shift
    "RMSNormalization": 5,              # square, mean, root, divide, scale
    "BatchNormalization": 2,            # inference: x * scale' + shift'
    "InstanceNormalization": 7, "GroupNormalization": 7, "MeanVarianceNormalization": 5,
    "LpNormalization": 3,
    "HardSwish": 4,
    "QuantizeLinear": 3, "DequantizeLinear": 2, "DynamicQuantizeLinear": 4,
}
# Gelu: x/sqrt2, erf, +1, *x, *0.5 (5, the decomposed erf form); the tanh form
# x^3, *c, +x, *sqrt(2/pi), tanh, +1, *x, *0.5 (8).
_GELU_STEPS = {"none": 5, "tanh": 8}
REDUCTIONS = frozenset({
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "TopK",
    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
})
# Recurrent cells: gates per step and element-wise ops per hidden unit per step
# (bias adds, activations, the cell and state updates).
_RNN_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_RNN_CELL_OPS = {"RNN": 2, "GRU": 11, "LSTM": 13}


def _matmul_at(a_index: int) -> Callable[[dict, list, list], int | None]:
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        a, out = item_at(ins, a_index), item_at(outs, 0)
        if not a or out is None:
            return None
        return 2 * numel(out) * a[-1]
    return rule


def _gemm(attrs: dict, ins: list, outs: list) -> int | None:
    a, out = item_at(ins, 0), item_at(outs, 0)
    if a is None or out is None or len(a) != 2:
        return None
    k = a[0] if attrs.get("transA", 0) else a[1]
    bias = numel(out) if item_at(ins, 2) is not None else 0
    return 2 * numel(out) * k + bias


def _conv_at(weight_index: int, bias_index: int | None) -> Callable[[dict, list, list],
                                                                     int | None]:
    """Conv-like rule: weight [M, C/group, k...], so each output does prod(weight[1:]) MACs."""
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        weight, out = item_at(ins, weight_index), item_at(outs, 0)
        if weight is None or out is None:
            return None
        has_bias = bias_index is not None and item_at(ins, bias_index) is not None
        return 2 * numel(out) * int(prod(weight[1:])) + (numel(out) if has_bias else 0)
    return rule


def _conv_transpose(attrs: dict, ins: list, outs: list) -> int | None:
    """Every input element scatters into prod(weight[1:]) = (M/group) * k... outputs."""
    x, weight, out = item_at(ins, 0), item_at(ins, 1), item_at(outs, 0)
    if x is None or weight is None or out is None:
        return None
    bias = numel(out) if item_at(ins, 2) is not None else 0
    return 2 * numel(x) * int(prod(weight[1:])) + bias


def _pool(attrs: dict, ins: list, outs: list) -> int | None:
    out, kernel = item_at(outs, 0), attrs.get("kernel_shape")
    return None if out is None or not kernel else numel(out) * int(prod(kernel))


def _reduction(attrs: dict, ins: list, outs: list) -> int | None:
    return numel(item_at(ins, 0))


def _variadic(attrs: dict, ins: list, outs: list) -> int | None:
    out = numel(item_at(outs, 0))
    return None if out is None else out * max(1, len(ins) - 1)


def _gelu(attrs: dict, ins: list, outs: list) -> int | None:
    out = numel(item_at(outs, 0))
    steps = _GELU_STEPS.get(str(attrs.get("approximate", "none")))
    return None if out is None or steps is None else out * steps


def _lrn(attrs: dict, ins: list, outs: list) -> int | None:
    """A window of `size` squares summed, then scale, power and divide."""
    out, size = numel(item_at(outs, 0)), attrs.get("size")
    return None if out is None or not size else out * (2 * int(size) + 3)


def _rnn(op_type: str) -> Callable[[dict, list, list], int | None]:
    """X [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1); W [dirs, G*H, input]."""
    gates, cell_ops = _RNN_GATES[op_type], _RNN_CELL_OPS[op_type]

    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        x, w = item_at(ins, 0), item_at(ins, 1)
        if x is None or w is None or len(x) != 3 or len(w) != 3:
            return None
        steps_and_batch = x[0] * x[1]
        directions, hidden, inputs = w[0], w[1] // gates, x[2]
        per_step = 2 * gates * hidden * (inputs + hidden) + cell_ops * hidden
        return steps_and_batch * directions * per_step
    return rule


def _einsum(attrs: dict, ins: list, outs: list) -> int | None:
    """2 * (product of every distinct index's size), read from the equation."""
    equation = str(attrs.get("equation", "")).replace(" ", "")
    terms = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, ins):
        if shape is None or "." in term or len(term) != len(shape):
            return None
        sizes.update(zip(term, shape))
    return 2 * int(prod(sizes.values())) if sizes else None


_RULES: dict[str, Callable[[dict, list, list], int | None]] = {
    "MatMul": _matmul_at(0), "MatMulInteger": _matmul_at(0),
    "QLinearMatMul": _matmul_at(0), "Gemm": _gemm,
    "Conv": _conv_at(1, 2), "ConvInteger": _conv_at(1, None), "QLinearConv": _conv_at(3, 8),
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool, "AveragePool": _pool, "LpPool": _pool, "LRN": _lrn,
    "Gelu": _gelu, "Einsum": _einsum,
    **{op: _rnn(op) for op in _RNN_GATES},
    **{op: _variadic for op in VARIADIC_ELEMENTWISE},
    **{op: _reduction for op in REDUCTIONS},
}


def op_flops(op_type: str, attrs: dict, ins: list[Shape | None],
             outs: list[Shape | None], domain: str = "") -> int | None:
    """FLOPs of one (non-fused) op, or None when the op or its shapes are unknown."""
    contrib = CONTRIB_RULES.get((domain, op_type)) or ML_RULES.get((domain, op_type))
    if contrib is not None:
        return contrib(attrs, ins, outs)
    if domain:                 # another runtime's op of the same name is not ONNX's
        return None
    if op_type in _RULES:
        return _RULES[op_type](attrs, ins, outs)
    if op_type in DATA_MOVEMENT or op_type in METADATA_ONLY:
        return 0
    out = numel(item_at(outs, 0))
    if op_type in ELEMENTWISE:
        return out
    if op_type in PER_ELEMENT:
        return None if out is None else out * PER_ELEMENT[op_type]
    return None


def is_priced(op_type: str, domain: str = "") -> bool:
    """True if `op_flops` knows the op (it may still lack the shapes or attributes it needs)."""
    if (domain, op_type) in CONTRIB_RULES or (domain, op_type) in ML_RULES:
        return True
    return not domain and (op_type in _RULES or op_type in DATA_MOVEMENT
                           or op_type in METADATA_ONLY or op_type in ELEMENTWISE
                           or op_type in PER_ELEMENT)


def is_elementwise(op_type: str) -> bool:
    """Each output element depends only on the input elements at the same position."""
    return op_type in ELEMENTWISE or op_type in VARIADIC_ELEMENTWISE
