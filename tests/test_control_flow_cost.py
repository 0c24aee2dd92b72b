"""If/Loop bodies are priced: a Loop by its constant trip count (one iteration, said so, when
the count is known only at run time), an If by its costlier branch."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

from compiler_core.hardware.cost import graph_cost
from compiler_core.ir import from_proto

MATMUL_FLOPS = 2 * 4 * 8 * 8      # [4, 8] . [8, 8]


def _loop_model(trip_count_input: bool) -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y", "w"], ["y2"]), helper.make_node("Identity", ["c"],
                                                                           ["c2"])],
        "body", [helper.make_tensor_value_info("i", T.INT64, []),
                 helper.make_tensor_value_info("c", T.BOOL, []),
                 helper.make_tensor_value_info("y", T.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("c2", T.BOOL, []),
         helper.make_tensor_value_info("y2", T.FLOAT, [4, 8])])
    inputs = [helper.make_tensor_value_info("x", T.FLOAT, [4, 8])]
    weights = [numpy_helper.from_array(np.array(True), "cond"),
               numpy_helper.from_array(np.ones((8, 8), np.float32), "w")]
    if trip_count_input:
        inputs.append(helper.make_tensor_value_info("M", T.INT64, []))
    else:
        weights.append(numpy_helper.from_array(np.array(5, np.int64), "M"))
    graph = helper.make_graph([helper.make_node("Loop", ["M", "cond", "x"], ["out"], body=body)],
                              "loop", inputs, [helper.make_tensor_value_info("out", T.FLOAT,
                                                                             [4, 8])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_loop_with_a_constant_trip_count_runs_its_body_that_many_times():
    (op,) = graph_cost(from_proto(_loop_model(trip_count_input=False))).ops
    assert op.modelled and op.flops == 5 * MATMUL_FLOPS
    assert "5 iterations" in op.note


def test_loop_with_a_run_time_trip_count_prices_one_iteration_and_says_so():
    (op,) = graph_cost(from_proto(_loop_model(trip_count_input=True))).ops
    assert op.modelled and op.flops == MATMUL_FLOPS
    assert "not known before run time" in op.note


def test_if_is_priced_as_its_costlier_branch():
    def branch(name, nodes):
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(
            f"{name}_out", T.FLOAT, [4, 8])])
    then = branch("then", [helper.make_node("MatMul", ["x", "w"], ["then_out"])])
    other = branch("else", [helper.make_node("Relu", ["x"], ["else_out"])])
    graph = helper.make_graph(
        [helper.make_node("If", ["flag"], ["out"], then_branch=then, else_branch=other)], "if",
        [helper.make_tensor_value_info("flag", T.BOOL, []),
         helper.make_tensor_value_info("x", T.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("out", T.FLOAT, [4, 8])],
        [numpy_helper.from_array(np.ones((8, 8), np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (op,) = graph_cost(from_proto(model)).ops
    assert op.modelled and op.flops == MATMUL_FLOPS
    assert "costlier branch" in op.note
