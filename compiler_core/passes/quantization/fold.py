"""The fold_qdq pass: DequantizeLinear → layer → QuantizeLinear becomes one integer op."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value
from ...wording import plural
from ..base import Pass, PassContext, PassResult
from ..registry import register
from .layers import Layer, find_layers
from .quantize import QuantizeInt8

RULE = "fold_qdq"
_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


@register
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
    """

    name = "fold_qdq"
    family = "quantization"
    tolerance = QuantizeInt8.tolerance
    tolerance_reason = "int8 kernels with int32 bias and requantization"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        for node in list(graph.nodes):
            if not graph.has_node(node):
                continue
            for layer in find_layers(node, float_operands=False)[0]:
                reason = _fold(graph, ctx, layer)
                if reason is None:
                    result.rewrites += 1
                elif reason:
                    result.decline(node, RULE, reason)
        if result.rewrites:
            made = [n.op_type for n in graph.nodes if n.provenance is not None
                    and n.provenance.pass_name == ctx.pass_name]
            result.notes.append(f"folded {plural(result.rewrites, 'layer')} into integer ops: " +
                                ", ".join(f"{made.count(op)} {op}" for op in sorted(set(made))))
        return result


def _fold(graph: Graph, ctx: PassContext, layer: Layer) -> str | None:
    """Fold one layer; a reason when it cannot, '' when it is not in QDQ form at all."""
    node, inner = layer.node, layer.inner
    dq_x, dq_w = (_producer(node.inputs[i], "DequantizeLinear")
                  for i in (layer.activation, layer.weight))
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
    bias = _bias(node, inner)
    if inner.op_type != "Conv" and bias is not None:
        return ("kept in QDQ form: QLinearMatMul has no bias input, so the bias add keeps the "
                "layer in float")
    if inner.op_type == "Gemm" and (inner.attrs.get("transA", 0)
                                    or inner.attrs.get("alpha", 1.0) != 1.0):
        return "kept in QDQ form: a Gemm with transA or alpha is not a plain matrix product"
    x_scale, x_zero = dq_x.inputs[1], dq_x.inputs[2]
    w_scale = dq_w.inputs[1].constant_value()
    inputs = [dq_x.inputs[0], x_scale, x_zero]
    if inner.op_type == "Conv":
        bias_codes = np.rint(bias.constant_value().astype(np.float64) / (
            float(x_scale.constant_value()) * w_scale.astype(np.float64))).astype(np.int32) \
            if bias is not None else None
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
        inputs.append(graph.add_initializer(f"{bias.name}_int32", bias_codes))
    replaced = [dq_x, dq_w, node, quantize]
    provenance = ctx.provenance(RULE, replaced)
    result, order = quantize.outputs[0], node.order
    graph.remove_node(quantize)
    graph.remove_node(node)
    graph.add_node(op_type, inputs, [result], attrs=attrs, name=f"{inner.name}_{op_type}",
                   provenance=provenance, order=order)
    for dequantize in (dq_x, dq_w):
        _remove_if_unread(graph, dequantize)
    return None


def _producer(value: Value | None, op_type: str) -> Node | None:
    producer = value.producer if value is not None else None
    return producer if producer is not None and producer.op_type == op_type else None


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


def _remove_if_unread(graph: Graph, dequantize: Node) -> None:
    """Drop a DequantizeLinear nobody reads any more, and its constants nobody else reads."""
    if dequantize.outputs[0].uses or dequantize.outputs[0].is_graph_output:
        return
    constants = [v for v in dequantize.inputs if v is not None and v.is_initializer]
    graph.remove_node(dequantize)
    for value in constants:
        if not value.uses:
            graph.remove_initializer(value)
