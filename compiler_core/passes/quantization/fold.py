"""The fold_qdq pass: DequantizeLinear → layer → QuantizeLinear becomes one integer op."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...ir import Graph, Node, Value
from ...ir.dtypes import dtype_name
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pass_registry import register_pass
from .layers import Layer, find_layers, is_linear
from .qdq_groups import (dequantize_of, fuse_group, group_root, move_codes, per_tensor,
                         remove_if_unread)

RULE = "fold_qdq"
_QDQ_OPS = ("DequantizeLinear", "QuantizeLinear")
_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


@register_pass
class FoldQdq(Pass):
    """Fold the Quantize/Dequantize pairs around each int8 layer into one integer op
    (QLinearConv, QLinearMatMul) that reads int8, multiplies int8, and writes int8 — so no
    explicit quantize or dequantize kernel runs between layers.

    In QDQ form every quantized layer is dequantize, float op, quantize: seven ops for two
    layers and a GELU, each format conversion a full pass over a tensor.  A compiler that
    handles quantization natively folds the scales into the layer instead: the int8 products
    accumulate in int32 (the bias is stored as int32 at scale s_x·s_w, so it adds there too),
    and one multiplier (s_x·s_w / s_y) rescales the sum straight to the next layer's int8
    codes.  A ReLU before the Quantize costs nothing either when the output's zero point is
    the lowest code: saturation already clamps negatives to 0.  On a fixed-function chip
    whose datapath is int8 end to end, a conversion not folded away costs real cycles.
    A layer whose result is not quantized again (a model output, a float op after it) keeps
    its QDQ form, and the reason is recorded.

    A model quantized before it reached GraphLab (onnxruntime's quantize_static, QDQ form)
    gets the same treatment, plus its other groups: data movement (MaxPool, Flatten, Pad, ...)
    runs on the codes, and Add, Mul, average pooling and a Gemm with its int32 bias become
    fused nodes named after onnxruntime's QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
    QLinearAveragePool and QGemm, whose bodies are the groups (``qdq_groups.py``).
    """

    name = "fold_qdq"
    family = "quantization"
    # No tolerance of its own: an integer kernel computes what its QDQ group means, up to a
    # float rounding that may flip a code, which the verifier allows on any model that
    # quantizes at run time (``quantized_outputs``); after quantize_int8 that pass's
    # tolerance holds.

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        if not _has_qdq(graph):   # nothing to fold: no layer needs its structure judged
            return result
        for node in list(graph.nodes):
            if not graph.has_node(node):
                continue
            for layer in find_layers(node, float_operands=False)[0]:
                self._record(result, node, _fold(graph, ctx, layer))
            if node.op_type == "QuantizeLinear" and node.domain == "":
                root = group_root(node)
                if root is not None and not is_linear(root):
                    reason = move_codes(graph, ctx, root, node)
                    self._record(result, root, fuse_group(graph, ctx, root, node)
                                 if reason == "" else reason)
        if result.rewrites:
            made = [n.op_type for n in graph.nodes if n.provenance is not None
                    and n.provenance.pass_name == ctx.pass_name]
            result.notes.append(f"folded {plural(result.rewrites, 'QDQ group')} into integer "
                                f"ops: " + ", ".join(f"{made.count(op)} {op}"
                                                      for op in sorted(set(made))))
        return result

    @staticmethod
    def _record(result: PassResult, node: Node, reason: str | None) -> None:
        if reason is None:
            result.rewrites += 1
        elif reason:
            result.decline(node, RULE, reason)


def _has_qdq(graph: Graph) -> bool:
    """A DequantizeLinear or QuantizeLinear is in the graph: every fold starts at one (a layer
    reading a dequantized operand, a group a QuantizeLinear ends)."""
    return any(node.op_type in _QDQ_OPS for node in graph.nodes)


def _fold(graph: Graph, ctx: PassContext, layer: Layer) -> str | None:
    """Fold one layer; a reason when it cannot, '' when it is not in QDQ form at all."""
    node, inner = layer.node, layer.inner
    dq_x, dq_w = (dequantize_of(node.inputs[i]) for i in (layer.activation, layer.weight))
    if dq_x is None or dq_w is None or not dq_w.inputs[0].is_constant:
        return ""
    output = node.outputs[0]
    readers = output.users()
    if output.is_graph_output or len(readers) != 1 or readers[0].op_type != "QuantizeLinear":
        reader = "it is a model output" if output.is_graph_output else \
            "it is read by " + ", ".join(f"{r.name} ({r.op_type})" for r in readers)
        return (f"kept in QDQ form: its result is not quantized again ({reader}), so there is "
                f"no requantization to fold the scales into")
    quantize = readers[0]
    reason = _epilogue_reason(node, inner, quantize)
    if reason is not None:
        return reason
    if not per_tensor(dq_x) or not per_tensor(quantize):
        return (f"kept in QDQ form: {inner.op_type}'s integer op takes one scale and zero "
                f"point per activation tensor")
    codes_in, codes_out = dq_x.inputs[0].elem_type, quantize.outputs[0].elem_type
    if codes_in != codes_out:
        return (f"kept in QDQ form: its input is quantized to {dtype_name(codes_in)} and its "
                f"output to {dtype_name(codes_out)}; onnxruntime runs {inner.op_type}'s "
                f"integer op only with one code type in and out")
    if not _channels_match(dq_w, layer):
        return (f"kept in QDQ form: the weight's scales are per channel along another axis "
                f"than {inner.op_type}'s output channels")
    bias = _bias(node, inner)
    plain_gemm = inner.op_type == "Gemm" and not inner.attrs.get("transA", 0) \
        and inner.attrs.get("alpha", 1.0) == 1.0
    if inner.op_type == "Gemm" and node is inner and (bias is not None or not plain_gemm):
        return fuse_group(graph, ctx, node, quantize)
    if inner.op_type != "Conv" and bias is not None:
        return ("kept in QDQ form: QLinearMatMul has no bias input, so the bias add keeps the "
                "layer in float")
    if inner.op_type == "Gemm" and not plain_gemm:
        return "kept in QDQ form: a Gemm with transA or alpha is not a plain matrix product"
    x_scale, x_zero = dq_x.inputs[1], dq_x.inputs[2]
    w_scale = dq_w.inputs[1].constant_value()
    inputs = [dq_x.inputs[0], x_scale, x_zero]
    if inner.op_type == "Conv":
        bias_codes = _bias_codes(graph, bias, float(x_scale.constant_value()), w_scale) \
            if bias is not None else None
        if isinstance(bias_codes, str):
            return bias_codes
        op_type, attrs = "QLinearConv", {k: v for k, v in inner.attrs.items()
                                         if k in _CONV_ATTRS}
    else:
        bias_codes, op_type, attrs = None, "QLinearMatMul", None
    weight_codes = dq_w.inputs[0]
    if layer.axis == 0 and inner.op_type == "Gemm":  # transB: the product needs [K, N] codes
        weight_codes = graph.add_initializer(f"{weight_codes.name}_transposed",
                                             np.ascontiguousarray(
                                                 weight_codes.constant_value().T))
    inputs += [weight_codes, dq_w.inputs[1], dq_w.inputs[2], quantize.inputs[1],
               quantize.inputs[2]]
    if bias_codes is not None:
        inputs.append(bias_codes)
    replaced = [dq_x, dq_w, node, quantize] + ([bias.producer] if dequantize_of(bias) else [])
    provenance = ctx.provenance(RULE, replaced)
    result, order = quantize.outputs[0], node.order
    graph.remove_node(quantize)
    graph.remove_node(node)
    graph.add_node(op_type, inputs, [result], attrs=attrs, name=f"{inner.name}_{op_type}",
                   provenance=provenance, order=order)
    for dequantize in replaced:
        if dequantize.op_type == "DequantizeLinear" and graph.has_node(dequantize):
            remove_if_unread(graph, dequantize)
    return None


def _epilogue_reason(node: Node, inner: Node, quantize: Node) -> str | None:
    """Why what runs after the linear op (inside a fused node) cannot fold, or None."""
    if node.body is None:
        return None
    after = [n for n in node.body.nodes if n is not inner]
    if not after:
        return None
    if len(after) > 1 or after[0].op_type != "Relu":
        ops = ", ".join(n.op_type for n in after)
        return f"kept in QDQ form: {ops} after the {inner.op_type} has no int8 epilogue"
    zero = quantize.inputs[2].constant_value() if len(quantize.inputs) > 2 else None
    if zero is None or int(np.asarray(zero)) != np.iinfo(np.int8).min:
        return ("kept in QDQ form: the Relu folds into saturation only when the output's zero "
                "point is -128 (its range starts at 0)")
    return None


def _bias(node: Node, inner: Node) -> Value | None:
    """The constant the linear op adds (its third input), as the top-level node reads it."""
    bias = inner.input(2)
    if bias is None or node.body is None:
        return bias
    return next((outer for operand, outer in zip(node.body.inputs, node.inputs)
                 if operand is bias), bias)  # else a constant the body holds itself


def _channels_match(dequantize: Node, layer: Layer) -> bool:
    """A per-tensor weight scale, or one per output channel along the layer's channel axis."""
    scale = dequantize.inputs[1].stored
    if scale is None or scale.size == 1:
        return True
    rank = len(dequantize.inputs[0].shape or ())
    return int(dequantize.attrs.get("axis", 1)) % max(rank, 1) == layer.axis


def _bias_codes(graph: Graph, bias: Value, x_scale: float,
                w_scale: np.ndarray) -> Value | str:
    """The bias as int32 codes at scale s_x·s_w: a quantized bias already at that scale (a
    model quantized elsewhere) as it is, a float constant rounded to it."""
    product = x_scale * np.asarray(w_scale, np.float64)
    dequantize = dequantize_of(bias)
    if dequantize is not None:
        codes, scale = dequantize.inputs[0], dequantize.inputs[1].constant_value()
        zero = dequantize.input(2)
        if codes.elem_type == TensorProto.INT32 and codes.is_constant and scale is not None \
                and (zero is None or not np.any(zero.constant_value())) \
                and np.allclose(np.broadcast_to(scale, product.shape), product, rtol=1e-6):
            return codes
        return ("kept in QDQ form: the bias is not int32 codes at scale s_x·s_w with zero "
                "point 0, as QLinearConv's bias is")
    data = bias.constant_value()
    if data is None:
        return "kept in QDQ form: the bias is computed at run time"
    codes = np.rint(data.astype(np.float64) / product).astype(np.int32)
    return graph.add_initializer(f"{bias.name}_int32", codes)
