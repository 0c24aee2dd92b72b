"""Inserting QuantizeLinear/DequantizeLinear (QDQ) nodes: the ONNX way to write an int8 model.

In the QDQ format a quantized tensor is visible on the graph: ``QuantizeLinear`` turns float
into int8 codes, ``DequantizeLinear`` turns them back, and the op in between reads values that
int8 can represent exactly.  onnxruntime runs such a graph as it stands (and its own
optimizer, or our ``fold_qdq`` pass, fuses the pairs into int8 kernels).  Weights are stored
as int8 initializers read through a per-channel ``DequantizeLinear``; an activation gets one
Q/DQ pair, shared by every quantized layer that reads it.

Ops that only move data (MaxPool, Flatten, Reshape, Transpose, ...) commute with a per-tensor
quantization — max(q(a), q(b)) = q(max(a, b)) because rounding is monotonic — so the Quantize
is hoisted above them when the float tensor is needed nowhere else: they then move int8
codes, four times fewer bytes, and the int8 layer before them can write int8 directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto

from ...ir import Graph, Node, Value
from ..framework.base import PassContext
from .int8 import TensorQuantization, quantize_per_channel
from .layers import Layer

# Ops through which a per-tensor quantization can be moved without changing any value.
QUANTIZATION_TRANSPARENT = frozenset({"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
                                      "Unsqueeze", "Identity"})
RULE_ACTIVATION = "qdq_activation"
RULE_WEIGHT = "qdq_weight"


@dataclass
class ActivationSite:
    """Where one activation gets quantized.

    ``uses`` are the (node, input index) pairs that will read the dequantized value; ``top``
    is the value the QuantizeLinear reads: the activation itself, or the input of the chain of
    transparent ops (``chain``, top to bottom) the Quantize was hoisted above.
    """

    activation: Value
    uses: list[tuple[Node, int]]
    top: Value
    chain: list[Node] = field(default_factory=list)


def plan_activation_sites(layers: list[Layer]) -> list[ActivationSite]:
    """One site per distinct activation the layers read, hoisted where that is free."""
    sites: dict[str, ActivationSite] = {}
    for layer in layers:
        value = layer.node.inputs[layer.activation]
        site = sites.setdefault(value.name, ActivationSite(value, [], value))
        site.uses.append((layer.node, layer.activation))
    for site in sites.values():
        _hoist(site)
    return list(sites.values())


def _hoist(site: ActivationSite) -> None:
    """Move the site's Quantize up through transparent ops whose float output only it reads."""
    readers = {(node.id, index) for node, index in site.uses}
    value = site.activation
    while True:
        producer = value.producer
        if (producer is None or value.is_graph_output or producer.domain != ""
                or producer.op_type not in QUANTIZATION_TRANSPARENT
                or len([o for o in producer.outputs if o is not None]) != 1
                or {(node.id, index) for node, index in value.uses} != readers):
            return
        data = producer.inputs[0]
        if data is None or data.elem_type != TensorProto.FLOAT or data.is_initializer \
                or any(node is not producer for node, _ in data.uses):
            return
        site.chain.insert(0, producer)
        site.top = data
        readers = {(producer.id, 0)}
        value = data


def quantize_activation(graph: Graph, ctx: PassContext, site: ActivationSite,
                        params: TensorQuantization) -> None:
    """Insert Q after ``site.top``, run the chain on int8, DQ before the quantized readers."""
    top = site.top
    scale = graph.add_initializer(f"{top.name}_scale", np.array(params.scale, np.float32))
    zero_point = graph.add_initializer(f"{top.name}_zero_point",
                                       np.array(params.zero_point, np.int8))
    provenance = ctx.provenance(RULE_ACTIVATION, [node for node, _ in site.uses])
    first_use = min(node.order for node, _ in site.uses)
    codes = graph.new_value(f"{top.name}_int8", TensorProto.INT8, top.shape)
    graph.add_node("QuantizeLinear", [top, scale, zero_point], [codes],
                   name=f"{top.name}_QuantizeLinear", provenance=provenance,
                   order=top.producer.order + 0.25 if top.producer else first_use - 0.5)
    for node in site.chain:
        node.replace_input(0, codes)
        codes = node.outputs[0]
        codes.elem_type = TensorProto.INT8
    activation = site.activation
    restored = graph.new_value(f"{activation.name}_dequantized", TensorProto.FLOAT,
                               activation.shape)
    graph.add_node("DequantizeLinear", [codes, scale, zero_point], [restored],
                   name=f"{activation.name}_DequantizeLinear", provenance=provenance,
                   order=first_use - 0.25)
    for node, index in site.uses:
        node.replace_input(index, restored)


def quantize_weight(graph: Graph, ctx: PassContext, layer: Layer,
                    done: dict[tuple[str, int], Value]) -> tuple[int, int]:
    """Make the layer read its weight through int8 codes and a per-channel DequantizeLinear.

    ``done`` shares one DequantizeLinear among layers reading the same weight on the same
    axis.  Returns (float bytes, int8 bytes) of the weight when this call quantized it.
    """
    weight = layer.node.inputs[layer.weight]
    key = (weight.name, layer.axis)
    sizes = (0, 0)
    if key not in done:
        array = weight.constant_value()
        codes, scale = quantize_per_channel(array, layer.axis)
        inputs = [graph.add_initializer(f"{weight.name}_int8", codes),
                  graph.add_initializer(f"{weight.name}_scale", scale),
                  graph.add_initializer(f"{weight.name}_zero_point",
                                        np.zeros(scale.shape, np.int8))]
        restored = graph.new_value(f"{weight.name}_dequantized", TensorProto.FLOAT,
                                   weight.shape)
        graph.add_node("DequantizeLinear", inputs, [restored], attrs={"axis": layer.axis},
                       name=f"{weight.name}_DequantizeLinear",
                       provenance=ctx.provenance(RULE_WEIGHT, [layer.node]),
                       order=layer.node.order - 0.5)
        done[key] = restored
        sizes = (array.nbytes, codes.nbytes + scale.nbytes + scale.size)
    layer.node.replace_input(layer.weight, done[key])
    if weight.is_initializer and not weight.uses and not weight.is_graph_output:
        graph.remove_initializer(weight)
    return sizes
