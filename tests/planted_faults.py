"""onnxruntime faults the suite keeps as reproductions, planted inside real exports, so that
``graphlab reduce`` can be asked to find them again.

- ``empty_layernorm_bias``: a LayerNormalization whose optional bias is an empty name
  (SIGSEGV in onnxruntime's optimizer at ORT_ENABLE_EXTENDED and above; tests/test_runtime_check);
- ``float64_relu_clip``: Relu under a float64 Clip (FuseReluClip refuses the model at
  ORT_ENABLE_ALL; tests/test_passes_cleanup);
- ``float64_round_trip_layernorm``: Cast(double) -> Cast(float) before a decomposed LayerNorm
  (LayerNormFusion builds an ill-typed node; tests/test_passes_cleanup).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graphlab.samples import resolve_model


def empty_layernorm_bias(sample: str = "bert_tiny_op20", which: int = 3) -> onnx.ModelProto:
    """The sample with its ``which``-th LayerNormalization's bias left out as ""."""
    model = onnx.load(resolve_model(sample))
    node = [n for n in model.graph.node if n.op_type == "LayerNormalization"][which]
    del node.input[2:]
    node.input.append("")
    return model


def _insert_after(model: onnx.ModelProto, value: str, nodes: list[onnx.NodeProto],
                  last: str) -> None:
    """Make every reader of ``value`` read ``last`` (what ``nodes``, inserted, compute)."""
    for node in model.graph.node:
        for slot, name in enumerate(node.input):
            if name == value:
                node.input[slot] = last
    position = next(i for i, n in enumerate(model.graph.node) if value in n.output) + 1
    for offset, node in enumerate(nodes):
        model.graph.node.insert(position + offset, node)


def _gelu_input(model: onnx.ModelProto, which: int) -> str:
    """A float value in the middle of the model: the input of its ``which``-th Tanh/Erf."""
    return [n for n in model.graph.node if n.op_type in ("Tanh", "Erf")][which].input[0]


def float64_relu_clip(sample: str = "gpt2_tiny", which: int = 1) -> onnx.ModelProto:
    model = onnx.load(resolve_model(sample))
    value = _gelu_input(model, which)
    model.graph.initializer.extend([numpy_helper.from_array(np.array(-1.0), "planted_lo"),
                                    numpy_helper.from_array(np.array(4.0), "planted_hi")])
    _insert_after(model, value, [
        helper.make_node("Cast", [value], ["planted_d"], to=TensorProto.DOUBLE),
        helper.make_node("Relu", ["planted_d"], ["planted_r"]),
        helper.make_node("Clip", ["planted_r", "planted_lo", "planted_hi"], ["planted_c"]),
        helper.make_node("Cast", ["planted_c"], ["planted_f"], to=TensorProto.FLOAT)],
        "planted_f")
    return model


def float64_round_trip_layernorm(sample: str = "bert_tiny_op13",
                                 which: int = 2) -> onnx.ModelProto:
    """A Cast(double) -> Cast(float) round trip in front of a decomposed LayerNorm."""
    model = onnx.load(resolve_model(sample))
    mean = [n for n in model.graph.node if n.op_type == "ReduceMean"][2 * which]
    value = mean.input[0]
    _insert_after(model, value, [
        helper.make_node("Cast", [value], ["planted_d"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["planted_d"], ["planted_f"], to=TensorProto.FLOAT)],
        "planted_f")
    return model
