"""QDQ groups other than a Conv or MatMul layer, in a model quantized before it reached us.

A model quantized elsewhere (onnxruntime's ``quantize_static`` in QDQ format, a PyTorch or
TensorFlow export) writes every int8 op as DequantizeLinear → float op → QuantizeLinear.  The
Conv/MatMul layers become QLinearConv/QLinearMatMul (``fold.py``); this module handles the
rest of a CNN's groups:

- **Ops that only move data** (MaxPool, Flatten, Reshape, Transpose, Squeeze, Unsqueeze,
  Identity, Pad) between a Dequantize and a Quantize of the same scale and zero point run on
  the int8 codes: rounding is monotonic and the codes map one to one onto the values, so
  nothing changes (a Pad's constant is written as its code).
- **Add, Mul, GlobalAveragePool, AveragePool and a Gemm with a bias** have no integer op in
  standard ONNX.  The group becomes one fused node named after onnxruntime's operator
  (``graphlab.QLinearAdd``, ``QLinearMul``, ``QLinearGlobalAveragePool``,
  ``QLinearAveragePool``, ``QGemm``) whose inputs are that operator's, codes, scales and zero
  points in its order, and whose body is the group itself: the portable output computes
  exactly what the input did (any runtime runs the model-local function), and
  ``--runtime onnxruntime`` writes the operator (``lowering/ort_ops.py``).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...ir import Graph, Node, Value
from ..framework.base import PassContext
from ..framework.rewrite import fuse_nodes
from .qdq import QUANTIZATION_TRANSPARENT

RULE_CODES = "qdq_on_codes"
RULE_GROUP = "qdq_group"
CODE_MOVERS = QUANTIZATION_TRANSPARENT | {"Pad"}
# Float op of a group -> the onnxruntime operator the fused node is named after.
FUSED_GROUPS = {"Add": "QLinearAdd", "Mul": "QLinearMul",
                "GlobalAveragePool": "QLinearGlobalAveragePool",
                "AveragePool": "QLinearAveragePool", "Gemm": "QGemm"}
_POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")


# ------------------------------------------------------------------------------ reading
def dequantize_of(value: Value | None) -> Node | None:
    """The DequantizeLinear (standard domain) that produces ``value``, if one does."""
    producer = value.producer if value is not None else None
    if producer is None or producer.op_type != "DequantizeLinear" or producer.domain != "":
        return None
    return producer


def per_tensor(node: Node) -> bool:
    """A Quantize/Dequantize with one constant scale and an explicit constant zero point."""
    scale, zero = node.input(1), node.input(2)
    return (scale is not None and zero is not None and scale.is_constant and zero.is_constant
            and scale.stored.size == 1 and zero.stored.size == 1
            and not node.attrs.get("block_size"))


def _scalar(value: Value) -> np.ndarray:
    return np.asarray(value.constant_value()).reshape(())


def same_quantization(first: Node, second: Node) -> bool:
    """Both per tensor, with equal scales and equal zero points of one type."""
    if not (per_tensor(first) and per_tensor(second)):
        return False
    zeros = [_scalar(n.inputs[2]) for n in (first, second)]
    return (zeros[0].dtype == zeros[1].dtype and zeros[0] == zeros[1]
            and _scalar(first.inputs[1]) == _scalar(second.inputs[1]))


def group_root(quantize: Node) -> Node | None:
    """The op whose result ``quantize`` quantizes, when nothing else reads that result."""
    value = quantize.inputs[0]
    node = value.producer
    if node is None or value.is_graph_output or len(value.uses) != 1 or node.body is not None \
            or len([o for o in node.outputs if o is not None]) != 1:
        return None
    return node


# ------------------------------------------------------------------------------ codes
def move_codes(graph: Graph, ctx: PassContext, node: Node, quantize: Node) -> str | None:
    """Run a data-movement op on the int8 codes; a reason when it cannot ('' if no group)."""
    dequantize = dequantize_of(node.inputs[0])
    if dequantize is None or node.domain != "" or node.op_type not in CODE_MOVERS:
        return ""
    if not same_quantization(dequantize, quantize):
        return (f"kept in QDQ form: the {node.op_type} reads values at one scale and zero "
                f"point and its result is quantized at another, so it cannot move the codes")
    inputs = [dequantize.inputs[0], *node.inputs[1:]]
    if node.op_type == "Pad":
        pad_value = _pad_code(graph, node, dequantize)
        if isinstance(pad_value, str):
            return pad_value
        inputs = inputs[:2] + [pad_value] + inputs[3:]
    provenance = ctx.provenance(RULE_CODES, [dequantize, node, quantize])
    result, order, attrs = quantize.outputs[0], node.order, node.attrs
    graph.remove_node(quantize)
    graph.remove_node(node)
    graph.add_node(node.op_type, inputs, [result], attrs=attrs, name=node.name,
                   provenance=provenance, order=order)
    remove_if_unread(graph, dequantize)
    return None


def _pad_code(graph: Graph, pad: Node, dequantize: Node) -> Value | str:
    """The code of the value a constant Pad writes (0.0 when it gives none)."""
    if pad.attrs.get("mode", b"constant") not in (b"constant", "constant"):
        return pad.input(2)   # edge and reflect copy codes like values
    given = pad.input(2)
    inner = dequantize_of(given)
    if inner is not None and same_quantization(inner, dequantize):
        return inner.inputs[0]
    value = 0.0 if given is None else _constant_float(given)
    if value is None:
        return "kept in QDQ form: the Pad's value is computed at run time"
    zero = _scalar(dequantize.inputs[2])
    info = np.iinfo(zero.dtype)
    code = np.clip(np.rint(np.float32(value) / _scalar(dequantize.inputs[1])) + int(zero),
                   info.min, info.max)
    return graph.add_initializer(f"{pad.name}_pad_code", np.array(code, dtype=zero.dtype))


def _constant_float(value: Value) -> float | None:
    """A scalar known before run time: a constant, or the Dequantize of constants."""
    if value.is_constant:
        return float(_scalar(value))
    inner = dequantize_of(value)
    if inner is None or not per_tensor(inner) or not inner.inputs[0].is_constant:
        return None
    return float((int(_scalar(inner.inputs[0])) - int(_scalar(inner.inputs[2])))
                 * _scalar(inner.inputs[1]))


# ------------------------------------------------------------------------------ groups
def fuse_group(graph: Graph, ctx: PassContext, node: Node, quantize: Node) -> str | None:
    """Fuse an Add/Mul/pooling/Gemm group into one ``graphlab.QLinear*`` node; a reason when
    it cannot ('' when this is no such group)."""
    if node.domain != "" or node.op_type not in FUSED_GROUPS:
        return ""
    data = [node.inputs[0]] + ([node.input(1)] if node.op_type in ("Add", "Mul", "Gemm")
                               else [])
    dequantizes = [dequantize_of(v) for v in data]
    if any(d is None for d in dequantizes):
        return ""
    if not all(per_tensor(d) for d in dequantizes[:1] + dequantizes[1:] * (
            node.op_type != "Gemm")) or not per_tensor(quantize):
        return (f"kept in QDQ form: onnxruntime's {FUSED_GROUPS[node.op_type]} needs one "
                f"scale and zero point per activation tensor")
    attrs = _group_attrs(node)
    if isinstance(attrs, str):
        return attrs
    if node.op_type == "Gemm" and node.input(2) is not None:
        bias = _gemm_bias(node, dequantizes)
        if isinstance(bias, str):
            return bias
        dequantizes.append(bias)
    dequantizes = [_private(graph, d, node) for d in dequantizes]
    operands: list[Value] = []
    for index, dequantize in enumerate(dequantizes):
        bias = node.op_type == "Gemm" and index == 2
        operands += [dequantize.inputs[0]] if bias else list(dequantize.inputs[:3])
    operands += [quantize.inputs[1], quantize.inputs[2]]
    fused = fuse_nodes(graph, ctx, [*dequantizes, node, quantize], FUSED_GROUPS[node.op_type],
                       RULE_GROUP, attrs=attrs, operands=_distinct(graph, operands))
    return None if fused is not None else "kept in QDQ form: fusing it would make a cycle"


def _group_attrs(node: Node) -> dict | str:
    """The attributes onnxruntime's operator takes, or why it cannot take this node's."""
    if node.op_type == "GlobalAveragePool":
        return {"channels_last": 0}
    if node.op_type == "AveragePool":
        if any(d != 1 for d in node.attrs.get("dilations", ())):
            return "kept in QDQ form: onnxruntime's QLinearAveragePool has no dilations"
        return {**{k: v for k, v in node.attrs.items() if k in _POOL_ATTRS}, "channels_last": 0}
    if node.op_type == "Gemm":
        if node.input(2) is not None and float(node.attrs.get("beta", 1.0)) != 1.0:
            return "kept in QDQ form: onnxruntime's QGemm adds its bias with beta 1"
        return {"alpha": float(node.attrs.get("alpha", 1.0)),
                "transA": int(node.attrs.get("transA", 0)),
                "transB": int(node.attrs.get("transB", 0))}
    return {}


def _gemm_bias(node: Node, dequantizes: list[Node]) -> Node | str:
    """The Dequantize of the Gemm's int32 bias, when its scale is s_a·s_b and its zero point
    0 (what QGemm's int32 C means)."""
    bias = dequantize_of(node.input(2))
    codes = bias.inputs[0] if bias is not None else None
    if codes is None or codes.elem_type != TensorProto.INT32 or not codes.is_constant:
        return "kept in QDQ form: QGemm adds an int32 bias; this one is not int32 codes"
    zero = bias.input(2)
    product = (float(_scalar(dequantizes[0].inputs[1]))
               * np.asarray(dequantizes[1].inputs[1].constant_value(), np.float64))
    scale = np.asarray(bias.inputs[1].constant_value(), np.float64)
    if (zero is not None and np.any(zero.constant_value())) or scale.shape != product.shape \
            and scale.size != 1 or not np.allclose(scale, product, rtol=1e-6, atol=0):
        return ("kept in QDQ form: the bias is not quantized at s_a·s_b with zero point 0, "
                "as QGemm's int32 bias is")
    return bias


def _private(graph: Graph, dequantize: Node, reader: Node) -> Node:
    """``dequantize``, or a copy read by ``reader`` alone when others read it too (the group
    takes its Dequantize inside; the others keep theirs)."""
    value = dequantize.outputs[0]
    if not value.is_graph_output and all(node is reader for node, _ in value.uses):
        return dequantize
    copy = graph.add_node("DequantizeLinear", dequantize.inputs, 1, attrs=dequantize.attrs,
                          name=f"{dequantize.name}_for_{reader.name}",
                          provenance=dequantize.provenance, order=reader.order - 0.5)
    copy.outputs[0].elem_type, copy.outputs[0].shape = value.elem_type, value.shape
    for index, operand in enumerate(reader.inputs):
        if operand is value:
            reader.replace_input(index, copy.outputs[0])
    return copy


def _distinct(graph: Graph, operands: list[Value]) -> list[Value]:
    """The operands with a repeated constant (one scale shared by two tensors) copied, so the
    fused node's body reads each operand once."""
    seen: set[str] = set()
    result = []
    for value in operands:
        if value.name in seen:
            value = graph.add_initializer(value.name, value.constant_value())
        seen.add(value.name)
        result.append(value)
    return result


def remove_if_unread(graph: Graph, dequantize: Node) -> None:
    """Drop a DequantizeLinear nobody reads any more, and its constants nobody else reads."""
    if dequantize.outputs[0].uses or dequantize.outputs[0].is_graph_output:
        return
    constants = [v for v in dequantize.inputs if v is not None and v.is_initializer]
    graph.remove_node(dequantize)
    for value in constants:
        if not value.uses:
            graph.remove_initializer(value)
