"""Which GEMM a MatMul, Gemm or convolution node is, in the systolic simulator's terms.

    MatMul   A[..., M, K] . B[..., K, N]   batch dims fold into M when B is shared (weights),
                                           into N when A is shared; otherwise each batch entry
                                           is its own GEMM (`instances`, e.g. attention scores)
    Gemm     transA / transB decide which dims are M, K and N
    Conv     im2col: M = batch * output pixels, K = C/group * kernel elements,
             N = filters / group, one GEMM per group (`instances`; depthwise: N = 1)
    ConvTranspose  the GEMM before its col2im scatter: M = batch * input pixels,
             K = C/group, N = filters/group * kernel elements
    MatMulNBits  A[..., K] . (packed B of N x K): M = A's rows, N and K from its attributes
    LinearClassifier, LinearRegressor (ai.onnx.ml)  X[N, F] . coefficientsᵀ: M = samples,
             K = features, N = classes (or targets), the coefficients F at a time
    attention    (onnxruntime's and ONNX's) the GEMMs inside (`attention_gemms`)
onnxruntime's MatMul and Gemm variants (FusedMatMul, DynamicQuantizeMatMul,
MatMulIntegerToFloat, FusedGemm, QGemm, QLinearConv, FusedConv, NhwcConv, the blocked
layout's Conv) map as their ONNX op, a channels-last one read as such.
A fused node maps to the GEMMs in its body. When a convolution is one the simulator's conv
form describes exactly (2-D, batch 1, one group, equal strides, no dilation), `conv` holds it,
with the input size its windows cover (padding included, rows the stride skips excluded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..ir import Node
from ..records import record_field
from .attention_gemms import MAPPERS as ATTENTION_MAPPERS
from .ml_flops import linear_model_sizes
from .systolic import ConvShape, ScheduleError
from .tensor_sizes import SizeResolver

# op -> (index of A / X, index of B / W)
_MATMULS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "FusedMatMul": (0, 1),
            "QLinearMatMul": (0, 3), "DynamicQuantizeMatMul": (0, 1),
            "MatMulIntegerToFloat": (0, 1)}
_GEMMS = {"Gemm": (0, 1), "FusedGemm": (0, 1), "QGemm": (0, 3)}
_CONVS = {"Conv": (0, 1), "ConvInteger": (0, 1), "FusedConv": (0, 1), "QLinearConv": (0, 3),
          "NhwcConv": (0, 1)}
# scikit-learn's linear models as skl2onnx writes them: one matrix product with a weight
# row per class or target
_LINEAR_MODELS = ("LinearClassifier", "LinearRegressor")
# onnxruntime's domains: its operators, and its blocked layout (com.microsoft.nchwc: a Conv
# whose weights and output channels are padded to the block, NCHW otherwise); ONNX's
# classical-ML operators
_DOMAINS = ("", "com.microsoft", "com.microsoft.nchwc", "ai.onnx.ml")
GEMM_OPS = frozenset({*_MATMULS, *_CONVS, *_GEMMS, *_LINEAR_MODELS, "ConvTranspose",
                      "MatMulNBits"})


@dataclass(frozen=True)
class GemmProblem:
    """(M x K) . (K x N), run `instances` times back to back, from node `source`."""

    source: str
    op_type: str
    M: int
    N: int
    K: int
    instances: int = 1
    conv: ConvShape | None = record_field(omit=True, default=None)
    note: str = ""


def has_gemm(node: Node) -> bool:
    """True if the node (or a node in its fused body) is a GEMM the simulator can run."""
    if node.body is not None:
        return any(has_gemm(inner) for inner in node.body.nodes)
    return node.domain in _DOMAINS and node.op_type in GEMM_OPS or \
        (node.domain, node.op_type) in ATTENTION_MAPPERS


def gemm_problems(node: Node, bindings: dict[str, int] | None = None) -> list[GemmProblem]:
    """The node's GEMMs in execution order ([] for a node without one)."""
    return _problems(node, SizeResolver(bindings))


def _problems(node: Node, sizes: SizeResolver) -> list[GemmProblem]:
    if node.body is not None:
        return [p for inner in node.body.nodes for p in _problems(inner, sizes)]
    if not has_gemm(node):
        return []
    sizes.assumed.clear()
    shapes = [sizes.shape(v) for v in node.inputs]
    out = sizes.shape(node.outputs[0]) if node.outputs else None
    mapper = ATTENTION_MAPPERS.get((node.domain, node.op_type))
    if mapper is not None:
        return _attention(node, mapper(node.attrs, shapes, [sizes.shape(v) for v in
                                                              node.outputs]), sizes)
    if node.op_type in _MATMULS:
        a_index, b_index = _MATMULS[node.op_type]
        problem = _matmul(node, _at(shapes, a_index), _at(shapes, b_index))
    elif node.op_type == "MatMulNBits":
        problem = _matmul_nbits(node, _at(shapes, 0))
    elif node.op_type in _LINEAR_MODELS:
        problem = _linear_model(node, _at(shapes, 0))
    elif node.op_type in _GEMMS:
        a_index, b_index = _GEMMS[node.op_type]
        problem = _gemm(node, _at(shapes, a_index), _at(shapes, b_index))
    elif node.op_type == "ConvTranspose":
        problem = _conv_transpose(node, _at(shapes, 0), _at(shapes, 1))
    else:
        x_index, w_index = _CONVS[node.op_type]
        problem = _conv(node, _at(shapes, x_index), _at(shapes, w_index), out)
    if problem is None:
        raise _unsized(node)
    if sizes.assumed:
        note = sizes.assumed_note()
        problem = replace(problem, note="; ".join(filter(None, [problem.note, note])))
    return [problem]


def _at(items: list, index: int):
    return items[index] if index < len(items) else None


def _unsized(node: Node) -> ScheduleError:
    return ScheduleError(f"the shapes of {node.name!r} ({node.op_type}) are unknown, so its "
                         f"GEMM cannot be sized", where=node.name,
                         hint="bind the model's symbolic dims, or run a pipeline that "
                              "infers shapes (O1)")


def _attention(node: Node, gemms, sizes: SizeResolver) -> list[GemmProblem]:
    if gemms is None:
        raise _unsized(node)
    note = sizes.assumed_note()
    return [GemmProblem(node.name, node.op_type, m, n, k, instances,
                        note="; ".join(filter(None, [label, note])))
            for label, m, n, k, instances in gemms]


def _matmul_nbits(node: Node, a) -> GemmProblem | None:
    n, k = node.attrs.get("N"), node.attrs.get("K")
    if not a or n is None or k is None:
        return None
    return GemmProblem(node.name, node.op_type, math.prod(a[:-1]), int(n), int(k),
                       note=f"{node.attrs.get('bits', 4)}-bit weights, unpacked block by block")


def _linear_model(node: Node, x) -> GemmProblem | None:
    sizes = linear_model_sizes(x, node.attrs.get("coefficients"))
    if sizes is None:
        return None
    samples, features, outputs = sizes
    return GemmProblem(node.name, node.op_type, samples, outputs, features,
                       note="weights: the coefficients, one row per class or target")


def _matmul(node: Node, a, b) -> GemmProblem | None:
    if not a or not b:
        return None
    a = (1, *a) if len(a) == 1 else tuple(a)
    b = (*b, 1) if len(b) == 1 else tuple(b)
    if node.attrs.get("transA", 0):
        a = (*a[:-2], a[-1], a[-2])
    if node.attrs.get("transB", 0):
        b = (*b[:-2], b[-1], b[-2])
    m, k, n = a[-2], a[-1], b[-1]
    a_batch, b_batch = math.prod(a[:-2]), math.prod(b[:-2])
    if b_batch == 1:
        return GemmProblem(node.name, node.op_type, a_batch * m, n, k)
    if a_batch == 1:
        return GemmProblem(node.name, node.op_type, m, b_batch * n, k,
                           note="A is shared by every batch entry: B's batch folds into N")
    batch = math.prod(max(x, y) for x, y in zip(_pad(a[:-2], b[:-2]), _pad(b[:-2], a[:-2])))
    return GemmProblem(node.name, node.op_type, m, n, k, instances=batch,
                       note=f"batched: {batch} independent GEMMs")


def _pad(dims: tuple, other: tuple) -> tuple:
    """Left-pad batch dims with 1s to the other's rank (numpy broadcasting)."""
    return (1,) * max(0, len(other) - len(dims)) + dims


def _gemm(node: Node, a, b) -> GemmProblem | None:
    if not a or not b or len(a) != 2 or len(b) != 2:
        return None
    m, k = (a[1], a[0]) if node.attrs.get("transA", 0) else (a[0], a[1])
    n = b[0] if node.attrs.get("transB", 0) else b[1]
    return GemmProblem(node.name, node.op_type, m, n, k)


def _conv(node: Node, x, w, out) -> GemmProblem | None:
    if not x or not w or not out or len(w) < 3:
        return None
    group = int(node.attrs.get("group", 1))
    kernel = w[2:]
    if node.op_type == "NhwcConv" or node.attrs.get("channels_last", 0):
        out = (out[0], out[-1], *out[1:-1])     # channels last: the weights are ONNX's
    batch, pixels = out[0], math.prod(out[2:])
    problem = GemmProblem(node.name, node.op_type, batch * pixels, w[0] // group,
                          w[1] * math.prod(kernel), instances=group,
                          note=f"{group} groups, one GEMM each" if group > 1 else "")
    strides = tuple(node.attrs.get("strides", (1,) * len(kernel)))
    dilations = tuple(node.attrs.get("dilations", (1,) * len(kernel)))
    exact_conv_form = (len(kernel) == 2 and batch == 1 and group == 1
                       and strides[0] == strides[1] and set(dilations) == {1})
    if not exact_conv_form:
        return problem
    stride = strides[0]
    (fh, fw), (oh, ow) = kernel, out[2:]
    conv = ConvShape((oh - 1) * stride + fh, (ow - 1) * stride + fw, fh, fw, w[1], w[0], stride)
    return replace(problem, conv=conv)


def _conv_transpose(node: Node, x, w) -> GemmProblem | None:
    if not x or not w or len(w) < 3:
        return None
    group = int(node.attrs.get("group", 1))
    return GemmProblem(node.name, node.op_type, x[0] * math.prod(x[2:]),
                       w[1] * math.prod(w[2:]), w[0] // group, instances=group,
                       note="the GEMM of the col2im form; the scatter-add after it is not "
                            "simulated")
