"""Small models for the edit tests, and onnxruntime to run what an edit made.

``toy``: y = Relu(x @ w + c) * s, and a side output y2 = Sigmoid(x @ w + c), where c comes
from a Constant node, the Add has no name (the importer calls it Add_2) and the side branch
is the second reader of the Add, which blocks a MatMul + bias fusion.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 4)).astype(np.float32)
W = RNG.standard_normal((4, 4)).astype(np.float32)
C = np.array([0.5, -0.25, 0.125, 1.0], dtype=np.float32)
S = np.array([2.0], dtype=np.float32)


def toy(opset: int = 13) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const_c",
                         value=numpy_helper.from_array(C)),
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "c"], ["add"]),              # unnamed: Add_2
        helper.make_node("Relu", ["add"], ["relu_out"], name="relu"),
        helper.make_node("Sigmoid", ["add"], ["y2"], name="side"),
        helper.make_node("Mul", ["relu_out", "s"], ["y"], name="scale_mul"),
    ]
    graph = helper.make_graph(
        nodes, "toy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(W, "w"), numpy_helper.from_array(S, "s"),
         numpy_helper.from_array(np.array([3, 1], dtype=np.int64), "ints")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def with_if_body() -> onnx.ModelProto:
    """toy with an If whose branches read the outer value 'add' by name."""
    model = toy()
    branch = helper.make_graph([helper.make_node("Identity", ["add"], ["inner"])], "branch", [],
                               [helper.make_tensor_value_info("inner", TensorProto.FLOAT,
                                                              [2, 4])])
    model.graph.initializer.append(numpy_helper.from_array(np.array(True), "flag"))
    model.graph.node.append(helper.make_node("If", ["flag"], ["y3"], name="branchy",
                                             then_branch=branch, else_branch=branch))
    model.graph.output.append(helper.make_tensor_value_info("y3", TensorProto.FLOAT, [2, 4]))
    return model


def reference(w=W, c=C, s=S, x=X):
    """What toy computes, in numpy: (y, y2)."""
    add = x @ w + c
    return np.maximum(add, 0) * s, 1 / (1 + np.exp(-add))


def run(model: onnx.ModelProto | bytes, x=X) -> dict[str, np.ndarray]:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, {session.get_inputs()[0].name: x})))


def bypass_unblocks() -> onnx.ModelProto:
    """Conv -> BatchNormalization -> Relu, whose Conv output a side branch also reads through
    ``side_add`` (Add(bias, conv)): the fold is declined until ``side_add`` is bypassed (its
    reader then reads the bias), and ``bn`` cannot be deleted (Relu reads it)."""
    rng = np.random.default_rng(3)
    weights = {"w": rng.standard_normal((8, 3, 3, 3)), "scale": rng.random(8) + 0.5,
               "bias": rng.standard_normal(8), "mean": rng.standard_normal(8),
               "var": rng.random(8) + 0.5, "side_bias": rng.standard_normal((1, 8, 1, 1))}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["conv_out"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv_out", "scale", "bias", "mean", "var"],
                         ["bn_out"], name="bn"),
        helper.make_node("Relu", ["bn_out"], ["y"], name="relu"),
        helper.make_node("Add", ["side_bias", "conv_out"], ["side"], name="side_add"),
        helper.make_node("Sigmoid", ["side"], ["y2"], name="side_sig"),
    ]
    graph = helper.make_graph(
        nodes, "bypass_unblocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 8, 8, 8])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def layernorm_opset18(axes: list[int]) -> onnx.ModelProto:
    """A layer norm written out at opset 18, where ReduceMean reads its axes from a constant
    input: the mean's (``axes``) given, the variance's over the last axis."""
    nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["m"], name="mean"),
             helper.make_node("Sub", ["x", "m"], ["c"], name="sub"),
             helper.make_node("Pow", ["c", "two"], ["sq"], name="pow"),
             helper.make_node("ReduceMean", ["sq", "last"], ["v"], name="var"),
             helper.make_node("Add", ["v", "eps"], ["ve"], name="add_eps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
             helper.make_node("Div", ["c", "sd"], ["n"], name="div"),
             helper.make_node("Mul", ["n", "gamma"], ["s"], name="scale"),
             helper.make_node("Add", ["s", "beta"], ["y"], name="shift")]
    constants = {"axes": np.array(axes, np.int64), "last": np.array([-1], np.int64),
                 "two": np.array(2.0, np.float32), "eps": np.array(1e-5, np.float32),
                 "gamma": np.ones(16, np.float32), "beta": np.zeros(16, np.float32)}
    graph = helper.make_graph(
        nodes, "layernorm_opset18",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 16])],
        [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def probed_linear() -> onnx.ModelProto:
    """MatMul + bias + Relu whose biased sum a probe (a Sigmoid to a second output) also
    reads: the pass fuses MatMul + bias alone, and the activation joins once the probe goes."""
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "bias"], ["a"], name="bias_add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu"),
             helper.make_node("Sigmoid", ["a"], ["y2"], name="probe")]
    graph = helper.make_graph(
        nodes, "probed_linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(rng.random((16, 8)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.random(8).astype(np.float32), "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model
