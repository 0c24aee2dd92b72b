"""A flat element-wise chain of any length, as the dynamo exporter names nodes (no module path):
the worst case for element-wise fusion (the whole chain becomes one node) and for every
pattern rooted at Mul or Add (each is a site to try)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_OPS = ("Relu", "Sigmoid", "Tanh", "Mul", "Add")   # Mul and Add read one shared constant
WIDTH = 16


def element_wise_chain(nodes: int) -> onnx.ModelProto:
    """``nodes`` element-wise ops in a row on a [batch, 8, 16] float tensor."""
    constant = numpy_helper.from_array(np.array(0.5, np.float32), "c")
    made, current = [], "x"
    for index in range(nodes):
        op = _OPS[index % len(_OPS)]
        inputs = [current] if op in ("Relu", "Sigmoid", "Tanh") else [current, "c"]
        made.append(helper.make_node(op, inputs, [f"v{index}"], name=f"node_{op}_{index}"))
        current = f"v{index}"
    graph = helper.make_graph(
        made, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, WIDTH])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, None)], [constant])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
