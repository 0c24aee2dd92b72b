"""How far a correct rewrite may move the outputs of a model that quantizes at run time.

A quantized model rounds its activations to a grid of codes.  A rewrite that is exact in real
arithmetic — an integer kernel in place of Dequantize → float op → Quantize (ours, or
onnxruntime's own QDQ fusion), a float op fused upstream — still changes float rounding by an
ulp, and a value lying near the middle between two codes then moves by a whole code.  Such
flips reach the outputs as a few quantization steps, never as float rounding; a check at the
float tolerance fails every correct quantized model.  So each output of such a model is
allowed ``QUANTIZATION_STEPS`` steps of its own grid: the scale of the DequantizeLinear that
makes it, codes for an integer output, and for a float output computed after dequantizing (or
from activations quantized dynamically, whose scale is their range over 255 codes) that many
255ths of its scale.  A broken rewrite (a wrong scale, a lost zero point, a wrong op) moves
outputs by far more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir import Graph, Node, Value
from .ir.dtypes import to_numpy

QUANTIZATION_STEPS = 4   # codes a correct rewrite may move an output by
CODES_8BIT = 255         # steps across an 8-bit range
_QUANTIZERS = frozenset({"QuantizeLinear", "DynamicQuantizeLinear", "DynamicQuantizeMatMul",
                         "QGemm", "DynamicQuantizeLSTM"})
_DEQUANTIZERS = frozenset({"DequantizeLinear"})
# Ops that move values without computing new ones: the output is on its input's grid.
_MOVERS = frozenset({"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity",
                     "MaxPool", "Slice", "Gather", "Pad", "Expand", "Tile"})


@dataclass(frozen=True)
class OutputAllowance:
    """What one output may move by: ``absolute`` (steps of its grid) or ``relative`` (a
    fraction of the output's scale), whichever is larger, and in what unit it was found."""

    absolute: float
    relative: float
    unit: str

    def atol(self, scale: float) -> float:
        return max(self.absolute, self.relative * scale)


def quantizes_at_run_time(graph: Graph) -> bool:
    """Whether any activation is rounded to codes while the model runs."""
    return any(_quantizes(node) for node in graph.nodes)


def _quantizes(node: Node) -> bool:
    if node.op_type.startswith("QLinear") or node.op_type in _QUANTIZERS - {"QuantizeLinear"}:
        return True
    return node.op_type == "QuantizeLinear" and node.inputs and not node.inputs[0].is_constant


def rounding_allowance(graph: Graph) -> dict[str, OutputAllowance] | None:
    """Each output's allowance, or None when the model quantizes nothing at run time."""
    if not quantizes_at_run_time(graph):
        return None
    return {value.name: _allowance(value) for value in graph.outputs}


def describe(allowance: dict[str, OutputAllowance] | None) -> str:
    """One phrase for reports, '' when there is no allowance."""
    if not allowance:
        return ""
    return (f"up to {QUANTIZATION_STEPS} quantization steps allowed: the model rounds "
            f"activations to codes at run time")


def _allowance(value: Value) -> OutputAllowance:
    steps = float(QUANTIZATION_STEPS)
    producer = value.producer
    while producer is not None and producer.op_type in _MOVERS and producer.inputs:
        producer = producer.inputs[0].producer
    if producer is not None and producer.op_type in _DEQUANTIZERS and producer.input(1) is not None:
        scale = producer.inputs[1].constant_value()
        if scale is not None:
            return OutputAllowance(steps * float(np.abs(scale).max()), 0.0,
                                   "steps of its DequantizeLinear's scale")
    if value.elem_type is not None and np.issubdtype(to_numpy(value.elem_type), np.integer):
        return OutputAllowance(steps, 0.0, "codes")
    return OutputAllowance(0.0, steps / CODES_8BIT, "255ths of its scale")

