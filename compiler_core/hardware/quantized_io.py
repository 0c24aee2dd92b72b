"""How a deployment compiler runs a QDQ (QuantizeLinear/DequantizeLinear) graph, for pricing.

The QDQ form is an interchange format: DequantizeLinear -> Conv -> QuantizeLinear *means* "an
int8 convolution".  A compiler that handles quantization natively folds the scales into the
kernel, so no separate conversion runs and the kernel reads and writes int8 bytes.  The cost
model prices the graph that way: the kernel at the target's int8 peak with int8 traffic, the
Q/DQ nodes around it free.  A conversion that feeds a float-only op stays a real op.
"""

from __future__ import annotations

from ..ir import Node, Value

INT8_KERNELS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})


def _is_dequantized(value: Value | None) -> bool:
    producer = value.producer if value is not None else None
    return producer is not None and producer.op_type == "DequantizeLinear" and \
        producer.domain == ""


def _computes_gemm(node: Node) -> bool:
    if node.body is not None:
        return any(_computes_gemm(inner) for inner in node.body.nodes)
    return node.domain == "" and node.op_type in INT8_KERNELS


def is_int8_kernel(node: Node) -> bool:
    """A GEMM-like node whose run-time operands all arrive through DequantizeLinear."""
    if not _computes_gemm(node):
        return False
    runtime = [v for v in node.inputs if v is not None and not v.is_constant]
    return bool(runtime) and all(_is_dequantized(v) for v in runtime)


def folded_into_kernel(node: Node) -> bool:
    """A Q or DQ node the compiler folds into the int8 kernel next to it."""
    if node.domain != "":
        return False
    if node.op_type == "DequantizeLinear":
        readers = node.outputs[0].users() if node.outputs[0] is not None else []
        return bool(readers) and all(is_int8_kernel(r) for r in readers)
    if node.op_type == "QuantizeLinear":
        source = node.inputs[0].producer if node.inputs[0] is not None else None
        return source is not None and is_int8_kernel(source)
    return False


def stored_value(value: Value, reader: Node | None = None) -> Value:
    """The value whose bytes actually travel: a dequantized operand travels as its int8 input,
    a result that is only quantized travels as the int8 output of its QuantizeLinear."""
    if reader is not None and _is_dequantized(value):
        return value.producer.inputs[0]
    readers = value.users()
    if reader is None and readers and all(r.op_type == "QuantizeLinear" and r.domain == ""
                                          for r in readers):
        return readers[0].outputs[0]
    return value
