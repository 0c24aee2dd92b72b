"""Linear layers with constant weights, float or quantized: what attention calls a projection.

The attention fusion asks two things of the tensors it splits into heads: which activations
their projections read (the same tensor for Q, K and V is self-attention), and which nodes
make up each projection (taken into the fused node when only it reads them).  A projection is
one of the forms exporters and quantizers write:

- ``MatMul`` / ``Gemm`` with constant weights, or with weights dequantized from constants
  (``DequantizeLinear`` of int4/int8 codes: weight-only QDQ);
- onnxruntime's ``MatMulNBits`` (4-bit weight-only, as its MatMulNBitsQuantizer and model
  builder write it), ``DynamicQuantizeMatMul`` and ``MatMulIntegerToFloat`` (int8 weights,
  activations quantized at run time: what its optimizer makes of ``quantize_dynamic``);
- ``quantize_dynamic``'s own form: ``DynamicQuantizeLinear`` of the activations →
  ``MatMulInteger`` with constant int8 weights → ``Cast`` to float → ``Mul`` by the product of
  the two scales.  The quantizer of the activations is shared by every projection of the same
  tensor; it joins a fused node only once all of them have.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import Node, Value

MS_DOMAIN = "com.microsoft"
# onnxruntime's matmuls with constant weights at input 1 that read float activations at input 0
# (MatMulIntegerToFloat reads them quantized, through a DynamicQuantizeLinear)
_CONTRIB_MATMULS = frozenset({"MatMulNBits", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"})
_FLOAT_MATMULS = frozenset({"MatMul", "Gemm"})


@dataclass(frozen=True)
class Projection:
    """One linear layer: its nodes (the one computing its output first), the activations it
    reads, and the node quantizing them at run time that sibling projections share (or None)."""

    nodes: tuple[Node, ...]
    reads: Value
    quantizer: Node | None = None

    @property
    def matmul(self) -> Node:
        """The node that multiplies (MatMul, Gemm, MatMulNBits, MatMulInteger, ...)."""
        return next(n for n in self.nodes if n.op_type in _FLOAT_MATMULS | _CONTRIB_MATMULS
                    | {"MatMulInteger"})


def projection_ending_at(node: Node | None) -> Projection | None:
    """The projection whose output ``node`` computes, or None when ``node`` ends none."""
    if node is None or node.body is not None:
        return None
    if node.domain == "" and node.op_type in _FLOAT_MATMULS:
        weights = _constant_weights(node.input(1))
        return None if weights is None else Projection((node, *weights), node.inputs[0])
    if node.domain == MS_DOMAIN and node.op_type in _CONTRIB_MATMULS:
        if not _is_constant(node.input(1)):
            return None
        if node.op_type == "MatMulIntegerToFloat":
            return _quantized_at_run_time(node, (node,))
        return Projection((node,), node.inputs[0])
    if node.domain == "" and node.op_type == "Mul":
        return _scaled_integer_product(node)
    return None


def _scaled_integer_product(mul: Node) -> Projection | None:
    """``Mul(Cast(MatMulInteger(q(x), W)), scale)`` in either operand order, W constant; the
    scale a constant or computed from constants and the quantizer's scale."""
    for index in (0, 1):
        cast = mul.inputs[index].producer if mul.inputs[index] is not None else None
        scale = mul.input(1 - index)
        if cast is None or cast.op_type != "Cast" or scale is None:
            continue
        product = cast.inputs[0].producer
        if (product is None or product.op_type != "MatMulInteger"
                or not _is_constant(product.input(1))):
            continue
        scale_nodes = () if scale.is_constant else (scale.producer,)
        if scale_nodes and (scale_nodes[0] is None or scale_nodes[0].op_type != "Mul"):
            continue
        return _quantized_at_run_time(product, (mul, cast, product, *scale_nodes))
    return None


def _quantized_at_run_time(product: Node, nodes: tuple[Node, ...]) -> Projection:
    """The projection of a product that reads quantized activations: it reads the float tensor
    a DynamicQuantizeLinear quantized, or the quantized tensor itself when none did."""
    quantized = product.inputs[0]
    quantizer = quantized.producer
    if quantizer is None or quantizer.op_type != "DynamicQuantizeLinear":
        return Projection(nodes, quantized)
    return Projection(nodes, quantizer.inputs[0], quantizer)


def _constant_weights(weight: Value | None) -> tuple[Node, ...] | None:
    """() for constant weights, (the DequantizeLinear,) for weights dequantized from
    constants, None for weights computed otherwise."""
    if weight is None:
        return None
    if weight.is_constant:
        return ()
    node = weight.producer
    if node is not None and node.op_type == "DequantizeLinear" and all(
            v is None or v.is_constant for v in node.inputs):
        return (node,)
    return None


def _is_constant(value: Value | None) -> bool:
    return value is not None and value.is_constant
