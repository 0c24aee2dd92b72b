"""Which linear layers of a node can run in int8, read at the node's boundary.

A layer is a Conv, Gemm or MatMul: an activation times a constant weight, where int8 pays
off.  Quantization happens on the *operands* of a top-level node — Q/DQ pairs are inserted
on the edges into it — so a fused node (FusedConv, a fused Attention) is looked into: a layer
inside its body qualifies when both of its operands are operands of the fused node itself.
An operand is only quantized when everything that reads it inside the node is such a layer
(a residual Add reading the same input inside the body must keep seeing float values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from ...ir import Node, Value

# Linear op -> the axis of its weight that holds the output channels (quantized per channel).
_OUTPUT_CHANNEL_AXIS = {
    "Conv": lambda node: 0,                                  # W [M, C/group, k...]
    "Gemm": lambda node: 0 if node.attrs.get("transB", 0) else 1,
    "MatMul": lambda node: 1,                                # W [K, N]
}
ACTIVATION, WEIGHT = 0, 1  # the input slots of the activation and the weight in all three


@dataclass(frozen=True)
class Layer:
    """A quantizable layer: ``inner`` (the linear op) reads the ``activation`` and ``weight``
    inputs of the top-level ``node`` (``inner`` is ``node`` itself unless it is fused)."""

    node: Node
    inner: Node
    activation: int
    weight: int
    axis: int

    def describe(self) -> str:
        where = "" if self.inner is self.node else f" in {self.node.op_type}"
        return f"{self.inner.op_type}{where}"


@dataclass(frozen=True)
class Refusal:
    """A linear op that stays float, and why."""

    node: Node
    inner: Node
    reason: str


def is_linear(node: Node) -> bool:
    return node.domain == "" and node.body is None and node.op_type in _OUTPUT_CHANNEL_AXIS


def find_layers(node: Node, *, float_operands: bool = True
                ) -> tuple[list[Layer], list[Refusal]]:
    """The quantizable layers of a top-level node and the linear ops it holds that are not.

    ``float_operands=False`` checks only the structure, for layers already quantized (their
    weight arrives through a DequantizeLinear, not as a float constant).
    """
    operands = list(node.body.inputs) if node.body is not None else list(node.inputs)
    inner_nodes = node.body.nodes if node.body is not None else [node]
    layers: list[Layer] = []
    refusals: list[Refusal] = []
    for inner in inner_nodes:
        if not is_linear(inner):
            continue
        reason = _structure_refusal(node, inner, operands, inner_nodes)
        if reason is None and float_operands:
            reason = _operand_refusal(node, inner, operands)
        if reason is not None:
            refusals.append(Refusal(node, inner, reason))
            continue
        layers.append(Layer(node, inner, _index(operands, inner.inputs[ACTIVATION]),
                            _index(operands, inner.inputs[WEIGHT]),
                            _OUTPUT_CHANNEL_AXIS[inner.op_type](inner)))
    return layers, refusals


def _structure_refusal(node: Node, inner: Node, operands: list[Value],
                       inner_nodes: list[Node]) -> str | None:
    """Why the linear op's operands cannot be quantized at the node's boundary, or None."""
    activation, weight = inner.input(ACTIVATION), inner.input(WEIGHT)
    if activation is None or weight is None:
        return "an operand is missing"
    if _index(operands, weight) is None or _index(operands, activation) is None:
        return (f"{inner.op_type} reads a value computed inside {node.op_type}: only operands "
                f"of the top-level node get Q/DQ pairs")
    axis = _OUTPUT_CHANNEL_AXIS[inner.op_type](inner)
    for operand, slot in ((activation, ACTIVATION), (weight, WEIGHT)):
        other = _other_reader(operand, slot, axis, inner_nodes)
        if other is not None:
            return (f"{operand.name} is also read by {other.name} ({other.op_type}), which "
                    f"must see float values")
    return None


def _operand_refusal(node: Node, inner: Node, operands: list[Value]) -> str | None:
    """Why the operands are not a float32 activation and a float32 constant weight, or None."""
    outer_weight = node.inputs[_index(operands, inner.inputs[WEIGHT])]
    array = outer_weight.constant_value()
    if array is None:
        return (f"its second operand {outer_weight.name} is not a constant weight (a product of "
                f"two activations stays float)")
    if array.dtype != np.float32 or outer_weight.elem_type != TensorProto.FLOAT:
        return f"its weight {outer_weight.name} is {array.dtype}, not float32"
    if inner.op_type == "MatMul" and array.ndim != 2:
        return f"its weight {outer_weight.name} has rank {array.ndim}, not 2"
    outer_activation = node.inputs[_index(operands, inner.inputs[ACTIVATION])]
    if outer_activation.elem_type != TensorProto.FLOAT:
        return f"its input {outer_activation.name} is not float32"
    if outer_activation.is_constant:
        return f"its input {outer_activation.name} is a constant, not an activation"
    return None


def _other_reader(operand: Value, slot: int, axis: int, inner_nodes: list[Node]) -> Node | None:
    """A reader of ``operand`` in the node that is not a layer reading it at ``slot``."""
    for reader in inner_nodes:
        for index, value in enumerate(reader.inputs):
            if value is operand and not (is_linear(reader) and index == slot and (
                    slot == ACTIVATION or _OUTPUT_CHANNEL_AXIS[reader.op_type](reader) == axis)):
                return reader
    return None


def _index(operands: list[Value], value: Value) -> int | None:
    for index, operand in enumerate(operands):
        if operand is value:
            return index
    return None
