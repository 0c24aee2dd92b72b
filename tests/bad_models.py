"""Malformed models, one per kind of damage GraphLab must refuse with a clear message."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bad", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = 8
    return model


def _x(name="x"):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])


def good_bytes() -> bytes:
    w = numpy_helper.from_array(np.arange(64, dtype=np.float32), "w")
    return _model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])],
                  [w]).SerializeToString()


def cycle() -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["b"], ["a"], name="relu_a"),
                   helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
                   helper.make_node("Add", ["x", "a"], ["y"], name="add")],
                  [_x()], [_x("y")])


def undefined_input() -> onnx.ModelProto:
    return _model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add_ghost")],
                  [_x()], [_x("y")])


def duplicate_output() -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["x"], ["y"], name="first"),
                   helper.make_node("Neg", ["x"], ["y"], name="second")],
                  [_x()], [_x("y")])


def missing_graph_output() -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                  [_x()], [_x("y"), _x("nowhere")])


def initializer_mismatch() -> onnx.ModelProto:
    w = TensorProto(name="weights", data_type=TensorProto.FLOAT, dims=[4, 4])
    w.raw_data = b"\x00" * 12  # 3 floats where the shape promises 16
    return _model([helper.make_node("Add", ["x", "weights"], ["y"], name="add")],
                  [_x()], [_x("y")], [w])


def external(location: str) -> onnx.ModelProto:
    w = TensorProto(name="weights", data_type=TensorProto.FLOAT, dims=[2])
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    return _model([helper.make_node("Add", ["x", "weights"], ["y"], name="add")],
                  [_x()], [_x("y")], [w])


def huge_tensor() -> onnx.ModelProto:
    w = TensorProto(name="enormous", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20])
    w.raw_data = b"\x00" * 16
    return _model([helper.make_node("Add", ["x", "enormous"], ["y"], name="add")],
                  [_x()], [_x("y")], [w])


def no_op_type() -> onnx.ModelProto:
    return _model([helper.make_node("", ["x"], ["y"], name="blank")], [_x()], [_x("y")])


def wrong_attribute_type() -> onnx.ModelProto:
    return _model([helper.make_node("Transpose", ["x"], ["y"], name="flip", perm=[0.0])],
                  [_x()], [_x("y")])


def no_outputs() -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [_x()], [])


def inconsistent_shapes() -> onnx.ModelProto:
    """Loads (onnx can still type it) but cannot run: a (2) x (4, 5) matrix product."""
    w = numpy_helper.from_array(np.ones((4, 5), np.float32), "w")
    return _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                  [_x()], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])

def minus_one_dim() -> onnx.ModelProto:
    """A batch dim written as -1, as some converters write "any size"."""
    return _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3])])


def custom_op() -> onnx.ModelProto:
    model = _model([helper.make_node("FancyOp", ["x"], ["t"], name="fancy", domain="com.example"),
                    helper.make_node("Relu", ["t"], ["y"], name="relu")],
                   [_x()], [_x("y")])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    return model


def saved_with_external_data(folder, name: str = "ext") -> tuple[str, str]:
    """A MatMul + Relu model saved as exporters save big ones: (`name.onnx`, `name.onnx.data`)."""
    weight = numpy_helper.from_array(np.arange(256, dtype=np.float32).reshape(16, 16), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                    helper.make_node("Relu", ["m"], ["y"], name="act")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])], [weight])
    path = os.path.join(str(folder), f"{name}.onnx")
    onnx.save(model, path, save_as_external_data=True, location=f"{name}.onnx.data",
              size_threshold=0)
    return path, path + ".data"

def write(model_or_bytes, folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    data = model_or_bytes if isinstance(model_or_bytes, bytes) else \
        model_or_bytes.SerializeToString()
    with open(path, "wb") as handle:
        handle.write(data)
    return path
