"""Small random ONNX models built from the op families the passes rewrite, for differential fuzzing.

``cases()`` is a hypothesis strategy: each example is a valid model (onnx.checker passes and
onnxruntime runs it with its optimizer off) chained from blocks — MatMul/Gemm/Conv with and
without bias, Pad before Conv, BatchNormalization, LayerNorm written out and as the op, GELU in
its erf, tanh and op forms, activations, Transpose/Reshape chains, Dropout/Identity, attention
blocks and near misses of them, Cast to float16/float64 and back, shared weights, intermediates
read several times, graph outputs in the middle of a chain, symbolic batch and seq dims — in
the forms the pattern library matches and in forms that should *not* match.  Weights come from
a drawn seed, so a case is reproducible from hypothesis's seed alone.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest import mock

import numpy as np
import onnx
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers
from hypothesis.internal.floats import float_to_int
from onnx import TensorProto, helper, numpy_helper
from sortedcontainers import SortedSet

OPSETS = range(20, 12, -1)  # newest first: hypothesis draws early elements more often
ELEM_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
              np.dtype(np.float64): TensorProto.DOUBLE}
# float64 kernels onnxruntime's CPU provider lacks: blocks needing them skip float64 regions.
NO_FLOAT64 = {"Erf", "Gelu", "LeakyRelu", "Conv"}
MS_DOMAIN = "com.microsoft"
SPATIAL = 6  # image height and width: fixed, so Conv and Pad shapes stay easy to follow


@dataclass
class Case:
    """A generated model, the sizes its symbolic dims are run at, and whether the pipeline is
    told those sizes (``specialize``: the O1 pass that bakes them in then fires)."""

    model: onnx.ModelProto
    bindings: dict[str, int]
    specialize: bool
    blocks: list[str] = field(default_factory=list)

    def describe(self) -> str:
        opset = self.model.opset_import[0].version
        return (f"opset {opset}, {len(self.model.graph.node)} nodes: {' → '.join(self.blocks)}"
                f"; dims {self.bindings}{' (specialized)' if self.specialize else ''}")


class _Builder:
    """The model under construction: nodes, weights, inputs, outputs, and the running tensor's
    dtype and width (last dim, or channels of an image)."""

    def __init__(self, rng: np.random.Generator, opset: int, family: str, width: int):
        self.rng, self.opset, self.family, self.width = rng, opset, family, width
        self.dtype = np.dtype(np.float32)
        self.nodes: list = []
        self.initializers: dict[str, np.ndarray] = {}
        self.inputs: list = []
        self.value_info: list = []          # types onnx cannot infer (onnxruntime's ops)
        self.outputs: dict[str, int] = {}  # name -> elem type, in order
        self.blocks: list[str] = []
        self._count = 0

    @property
    def rank(self) -> int:
        return {"matrix": 2, "sequence": 3, "image": 4}[self.family]

    def fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs) -> list[str]:
        names = [self.fresh(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.fresh(op), **attrs))
        return names

    def one(self, op: str, inputs: list[str], **attrs) -> str:
        return self.node(op, inputs, **attrs)[0]

    def contrib(self, op: str, inputs: list[str], **attrs) -> str:
        """One output of onnxruntime's operator ``op`` (domain com.microsoft), shaped as the
        running tensor; its type is written down, as onnx cannot infer it."""
        name = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [name], name=self.fresh(op),
                                           domain=MS_DOMAIN, **attrs))
        dims = ["batch", "seq"][:self.rank - 1] + [self.width]
        self.value_info.append(helper.make_tensor_value_info(name, ELEM_TYPES[self.dtype], dims))
        return name

    def const(self, value, stem: str = "c", dtype=None) -> str:
        name = self.fresh(stem)
        self.initializers[name] = np.asarray(value, dtype=dtype or self.dtype)
        return name

    def weight(self, shape: tuple, shared: bool, stem: str = "w", scale: float | None = None) -> str:
        """Random weights (fan-in scaled, so deep chains stay finite); with ``shared``, an
        existing initializer of the same shape and dtype is read again instead."""
        if shared:
            for name, array in self.initializers.items():
                if array.shape == shape and array.dtype == self.dtype and name.startswith(stem):
                    return name
        fan_in = shape[0] if len(shape) > 1 else 1
        spread = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return self.const(self.rng.standard_normal(shape) * spread, stem)

    def axes(self, node_inputs: list[str], axes: list[int], attrs: dict) -> None:
        """Reduce axes as the opset wants them: an attribute until 17, an input from 18."""
        if self.opset >= 18:
            node_inputs.append(self.const(axes, "axes", np.int64))
        else:
            attrs["axes"] = axes

    def input(self, name: str, elem_type: int, shape: list) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, name: str, elem_type: int | None = None) -> None:
        self.outputs.setdefault(name, ELEM_TYPES[self.dtype] if elem_type is None else elem_type)

    def model(self) -> onnx.ModelProto:
        inits = [numpy_helper.from_array(a, n) for n, a in self.initializers.items()]
        outputs = [helper.make_tensor_value_info(n, t, None) for n, t in self.outputs.items()]
        graph = helper.make_graph(self.nodes, "fuzz", self.inputs, outputs, inits,
                                  value_info=self.value_info)
        opsets = [helper.make_opsetid("", self.opset)]
        if any(node.domain == MS_DOMAIN for node in self.nodes):
            opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
        model = helper.make_model(graph, opset_imports=opsets)
        model.ir_version = 10
        return _typed_outputs(model)


def _typed_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each graph output's type as onnx infers it (the checker wants shapes)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    graph = inferred.graph
    known = {v.name: v for v in [*graph.output, *graph.value_info, *graph.input]}
    for output in model.graph.output:
        output.type.CopyFrom(known[output.name].type)
    return model


# ---------------------------------------------------------------------------------- blocks
# Each block reads the running tensor ``x`` and returns the new one; ``draw`` draws its variant.

def linear(draw, b: _Builder, x: str) -> str:
    """x·W (+ bias, on either side of the Add); W possibly shared with an earlier MatMul."""
    out = draw(st.sampled_from([b.width, 8, 12]))
    y = b.one("MatMul", [x, b.weight((b.width, out), draw(st.booleans()))])
    b.width = out
    bias = draw(st.sampled_from(["none", "after", "before"]))
    if bias != "none":
        c = b.weight((out,), False, "bias")
        y = b.one("Add", [y, c] if bias == "after" else [c, y])
    return y


def weight_view(draw, b: _Builder, x: str) -> str:
    """x·W where W is computed from constants: a transposed matrix, every other column of a
    wider one, or halves concatenated (constant folding then hands the exporter a transposed
    or strided view, or a concatenation of views, rather than a plain array)."""
    out = draw(st.sampled_from([b.width, 8]))
    form = draw(st.sampled_from(["transpose", "strided slice", "concat of transposes"]))
    if form == "transpose":
        w = b.one("Transpose", [b.weight((out, b.width), False)], perm=[1, 0])
    elif form == "strided slice":
        wide = b.weight((b.width, 2 * out), False)
        w = b.one("Slice", [wide, b.const([0], "starts", np.int64),
                            b.const([2 * out], "ends", np.int64),
                            b.const([1], "axes", np.int64), b.const([2], "steps", np.int64)])
    else:
        halves = [b.one("Transpose", [b.weight((half, b.width), False)], perm=[1, 0])
                  for half in (out // 2, out - out // 2)]
        w = b.one("Concat", halves, axis=1)
    b.width = out
    return b.one("MatMul", [x, w])


def qdq_linear(draw, b: _Builder, x: str) -> str:
    """x·W in the QDQ form onnxruntime's quantize_static writes: the activation quantized to
    uint8 codes and back, the weight stored as int8 codes (per tensor or per output channel)
    and dequantized, the product quantized and dequantized again (what fold_qdq folds)."""
    out = draw(st.sampled_from([b.width, 8]))
    x = _quantized_round_trip(b, x, 0.05)
    w = b.rng.standard_normal((b.width, out)) / np.sqrt(b.width)
    per_channel = draw(st.booleans())
    scale = (np.abs(w).max(axis=0) if per_channel else np.abs(w).max()) / 127
    codes = np.clip(np.round(w / scale), -127, 127)
    attrs = {"axis": 1} if per_channel else {}
    weight = b.one("DequantizeLinear", [b.const(codes, "w_codes", np.int8),
                                        b.const(scale, "w_scale"),
                                        b.const(np.zeros_like(scale), "w_zero", np.int8)],
                   **attrs)
    b.width = out
    return _quantized_round_trip(b, b.one("MatMul", [x, weight]), 0.1)


def _quantized_round_trip(b: _Builder, x: str, scale: float) -> str:
    s, zero = b.const(scale, "scale"), b.const(128, "zero", np.uint8)
    return b.one("DequantizeLinear", [b.one("QuantizeLinear", [x, s, zero]), s, zero])


CONTRIB_OPS = ("FastGelu", "QuickGelu", "BiasGelu", "FusedMatMul", "SkipLayerNormalization")


def contrib_op(draw, b: _Builder, x: str) -> str:
    """One of onnxruntime's own operators (domain com.microsoft), as its optimizer or a model
    builder writes them into the models people bring."""
    kind = draw(st.sampled_from(CONTRIB_OPS if b.rank == 3 else CONTRIB_OPS[:-1]))
    bias = b.weight((b.width,), False, "bias")
    if kind == "FastGelu":
        return b.contrib(kind, [x, bias] if draw(st.booleans()) else [x])
    if kind == "QuickGelu":
        return b.contrib(kind, [x], alpha=draw(st.sampled_from([1.0, 1.702])))
    if kind == "BiasGelu":
        return b.contrib(kind, [x, bias])
    if kind == "FusedMatMul":
        transposed = draw(st.booleans())
        shape = (b.width, b.width)
        return b.contrib(kind, [x, b.weight(shape, False)], transB=int(transposed),
                         alpha=draw(st.sampled_from([1.0, 0.5])))
    gamma = b.weight((b.width,), False, "gamma", scale=1.0)
    skip = b.one("Relu", [x])
    return b.contrib(kind, [x, skip, gamma, bias], epsilon=1e-5)


def siblings(draw, b: _Builder, x: str) -> str:
    """Two or three MatMuls reading the same input (horizontal fusion), combined again."""
    ys = [b.one("MatMul", [x, b.weight((b.width, b.width), False)])
          for _ in range(draw(st.integers(2, 3)))]
    if draw(st.booleans()):
        ys = [b.one("Add", [y, b.weight((b.width,), False, "bias")]) for y in ys]
    total = ys[0]
    for y in ys[1:]:
        total = b.one(draw(st.sampled_from(["Add", "Mul"])), [total, y])
    return total


def gemm(draw, b: _Builder, x: str) -> str:
    """Gemm on [batch, features]: transposed weights or not, with or without C, alpha/beta."""
    out = draw(st.sampled_from([b.width, 8]))
    trans_b = draw(st.integers(0, 1))
    inputs = [x, b.weight((out, b.width) if trans_b else (b.width, out), draw(st.booleans()))]
    bias = draw(st.sampled_from(["none", "vector", "row"]))
    if bias != "none":
        inputs.append(b.weight((out,) if bias == "vector" else (1, out), False, "bias"))
    attrs = {"transB": trans_b}
    if draw(st.booleans()):
        attrs.update(alpha=draw(st.sampled_from([0.5, 2.0])), beta=draw(st.sampled_from([0.5, 1.0])))
    b.width = out
    return b.one("Gemm", inputs, **attrs)


def layernorm_written_out(draw, b: _Builder, x: str) -> str:
    """LayerNorm as low-opset exporters write it; the square as Pow or as Mul (a near miss),
    the affine part absent, normal or with its operands swapped."""
    mean_inputs, mean_attrs = [x], {}
    b.axes(mean_inputs, [-1], mean_attrs)
    mean = b.one("ReduceMean", mean_inputs, **mean_attrs)
    centered = b.one("Sub", [x, mean])
    square = (b.one("Pow", [centered, b.const(2.0, "two")]) if draw(st.booleans())
              else b.one("Mul", [centered, centered]))
    var_inputs, var_attrs = [square], {}
    b.axes(var_inputs, [-1], var_attrs)
    var = b.one("ReduceMean", var_inputs, **var_attrs)
    std = b.one("Sqrt", [b.one("Add", [var, b.const(draw(st.sampled_from([1e-5, 1e-3])), "eps")])])
    y = b.one("Div", [centered, std])
    affine = draw(st.sampled_from(["none", "normal", "swapped"]))
    if affine != "none":
        gamma = b.weight((b.width,), draw(st.booleans()), "gamma", scale=1.0)
        beta = b.weight((b.width,), False, "beta", scale=1.0)
        pair = (lambda v, c: [v, c]) if affine == "normal" else (lambda v, c: [c, v])
        y = b.one("Add", pair(b.one("Mul", pair(y, gamma)), beta))
    return y


def layernorm_op(draw, b: _Builder, x: str) -> str:
    """The LayerNormalization op (opset 17+) over the last axis, with or without its bias."""
    inputs = [x, b.weight((b.width,), False, "gamma", scale=1.0)]
    if draw(st.booleans()):
        inputs.append(b.weight((b.width,), False, "beta", scale=1.0))
    return b.one("LayerNormalization", inputs, axis=-1,
                 epsilon=draw(st.sampled_from([1e-5, 1e-12])))


def gelu(draw, b: _Builder, x: str) -> str:
    """GELU written out with Erf or with the tanh approximation, or the Gelu op (opset 20)."""
    forms = ["tanh"] if b.dtype == np.float64 else (["op"] if b.opset >= 20 else []) + ["erf",
                                                                                       "tanh"]
    form = draw(st.sampled_from(forms))
    if form == "op":
        return b.one("Gelu", [x], approximate=draw(st.sampled_from(["none", "tanh"])))
    half = b.const(0.5, "half")
    one = b.const(1.0, "one")
    if form == "erf":
        erf = b.one("Erf", [b.one("Div", [x, b.const(np.sqrt(2.0), "sqrt2")])])
        return b.one("Mul", [b.one("Mul", [x, b.one("Add", [erf, one])]), half])
    cube = b.one("Pow", [x, b.const(3.0, "three")])
    inner = b.one("Add", [x, b.one("Mul", [b.const(0.044715, "k"), cube])])
    t = b.one("Tanh", [b.one("Mul", [inner, b.const(np.sqrt(2 / np.pi), "sqrt_2_pi")])])
    return b.one("Mul", [b.one("Mul", [x, half]), b.one("Add", [t, one])])


def activation(draw, b: _Builder, x: str) -> str:
    """Relu, Clip (both bounds, only a lower one, or only an upper one behind an empty input),
    Sigmoid, Tanh or LeakyRelu."""
    kinds = ["Relu", "Clip", "Sigmoid", "Tanh"] + ([] if b.dtype == np.float64 else ["LeakyRelu"])
    kind = draw(st.sampled_from(kinds))
    if kind != "Clip":
        return b.one(kind, [x])
    bounds = draw(st.sampled_from(["both", "min", "max"]))
    low = b.const(draw(st.sampled_from([0.0, -1.0])), "min") if bounds != "max" else ""
    high = [b.const(draw(st.sampled_from([1.0, 6.0])), "max")] if bounds != "min" else []
    return b.one("Clip", [x, low] + high)


def transposes(draw, b: _Builder, x: str) -> str:
    """Transposes that compose to the identity: a cancelling pair, or three in a row."""
    perm = draw(st.permutations(range(b.rank)))
    inverse = list(np.argsort(perm))
    if b.rank > 2 and draw(st.booleans()):
        second = draw(st.permutations(range(b.rank)))
        last = list(np.argsort(np.array(perm)[list(second)]))
        for p in (perm, second, last):
            x = b.one("Transpose", [x], perm=[int(i) for i in p])
        return x
    return b.one("Transpose", [b.one("Transpose", [x], perm=list(perm))],
                 perm=[int(i) for i in inverse])


def reshapes(draw, b: _Builder, x: str) -> str:
    """A Reshape splitting the last dim and one merging it back, or a Reshape to the same shape."""
    keep = [0] * (b.rank - 1)
    if draw(st.booleans()) and b.width % 2 == 0:
        x = b.one("Reshape", [x, b.const(keep + [2, b.width // 2], "shape", np.int64)])
    return b.one("Reshape", [x, b.const(keep + [b.width], "shape", np.int64)])


def dropout(draw, b: _Builder, x: str) -> str:
    """Identity, or inference-mode Dropout (ratio and training_mode given or not), its mask
    possibly a graph output."""
    if draw(st.booleans()):
        return b.one("Identity", [x])
    inputs = [x]
    if draw(st.booleans()):
        inputs.append(b.const(0.1, "ratio", np.float32))
        if draw(st.booleans()):
            inputs.append(b.const(False, "training", np.bool_))
    if draw(st.booleans()):
        y, mask = b.node("Dropout", inputs, outputs=2)
        b.output(mask, TensorProto.BOOL)
        return y
    return b.one("Dropout", inputs)


def attention(draw, b: _Builder, x: str) -> str:
    """Self-attention over [batch, seq, hidden] in the forms the attention pattern matches —
    scale by Mul or Div or on Q and Kᵀ or none, mask added, selected by Where, or none, Kᵀ by
    one Transpose — and near misses: Softmax along another axis, Kᵀ by a second Transpose."""
    heads = draw(st.sampled_from([h for h in (1, 2, 4) if b.width % h == 0]))
    size = b.width // heads
    split = b.const([0, 0, heads, size], "split_shape", np.int64)

    def project(perm):
        y = b.one("MatMul", [x, b.weight((b.width, b.width), False)])
        if draw(st.booleans()):
            y = b.one("Add", [y, b.weight((b.width,), False, "bias")])
        return b.one("Transpose", [b.one("Reshape", [y, split])], perm=perm)

    q = project([0, 2, 1, 3])
    if draw(st.booleans()):
        k = project([0, 2, 3, 1])
    else:
        k = b.one("Transpose", [project([0, 2, 1, 3])], perm=[0, 1, 3, 2])
    v = project([0, 2, 1, 3])
    factor = float(1 / np.sqrt(size))
    scale = draw(st.sampled_from(["mul", "div", "both", "none"]))
    if scale == "both":
        q = b.one("Mul", [q, b.const(np.sqrt(factor), "q_scale")])
        k = b.one("Mul", [k, b.const(np.sqrt(factor), "k_scale")])
    scores = b.one("MatMul", [q, k])
    if scale == "mul":
        scores = b.one("Mul", [scores, b.const(factor, "scale")])
    elif scale == "div":
        scores = b.one("Div", [scores, b.const(1 / factor, "scale")])
    mask = draw(st.sampled_from(["add", "where", "none"]))
    if mask == "add":
        scores = b.one("Add", [scores, _graph_input(b, "attn_mask", TensorProto.FLOAT)])
    elif mask == "where":
        allowed = _graph_input(b, "attn_allowed", TensorProto.BOOL)
        scores = b.one("Where", [allowed, scores, b.const(-1e4, "fill")])
    probs = b.one("Softmax", [scores], axis=draw(st.sampled_from([-1, 3, 2])))
    context = b.one("Transpose", [b.one("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    return b.one("Reshape", [context, b.const([0, 0, b.width], "merge_shape", np.int64)])


def _graph_input(b: _Builder, name: str, elem_type: int) -> str:
    """A mask input of shape [batch, 1, 1, seq] (made once), in the running dtype."""
    if not any(i.name == name for i in b.inputs):
        b.input(name, elem_type, ["batch", 1, 1, "seq"])
    if elem_type == TensorProto.FLOAT and b.dtype != np.float32:
        return b.one("Cast", [name], to=ELEM_TYPES[b.dtype])
    return name


def conv(draw, b: _Builder, x: str) -> str:
    """Conv keeping the spatial size: 1×1 or 3×3, grouped depthwise or not, its bias as an
    input, as an Add of a [C, 1, 1] constant, or absent."""
    kernel = draw(st.sampled_from([1, 3]))
    depthwise = draw(st.booleans())
    out = b.width if depthwise else draw(st.sampled_from([b.width, 4, 8]))
    group = b.width if depthwise else 1
    w = b.weight((out, b.width // group, kernel, kernel), draw(st.booleans()),
                 scale=1 / np.sqrt(b.width // group * kernel * kernel))
    bias = draw(st.sampled_from(["input", "add", "none"]))
    inputs = [x, w] + ([b.weight((out,), False, "bias")] if bias == "input" else [])
    pad = kernel // 2
    y = b.one("Conv", inputs, kernel_shape=[kernel, kernel], pads=[pad] * 4, group=group)
    b.width = out
    if bias == "add":
        y = b.one("Add", [y, b.weight((out, 1, 1), False, "bias")])
    return y


def pad_conv(draw, b: _Builder, x: str) -> str:
    """Pad then an unpadded 3×3 Conv: zero constant padding of H and W (foldable into the
    Conv), and near misses: a non-zero pad value, reflect mode, padding of the channels too."""
    kind = draw(st.sampled_from(["zeros", "zeros", "value", "reflect", "channels"]))
    pads = [0, 1 if kind == "channels" else 0, 1, 1, 0, 0, 1, 1]
    inputs = [x, b.const(pads, "pads", np.int64)]
    if kind == "value":
        inputs.append(b.const(0.5, "pad_value"))
    elif kind == "zeros" and draw(st.booleans()):
        inputs.append(b.const(0.0, "pad_value"))
    padded = b.one("Pad", inputs, mode="reflect" if kind == "reflect" else "constant")
    channels = b.width + (1 if kind == "channels" else 0)
    out = draw(st.sampled_from([b.width, 4]))
    w = b.weight((out, channels, 3, 3), False, scale=1 / np.sqrt(channels * 9))
    inputs = [padded, w] + ([b.weight((out,), False, "bias")] if draw(st.booleans()) else [])
    b.width = out
    return b.one("Conv", inputs, kernel_shape=[3, 3])


def batchnorm(draw, b: _Builder, x: str) -> str:
    """Inference BatchNormalization over the channels (features of a matrix)."""
    c = b.width
    stats = [b.weight((c,), False, "bn_scale", 1.0), b.weight((c,), False, "bn_bias", 1.0),
             b.weight((c,), False, "bn_mean", 1.0),
             b.const(b.rng.uniform(0.5, 2.0, c), "bn_var")]
    return b.one("BatchNormalization", [x] + stats, epsilon=1e-5)


def channel_affine(draw, b: _Builder, x: str) -> str:
    """A per-channel Mul and/or Add after a Conv-like op (what BatchNorm folds into)."""
    shape = (b.width, 1, 1)
    if draw(st.booleans()):
        x = b.one("Mul", [x, b.weight(shape, False, "gamma", 1.0)])
    return b.one("Add", [x, b.weight(shape, False, "beta", 1.0)])


def cast_region(draw, b: _Builder, x: str) -> str:
    """Cast to float16 or float64, zero to two blocks computed in that type, Cast back."""
    target = draw(st.sampled_from([np.float16, np.float64]))
    y = b.one("Cast", [x], to=ELEM_TYPES[np.dtype(target)])
    b.dtype = np.dtype(target)
    inner = [k for k in _CAST_SAFE[b.family] if _allowed(k, b)]
    for kind in draw(st.lists(st.sampled_from(inner), max_size=2)):
        y = _apply(draw, b, kind, y)
    b.dtype = np.dtype(np.float32)
    return b.one("Cast", [y], to=TensorProto.FLOAT)


def residual(draw, b: _Builder, x: str) -> str:
    """A width-keeping block whose input is also added to its output (two readers of x)."""
    kind = draw(st.sampled_from([k for k in _RESIDUAL[b.family] if _allowed(k, b)]))
    width = b.width
    y = _apply(draw, b, kind, x)
    if b.width != width:  # bring it back to the input's width
        shape = (width, b.width, 1, 1) if b.family == "image" else (b.width, width)
        op = "Conv" if b.family == "image" else "MatMul"
        y = b.one(op, [y, b.weight(shape, False)])
        b.width = width
    return b.one("Add", [x, y] if draw(st.booleans()) else [y, x])


def side_output(draw, b: _Builder, x: str) -> str:
    """The running tensor becomes a graph output too, and the chain goes on from it (the
    graph input itself is passed through an Identity: onnx's shape inference rejects an
    output that is an input)."""
    if any(i.name == x for i in b.inputs):
        x = b.one("Identity", [x])
    b.output(x)
    return x


BLOCKS = {f.__name__: f for f in (
    linear, weight_view, qdq_linear, contrib_op, siblings, gemm, layernorm_written_out, layernorm_op, gelu, activation, transposes,
    reshapes, dropout, attention, conv, pad_conv, batchnorm, channel_affine, cast_region,
    residual, side_output)}
_COMMON = ["activation", "transposes", "dropout", "cast_region", "residual", "side_output"]
FAMILIES = {
    "sequence": _COMMON + ["linear", "weight_view", "qdq_linear", "contrib_op", "siblings",
                           "layernorm_written_out", "layernorm_op", "gelu", "reshapes",
                           "attention", "attention"],
    "matrix": _COMMON + ["linear", "weight_view", "qdq_linear", "contrib_op", "siblings",
                         "gemm", "layernorm_written_out", "layernorm_op", "gelu", "gelu",
                         "reshapes", "batchnorm"],
    "image": _COMMON + ["conv", "conv", "pad_conv", "batchnorm", "channel_affine"],
}
_CAST_SAFE = {
    "sequence": ["linear", "layernorm_written_out", "layernorm_op", "gelu", "activation",
                 "attention", "dropout"],
    "matrix": ["linear", "gemm", "layernorm_written_out", "layernorm_op", "gelu", "activation",
               "batchnorm"],
    "image": ["conv", "batchnorm", "activation", "channel_affine"],
}
_RESIDUAL = {
    "sequence": ["linear", "layernorm_written_out", "layernorm_op", "gelu", "attention"],
    "matrix": ["linear", "gemm", "layernorm_written_out", "gelu", "batchnorm"],
    "image": ["conv", "pad_conv", "batchnorm", "activation"],
}
_NEEDS = {"layernorm_op": lambda b: b.opset >= 17,
          "conv": lambda b: b.dtype != np.float64,
          "qdq_linear": lambda b: b.dtype == np.float32,
          "contrib_op": lambda b: b.dtype == np.float32,
          "pad_conv": lambda b: b.dtype != np.float64}


def _allowed(kind: str, b: _Builder) -> bool:
    return _NEEDS.get(kind, lambda _: True)(b)


def _apply(draw, b: _Builder, kind: str, x: str) -> str:
    b.blocks.append(kind if b.dtype == np.float32 else f"{kind}[{b.dtype}]")
    return BLOCKS[kind](draw, b, x)


@st.composite
def cases(draw, max_blocks: int = 5) -> Case:
    """A random valid model and how to run it."""
    family = draw(st.sampled_from(sorted(FAMILIES)))
    opset = draw(st.sampled_from(OPSETS))
    width = draw(st.sampled_from([4, 8] if family == "image" else [8, 16]))
    b = _Builder(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), opset, family, width)
    shape = {"matrix": ["batch", width], "sequence": ["batch", "seq", width],
             "image": ["batch", width, SPATIAL, SPATIAL]}[family]
    x = b.input("x", TensorProto.FLOAT, shape)
    kinds = [k for k in FAMILIES[family] if _allowed(k, b)]
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=max_blocks)):
        x = _apply(draw, b, kind, x)
    b.output(x)
    bindings = {"batch": draw(st.sampled_from([1, 2, 3]))}
    if family == "sequence":
        bindings["seq"] = draw(st.sampled_from([1, 4, 7]))
    return Case(b.model(), bindings, draw(st.booleans()), b.blocks)


def generate(count: int, start_seed: int = 0) -> list[Case]:
    """``count`` cases, the same ones for the same seed (hypothesis draws them; no shrinking,
    no example database)."""
    found: list[Case] = []

    @seed(start_seed)
    @settings(max_examples=count, deadline=None, database=None, phases=["generate"],
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def collect(case: Case) -> None:
        found.append(case)

    with _seed_alone_decides():
        collect()
    return found


@contextmanager
def _seed_alone_decides():
    """Hypothesis now and then draws a literal found in any loaded module of the project or its
    tests, so a seed's cases would depend on which tests ran before in the process (a full run
    drew other models than the fuzz file alone). Drawing with no such literals keeps them fixed."""
    empty = providers.Constants(integers=SortedSet(), floats=SortedSet(key=float_to_int),
                                bytes=SortedSet(), strings=SortedSet())
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        with mock.patch.object(providers, "_get_local_constants", lambda: empty):
            yield
    finally:
        providers.CONSTANTS_CACHE.cache.clear()
