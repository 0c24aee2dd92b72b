"""Decoder attention blocks whose projections onnxruntime's own quantizers rewrote.

``quantized_decoder(kind, ...)`` is ``attention_graphs.decoder_attention`` with every MatMul of
constant weights quantized as published models are: "nbits" by ``MatMulNBitsQuantizer``
(4-bit weight-only MatMulNBits, block 32, as onnxruntime's model builder writes 4-bit
Llama/Phi-3), "nbits_qdq" by the same quantizer in QDQ form (DequantizeLinear of int4 weights
before a MatMul), "dynamic" by ``quantize_dynamic`` (int8: DynamicQuantizeLinear →
MatMulInteger → Cast → Mul by the scales).  Built offline, from the float graph.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import onnx

from attention_graphs import decoder_attention
from compiler_core.ir import Graph, load_model, to_bytes

KINDS = ("nbits", "nbits_qdq", "dynamic")


def quantized_decoder(kind: str, **form) -> Graph:
    """``decoder_attention(**form)`` with its projections quantized the ``kind`` way."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer)

    model = onnx.load_from_string(to_bytes(decoder_attention(**form)))
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    if kind in ("nbits", "nbits_qdq"):
        config = DefaultWeightOnlyQuantConfig(
            block_size=32, is_symmetric=True,
            quant_format=QuantFormat.QDQ if kind == "nbits_qdq" else QuantFormat.QOperator)
        quantizer = MatMulNBitsQuantizer(model, algo_config=config)
        quantizer.process()
        return load_model(quantizer.model.model.SerializeToString())
    if kind != "dynamic":
        raise ValueError(f"unknown kind {kind!r}; one of {KINDS}")
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "float.onnx", Path(folder) / "int8.onnx"
        onnx.save(model, source)
        quantize_dynamic(source, target, weight_type=QuantType.QInt8)
        return load_model(target.read_bytes())
