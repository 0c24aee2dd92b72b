"""Tiny one-node models of onnxruntime's operators (and ONNX's opset-23 composites), each one
onnxruntime runs on the CPU: the shapes and types GraphLab infers are checked against what
onnxruntime produces."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

MS = "com.microsoft"
F, U8, I8, I32, I64 = T.FLOAT, T.UINT8, T.INT8, T.INT32, T.INT64


@dataclass
class Case:
    op: str
    domain: str
    inputs: list            # (name, elem type, shape) graph inputs, in the node's order ('' = skip)
    outputs: list[str]
    attrs: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)   # name -> array (initializers)
    opset: int = 17

    @property
    def label(self) -> str:
        return f"{self.domain or 'ai.onnx'}.{self.op}"


_R = np.random.default_rng(0)
_NBITS_B = _R.integers(0, 255, size=(8, 2, 8), dtype=np.uint8)   # N=8, K=32, block 16


def cases() -> list[Case]:
    s = np.array([0.05], np.float32)
    z = np.array([128], np.uint8)
    scalars = {"s": np.array(0.05, np.float32), "z": np.array(128, np.uint8)}
    return [
        Case("Attention", MS, [("x", F, [2, 5, 16]), "w", "b"], ["y"], {"num_heads": 2},
             {"w": _R.standard_normal((16, 48)).astype(np.float32),
              "b": _R.standard_normal(48).astype(np.float32)}),
        Case("MultiHeadAttention", MS, [("q", F, [2, 5, 16]), ("k", F, [2, 7, 16]),
                                        ("v", F, [2, 7, 16])], ["y"], {"num_heads": 2}),
        Case("GroupQueryAttention", MS,
             [("q", F, [1, 4, 32]), ("k", F, [1, 4, 16]), ("v", F, [1, 4, 16]), "", "",
              "seqlens", "total"], ["y", "present_k", "present_v"],
             {"num_heads": 4, "kv_num_heads": 2},
             {"seqlens": np.array([3], np.int32), "total": np.array(4, np.int32)}),
        Case("RotaryEmbedding", MS, [("x", F, [1, 3, 16]), "pos", "cos", "sin"], ["y"],
             {"num_heads": 2},
             {"pos": np.array([[0, 1, 2]], np.int64),
              "cos": np.cos(_R.standard_normal((8, 4))).astype(np.float32),
              "sin": np.sin(_R.standard_normal((8, 4))).astype(np.float32)}),
        Case("SkipLayerNormalization", MS,
             [("x", F, [2, 3, 8]), ("skip", F, [2, 3, 8]), "g", "beta"],
             ["y", "mean", "inv_std", "sum"], {},
             {"g": np.ones(8, np.float32), "beta": np.zeros(8, np.float32)}),
        Case("SimplifiedLayerNormalization", "", [("x", F, [2, 3, 8]), "g"], ["y"],
             {"axis": -1}, {"g": np.ones(8, np.float32)}),
        Case("SkipSimplifiedLayerNormalization", MS,
             [("x", F, [2, 3, 8]), ("skip", F, [2, 3, 8]), "g"], ["y", "", "", "sum"], {},
             {"g": np.ones(8, np.float32)}),
        Case("FastGelu", MS, [("x", F, [2, 8]), "b"], ["y"], {},
             {"b": np.zeros(8, np.float32)}),
        Case("BiasGelu", MS, [("x", F, [2, 8]), "b"], ["y"], {}, {"b": np.zeros(8, np.float32)}),
        Case("QuickGelu", MS, [("x", F, [2, 8])], ["y"], {"alpha": 1.702}),
        Case("FusedMatMul", MS, [("a", F, [2, 3, 4]), ("b", F, [2, 5, 4])], ["y"],
             {"transB": 1, "alpha": 0.5}),
        Case("FusedConv", MS, [("x", F, [1, 3, 8, 8]), "w", "b"], ["y"],
             {"activation": "Relu", "pads": [1, 1, 1, 1], "strides": [2, 2],
              "kernel_shape": [3, 3]},
             {"w": _R.standard_normal((4, 3, 3, 3)).astype(np.float32),
              "b": np.zeros(4, np.float32)}),
        Case("MatMulNBits", MS, [("a", F, [3, 32]), "B", "scales"], ["y"],
             {"K": 32, "N": 8, "bits": 4, "block_size": 16},
             {"B": _NBITS_B, "scales": np.full(16, 0.1, np.float32)}),
        Case("DynamicQuantizeMatMul", MS, [("a", F, [3, 16]), "B", "bs"], ["y"], {},
             {"B": _R.integers(-100, 100, (16, 8), dtype=np.int8), "bs": s}),
        Case("MatMulIntegerToFloat", MS, [("a", U8, [3, 16]), "B", "as", "bs"], ["y"], {},
             {"B": _R.integers(-100, 100, (16, 8), dtype=np.int8), "as": s, "bs": s}),
        Case("QGemm", MS, [("a", U8, [3, 16]), "s", "z", "B", "s", "zb", "", "s", "z"], ["y"],
             {"transB": 1},
             {"B": _R.integers(0, 255, (8, 16), dtype=np.uint8), "s": s, "z": z,
              "zb": np.array([128], np.uint8)}),
        Case("QLinearConv", "", [("x", U8, [1, 3, 8, 8]), "s", "z", "w", "s", "z", "s", "z"],
             ["y"], {"pads": [1, 1, 1, 1]},
             {"w": _R.integers(0, 255, (4, 3, 3, 3), dtype=np.uint8), "s": s, "z": z}),
        # channels last, as onnxruntime's NHWC transformer writes them (ORT_ENABLE_ALL)
        Case("QLinearConv", MS, [("x", U8, [1, 8, 8, 3]), "s", "z", "w", "s", "zw", "s", "z"],
             ["y"], {"pads": [1, 1, 1, 1], "strides": [2, 2], "channels_last": 1},
             {"w": _R.integers(-100, 100, (4, 3, 3, 3), dtype=np.int8), "s": s, "z": z,
              "zw": np.array([0], np.int8)}),
        Case("NhwcMaxPool", MS, [("x", U8, [1, 9, 7, 3])], ["y"],
             {"kernel_shape": [3, 3], "strides": [2, 2]}),
        Case("QLinearAveragePool", MS, [("x", U8, [1, 8, 6, 3]), "s", "z", "s", "z"], ["y"],
             {"kernel_shape": [2, 2], "strides": [2, 2], "channels_last": 1}, scalars),
        Case("QLinearAdd", MS, [("a", U8, [2, 8]), "s", "z", ("b", U8, [2, 8]), "s", "z", "s",
                                "z"], ["y"], {}, scalars),
        Case("QLinearMul", MS, [("a", U8, [2, 8]), "s", "z", ("b", U8, [1, 8]), "s", "z", "s",
                                "z"], ["y"], {}, scalars),
        Case("QLinearGlobalAveragePool", MS, [("x", U8, [1, 4, 5, 5]), "s", "z", "s", "z"],
             ["y"], {}, {"s": s, "z": z}),
        Case("Attention", "", [("q", F, [1, 2, 3, 8]), ("k", F, [1, 2, 4, 8]),
                               ("v", F, [1, 2, 4, 8])], ["y"], {}, opset=23),
        Case("RMSNormalization", "", [("x", F, [2, 3, 8]), "g"], ["y"], {},
             {"g": np.ones(8, np.float32)}, opset=23),
        Case("RotaryEmbedding", "", [("x", F, [1, 2, 3, 8]), "cos", "sin", "pos"], ["y"], {},
             {"cos": np.cos(_R.standard_normal((6, 4))).astype(np.float32),
              "sin": np.sin(_R.standard_normal((6, 4))).astype(np.float32),
              "pos": np.array([[0, 1, 2]], np.int64)}, opset=23),
    ]


def build(case: Case, typed_outputs: dict[str, tuple[int, list]] | None = None
          ) -> onnx.ModelProto:
    """The one-node model; outputs untyped unless ``typed_outputs`` gives their types."""
    names, graph_inputs, initializers, seen = [], [], [], set()
    for item in case.inputs:
        if isinstance(item, tuple):
            name, elem, shape = item
            names.append(name)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, shape))
        else:
            names.append(item)
            if item and item not in seen:
                initializers.append(numpy_helper.from_array(case.weights[item], item))
        seen.add(names[-1])
    node = helper.make_node(case.op, names, case.outputs, domain=case.domain, **case.attrs)
    typed_outputs = typed_outputs or {}
    outputs = [helper.make_tensor_value_info(o, *typed_outputs[o]) if o in typed_outputs
               else onnx.ValueInfoProto(name=o) for o in case.outputs if o]
    graph = helper.make_graph([node], case.label, graph_inputs, outputs, initializers)
    opsets = [helper.make_opsetid("", case.opset)]
    if case.domain:
        opsets.append(helper.make_opsetid(case.domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def feeds(case: Case) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    out = {}
    for item in case.inputs:
        if isinstance(item, tuple):
            name, elem, shape = item
            dtype = helper.tensor_dtype_to_np_dtype(elem)
            out[name] = (rng.integers(0, 255, shape).astype(dtype) if dtype == np.uint8
                         else rng.standard_normal(shape).astype(dtype))
    return out
