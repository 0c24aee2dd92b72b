"""Types and shapes of the operators onnx's inference cannot type: onnxruntime's contrib ops.

onnxruntime's own operators (domain com.microsoft, its blocked layout's com.microsoft.nchwc,
and SimplifiedLayerNormalization, which it registers in the ONNX domain) have no onnx schema,
so onnx's shape inference leaves their outputs unknown and everything downstream with them.  The rules here give every output's
element type and shape.  Most of these operators are a standard op with extras (a bias, an
activation, quantization scales), so their shape is the standard op's: ``STAND_INS`` names
that op and which inputs it takes, and onnx's own node inference computes it.  The others
(attention, the norms with their extra outputs) have a rule of their own.

``SHAPE_RULES`` is also the list of the ops GraphLab knows beyond onnx's schemas: an op that
is in neither loads as an opaque node (`importer`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import onnx
from onnx import TensorProto, helper

from .node import Node
from .proto_types import read_dim
from .value import Value

MS_DOMAIN = "com.microsoft"
NCHWC_DOMAIN = "com.microsoft.nchwc"
FLOAT = TensorProto.FLOAT
Dim = "int | str | None"
Out = "tuple[int | None, tuple | None] | None"     # (elem type, shape) of one output


@dataclass(frozen=True)
class StandIn:
    """A standard op computing the same shape: its name, the node's inputs it reads (by index)
    and the attributes it keeps; ``dtype_from``: the input whose type the output has (None:
    the first stand-in input's; float when that optional input is absent), or ``dtype``."""

    op_type: str
    inputs: tuple[int, ...]
    attributes: tuple[str, ...] = ()
    dtype_from: "int | None" = None
    dtype: int | None = None
    # input 0 and output 0 channels last (NHWC), the rest as ONNX has them: True for
    # onnxruntime's Nhwc ops, None where the node's ``channels_last`` attribute says
    channels_last: bool | None = False


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
_POOL_ATTRS = ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides")
STAND_INS: dict[tuple[str, str], StandIn] = {
    (MS_DOMAIN, "FusedConv"): StandIn("Conv", (0, 1), _CONV_ATTRS),
    (MS_DOMAIN, "QLinearConv"): StandIn("Conv", (0, 3), _CONV_ATTRS, dtype_from=7,
                                        channels_last=None),
    (MS_DOMAIN, "NhwcConv"): StandIn("Conv", (0, 1), _CONV_ATTRS, channels_last=True),
    (MS_DOMAIN, "NhwcMaxPool"): StandIn("MaxPool", (0,), _POOL_ATTRS, channels_last=True),
    (MS_DOMAIN, "FusedGemm"): StandIn("Gemm", (0, 1), ("transA", "transB")),
    (MS_DOMAIN, "QGemm"): StandIn("Gemm", (0, 3), ("transA", "transB"), dtype_from=8),
    (MS_DOMAIN, "DynamicQuantizeMatMul"): StandIn("MatMul", (0, 1), dtype_from=2),
    (MS_DOMAIN, "MatMulIntegerToFloat"): StandIn("MatMul", (0, 1), dtype_from=2),
    (MS_DOMAIN, "QLinearAdd"): StandIn("Add", (0, 3), dtype_from=0),
    (MS_DOMAIN, "QLinearMul"): StandIn("Mul", (0, 3), dtype_from=0),
    (MS_DOMAIN, "BiasGelu"): StandIn("Add", (0, 1)),
    (MS_DOMAIN, "QLinearSigmoid"): StandIn("Identity", (0,)),
    (MS_DOMAIN, "QLinearLeakyRelu"): StandIn("Identity", (0,)),
    (MS_DOMAIN, "QLinearSoftmax"): StandIn("Identity", (0,)),
    (MS_DOMAIN, "QLinearAveragePool"): StandIn(
        "AveragePool", (0,), _POOL_ATTRS + ("count_include_pad",), channels_last=None),
    # onnxruntime's blocked layout (ORT_ENABLE_ALL on x86): tensors [N, C, H, W] with C
    # padded to the block size, the weights reordered (and padded) to match
    (NCHWC_DOMAIN, "Conv"): StandIn("Conv", (0, 1), _CONV_ATTRS),
    (NCHWC_DOMAIN, "MaxPool"): StandIn("MaxPool", (0,), _POOL_ATTRS + ("storage_order",)),
    (NCHWC_DOMAIN, "AveragePool"): StandIn("AveragePool", (0,),
                                           _POOL_ATTRS + ("count_include_pad",)),
    (NCHWC_DOMAIN, "GlobalMaxPool"): StandIn("GlobalMaxPool", (0,)),
    (NCHWC_DOMAIN, "GlobalAveragePool"): StandIn("GlobalAveragePool", (0,)),
}
# Ops whose every output has the type and shape of their first input.
_SAME_AS_INPUT = {(MS_DOMAIN, op) for op in (
    "FastGelu", "QuickGelu", "Gelu", "BiasAdd", "RotaryEmbedding")} | {
    ("", "RotaryEmbedding"), ("", "RMSNormalization")}


# ----------------------------------------------------------------------- small helpers
def _shape(value: Value | None) -> tuple | None:
    return None if value is None or not value.is_tensor else value.shape


def _elem(value: Value | None) -> int | None:
    return None if value is None else value.elem_type


def _input(node: Node, index: int) -> Value | None:
    return node.inputs[index] if index < len(node.inputs) else None


def add_dims(a: Dim, b: Dim) -> Dim:
    """a + b: an int when both are, an expression of named dims ('past + seq'), else None."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    if a is None or b is None:
        return None
    return f"{a} + {b}"


def _div(dim: Dim, by: Dim) -> Dim:
    if isinstance(dim, int) and isinstance(by, int) and by and dim % by == 0:
        return dim // by
    return None


def _mul(a: Dim, b: Dim) -> Dim:
    return a * b if isinstance(a, int) and isinstance(b, int) else None


# ----------------------------------------------------------------------- the rules
def _stand_in(spec: StandIn, node: Node) -> list[Out]:
    """The standard op's output, from onnx's own node inference."""
    names = [f"x{i}" for i in range(len(spec.inputs))]
    values = [_input(node, index) for index in spec.inputs]
    if any(v is None or v.elem_type is None or v.shape is None for v in values):
        return [None]
    # float for all: the stand-in computes shapes only (float A . int8 B, or a uint8 Gemm,
    # is no ONNX op); the type comes from the spec
    shapes = [v.shape for v in values]
    channels_last = spec.channels_last if spec.channels_last is not None else \
        bool(node.attrs.get("channels_last", 0))
    if channels_last:                   # NHWC -> NCHW for onnx's inference
        shapes[0] = (shapes[0][0], shapes[0][-1], *shapes[0][1:-1]) if shapes[0] else shapes[0]
    types = {name: helper.make_tensor_type_proto(FLOAT, list(shape))
             for name, shape in zip(names, shapes)}
    attrs = {k: node.attrs[k] for k in spec.attributes if k in node.attrs}
    proto = helper.make_node(spec.op_type, names, ["y"], **attrs)
    try:
        inferred = onnx.shape_inference.infer_node_outputs(
            _schema(spec.op_type), proto, types)
    except Exception:  # noqa: BLE001 - onnx raises varied errors for inconsistent shapes
        return [None]
    found = inferred.get("y")
    if found is None or not found.HasField("tensor_type"):
        return [None]
    tensor = found.tensor_type
    shape = tuple(read_dim(d) for d in tensor.shape.dim) if tensor.HasField("shape") else None
    if channels_last and shape:         # and back
        shape = (shape[0], *shape[2:], shape[1])
    typed_by = _input(node, spec.dtype_from if spec.dtype_from is not None else spec.inputs[0])
    dtype = spec.dtype or _elem(typed_by) or FLOAT   # no y_zero_point: a float output
    return [(dtype, shape)]


@functools.lru_cache(maxsize=None)
def _schema(op_type: str) -> onnx.defs.OpSchema:
    return onnx.defs.get_schema(op_type)


def _same_as_input(node: Node) -> list[Out]:
    first = _input(node, 0)
    return [(_elem(first), _shape(first))] * max(1, len(node.outputs))


def _fused_matmul(node: Node) -> list[Out]:
    a, b = _shape(_input(node, 0)), _shape(_input(node, 1))
    if not a or not b or node.attrs.get("transBatchA") or node.attrs.get("transBatchB"):
        return [None]
    a = (1, *a) if len(a) == 1 else tuple(a)
    b = (*b, 1) if len(b) == 1 else tuple(b)
    m = a[-1] if node.attrs.get("transA") else a[-2]
    n = b[-2] if node.attrs.get("transB") else b[-1]
    batch = _broadcast(a[:-2], b[:-2])
    return [(_elem(_input(node, 0)), (*batch, m, n))]


def _broadcast(a: tuple, b: tuple) -> tuple:
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _matmul_nbits(node: Node) -> list[Out]:
    a, n = _shape(_input(node, 0)), node.attrs.get("N")
    if not a or n is None:
        return [None]
    return [(_elem(_input(node, 0)), (*a[:-1], int(n)))]


def _norm_statistics(shape: tuple | None, axis: int) -> tuple | None:
    """The shape of a norm's mean / inverse std: the normalized axes kept as 1."""
    if shape is None:
        return None
    axis = axis % len(shape) if shape else 0
    return tuple(d if i < axis else 1 for i, d in enumerate(shape))


def _skip_norm(node: Node) -> list[Out]:
    """output, mean, inv_std_var (float, [.., 1]) and input_skip_bias_sum."""
    x = _input(node, 0)
    stats = (FLOAT, _norm_statistics(_shape(x), -1))
    return [(_elem(x), _shape(x)), stats, stats, (_elem(x), _shape(x))]


def _norm(node: Node) -> list[Out]:
    """Y, then the statistics (mean and / or inverse std) in stash_type, normalized axes 1."""
    x = _input(node, 0)
    stash = node.attrs.get("stash_type", 1)
    stats = (stash, _norm_statistics(_shape(x), int(node.attrs.get("axis", -1))))
    return [(_elem(x), _shape(x)), stats, stats]


def _ms_attention(node: Node) -> list[Out]:
    """input [B, S, in] . weights [in, q+k+v] -> output [B, S, v]; present
    [2, B, heads, past + S, head size]."""
    x, w, past = _shape(_input(node, 0)), _shape(_input(node, 1)), _shape(_input(node, 4))
    dtype = _elem(_input(node, 0))
    if not x or len(x) != 3:
        return [None]
    sizes = node.attrs.get("qkv_hidden_sizes")
    v_hidden = int(sizes[2]) if sizes else _div(w[-1], 3) if w else None
    heads = int(node.attrs.get("num_heads", 0)) or None
    present = None
    if past is not None and len(past) == 5:
        present = (2, x[0], heads, add_dims(past[3], x[1]), past[4])
    elif heads and v_hidden:
        present = (2, x[0], heads, x[1], _div(v_hidden, heads))
    return [(dtype, (x[0], x[1], v_hidden)), (dtype, present)]


def _kv_length(key: tuple | None) -> tuple[Dim, Dim]:
    """(length, hidden) of a key given as [B, L, hidden] or [B, heads, L, head]."""
    if key is None:
        return None, None
    if len(key) == 3:
        return key[1], key[2]
    if len(key) == 4:
        return key[2], _mul(key[1], key[3])
    return None, None


def _multi_head_attention(node: Node) -> list[Out]:
    query, key, value = (_shape(_input(node, i)) for i in range(3))
    past_key = _shape(_input(node, 6))
    dtype, heads = _elem(_input(node, 0)), int(node.attrs.get("num_heads", 1))
    if not query:
        return [None]
    batch, seq = query[0], query[1]
    if len(query) == 5:                 # packed [B, S, heads, 3, head]
        head, length = query[4], seq
        v_hidden = _mul(query[2], query[4])
    else:
        length, _ = _kv_length(key)
        _, v_hidden = _kv_length(value)
        if key is not None and len(key) == 5:   # packed K/V [B, L, heads, 2, head]
            length, v_hidden = key[1], _mul(key[2], key[4])
        head = _div(query[2], heads) if len(query) == 3 else None
        length = length if length is not None else seq
    total = add_dims(past_key[2], length) if past_key and len(past_key) == 4 else length
    v_head = _div(v_hidden, heads)
    return [(dtype, (batch, seq, v_hidden)), (dtype, (batch, heads, total, head)),
            (dtype, (batch, heads, total, v_head)),
            (dtype, (batch, heads, seq, total))]


def _group_query_attention(node: Node) -> list[Out]:
    query, key, past_key = (_shape(_input(node, i)) for i in (0, 1, 3))
    dtype = _elem(_input(node, 0))
    heads = int(node.attrs.get("num_heads", 0)) or None
    kv_heads = int(node.attrs.get("kv_num_heads", 0)) or None
    if not query or len(query) != 3 or not heads or not kv_heads:
        return [None]
    batch, seq, hidden = query
    head = _div(hidden, heads + 2 * kv_heads) if key is None else _div(hidden, heads)
    if past_key is not None and len(past_key) == 4:
        total = add_dims(past_key[2], seq)
    else:
        total = seq
    kv = (dtype, (batch, kv_heads, total, head))
    return [(dtype, (batch, seq, _mul(heads, head))), kv, kv,
            (FLOAT, (batch, heads, seq, total))]


def _onnx_attention(node: Node) -> list[Out]:
    """ONNX's own Attention (opset 23): Q/K/V [B, heads, S, head] or [B, S, heads * head]."""
    q, k, v, past_key = (_shape(_input(node, i)) for i in (0, 1, 2, 4))
    dtype = _elem(_input(node, 0))
    if not q or not k or not v:
        return [None]
    if len(q) == 4:
        batch, q_heads, seq = q[0], q[1], q[2]
        kv_heads, length, head, v_head = k[1], k[2], k[3], v[3]
        out = (batch, q_heads, seq, v_head)
    else:
        batch, seq = q[0], q[1]
        q_heads = node.attrs.get("q_num_heads")
        kv_heads = node.attrs.get("kv_num_heads")
        length = k[1]
        head, v_head = _div(k[2], kv_heads), _div(v[2], kv_heads)
        out = (batch, seq, _mul(q_heads, v_head))
    total = add_dims(past_key[2], length) if past_key and len(past_key) == 4 else length
    return [(dtype, out), (dtype, (batch, kv_heads, total, head)),
            (dtype, (batch, kv_heads, total, v_head)), (dtype, (batch, q_heads, seq, total))]


def _global_average_pool(node: Node) -> list[Out]:
    x = _input(node, 0)
    shape = _shape(x)
    if shape is None:
        return [None]
    channels_last = node.attrs.get("channels_last", 0)
    pooled = (shape[0], *([1] * (len(shape) - 2)), shape[-1]) if channels_last else \
        (shape[0], shape[1], *([1] * (len(shape) - 2)))
    return [(_elem(x), pooled)]


def _reorder_input(node: Node) -> list[Out]:
    """NCHW (or NHWC, ``channels_last``) into the blocked layout: [N, C padded, H, W].  The
    block size is the machine's, not the file's: the padded C is what the blocked
    convolutions reading it take (their weights' input channels times the groups)."""
    x = _input(node, 0)
    shape = _shape(x)
    if shape is None or len(shape) < 3:
        return [None]
    spatial = shape[1:-1] if node.attrs.get("channels_last", 0) else shape[2:]
    return [(_elem(x), (shape[0], _padded_channels(node), *spatial))]


def _padded_channels(node: Node) -> Dim:
    for reader, index in node.outputs[0].uses if node.outputs and node.outputs[0] else ():
        weight = _shape(_input(reader, 1))
        if (reader.domain, reader.op_type, index) == (NCHWC_DOMAIN, "Conv", 0) and weight:
            return _mul(weight[1], int(reader.attrs.get("group", 1)))
    return None


def _reorder_output(node: Node) -> list[Out]:
    """Out of the blocked layout: the first ``channels`` of C, as NCHW or NHWC."""
    x = _input(node, 0)
    shape = _shape(x)
    channels = node.attrs.get("channels")
    if shape is None or len(shape) < 3 or not channels:
        return [None]
    channels = int(channels)
    dims = (shape[0], *shape[2:], channels) if node.attrs.get("channels_last", 0) else \
        (shape[0], channels, *shape[2:])
    return [(_elem(x), dims)]


def _blocked_upsample(node: Node) -> list[Out]:
    """Each spatial dim times its ``scales`` entry (ints, one per dim of the tensor)."""
    x = _input(node, 0)
    shape, scales = _shape(x), node.attrs.get("scales")
    if shape is None or not scales or len(scales) != len(shape):
        return [None]
    return [(_elem(x), tuple(_mul(dim, int(scale)) for dim, scale in zip(shape, scales)))]


def _tokenizer(node: Node) -> list[Out]:
    """Text split into tokens (scikit-learn's text pipelines): the input's shape and one
    more dim, as long as the most tokens any string gives (known only when it runs)."""
    shape = _shape(_input(node, 0))
    return [(TensorProto.STRING, None if shape is None else (*shape, None))]


_OWN_RULES: dict[tuple[str, str], Callable[[Node], list[Out]]] = {
    (MS_DOMAIN, "Attention"): _ms_attention,
    (MS_DOMAIN, "MultiHeadAttention"): _multi_head_attention,
    (MS_DOMAIN, "GroupQueryAttention"): _group_query_attention,
    ("", "Attention"): _onnx_attention,
    (MS_DOMAIN, "SkipLayerNormalization"): _skip_norm,
    (MS_DOMAIN, "SkipSimplifiedLayerNormalization"): _skip_norm,
    ("", "SimplifiedLayerNormalization"): _norm,
    # onnxruntime runs LayerNormalization at any opset; onnx types it from opset 17 on
    ("", "LayerNormalization"): _norm,
    (MS_DOMAIN, "FusedMatMul"): _fused_matmul,
    (MS_DOMAIN, "MatMulNBits"): _matmul_nbits,
    (MS_DOMAIN, "QLinearGlobalAveragePool"): _global_average_pool,
    (NCHWC_DOMAIN, "ReorderInput"): _reorder_input,
    (NCHWC_DOMAIN, "ReorderOutput"): _reorder_output,
    (NCHWC_DOMAIN, "Upsample"): _blocked_upsample,
    (MS_DOMAIN, "Tokenizer"): _tokenizer,
}
SHAPE_RULES: dict[tuple[str, str], Callable[[Node], list[Out]]] = {
    **{key: _same_as_input for key in _SAME_AS_INPUT},
    **{key: functools.partial(_stand_in, spec) for key, spec in STAND_INS.items()},
    **_OWN_RULES,
}


def knows(op_type: str, domain: str) -> bool:
    """True if GraphLab types (and prices) this op although onnx has no schema for it."""
    return (domain, op_type) in SHAPE_RULES


def infer_outputs(node: Node) -> bool:
    """Fill the types and shapes of the node's outputs that are still unknown with its rule,
    and make concrete the dims its rule sizes where the output only names them (a shape a
    file stated before its inputs were bound); True if anything was learnt."""
    rule = SHAPE_RULES.get((node.domain, node.op_type))
    if rule is None:
        return False
    learnt = False
    for out, found in zip(node.outputs, rule(node)):
        if out is None or found is None or out.type_proto is not None:
            continue
        dtype, shape = found
        if out.elem_type is None and dtype:
            out.elem_type, learnt = dtype, True
        if shape is None:
            continue
        shape = tuple(shape)
        if out.shape is None:
            out.shape, learnt = shape, True
        elif len(out.shape) == len(shape):
            sharper = tuple(theirs if isinstance(theirs, int) and not isinstance(mine, int)
                            else mine for mine, theirs in zip(out.shape, shape))
            if sharper != out.shape:
                out.shape, learnt = sharper, True
    return learnt
