"""ONNX's classical-ML operators (ai.onnx.ml, as skl2onnx writes scikit-learn pipelines)
priced by what they compute, the linear models put on the systolic array as the matrix
product they are; tree ensembles left unpriced, and said to be."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from compiler_core.hardware.cost import graph_cost
from compiler_core.hardware.gemm_shapes import gemm_problems
from compiler_core.ir import from_proto

ML = "ai.onnx.ml"


def _pipeline(*nodes, outputs=("label", "scores")):
    graph = helper.make_graph(
        list(nodes), "pipeline", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs])
    return from_proto(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)]))


def _costs(graph):
    return {op.node: op for op in graph_cost(graph).ops}


def test_a_scaled_linear_classifier_costs_two_ops_per_multiply_accumulate():
    rng = np.random.default_rng(0)
    graph = _pipeline(
        helper.make_node("Scaler", ["x"], ["scaled"], name="scaler", domain=ML,
                         offset=[0.0] * 4, scale=[2.0] * 4),
        helper.make_node("LinearClassifier", ["scaled"], ["label", "scores"], name="classify",
                         domain=ML, classlabels_ints=[0, 1, 2],
                         coefficients=rng.standard_normal(12).tolist(),
                         intercepts=[0.0, 0.0, 0.0]))
    costs = _costs(graph)
    assert costs["scaler"].modelled and costs["scaler"].flops == 2 * 4 * 2
    # 2 samples x 3 classes x (4 multiply-adds + the intercept)
    assert costs["classify"].modelled and costs["classify"].flops == 2 * 3 * (2 * 4 + 1)


def test_a_linear_regressor_counts_each_target():
    graph = _pipeline(helper.make_node(
        "LinearRegressor", ["x"], ["y"], name="regress", domain=ML, targets=2,
        coefficients=[0.5] * 8, intercepts=[0.0, 1.0]), outputs=("y",))
    assert _costs(graph)["regress"].flops == 2 * 2 * (2 * 4 + 1)


def test_a_tree_ensemble_is_left_unpriced():
    graph = _pipeline(helper.make_node(
        "TreeEnsembleRegressor", ["x"], ["y"], name="trees", domain=ML, n_targets=1,
        nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
        nodes_values=[0.5, 0.0, 0.0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0],
        target_weights=[1.0, 2.0]), outputs=("y",))
    trees = _costs(graph)["trees"]
    assert not trees.modelled and "unknown op" in trees.note


def test_a_linear_classifier_is_one_gemm_of_samples_features_and_classes():
    graph = _pipeline(helper.make_node(
        "LinearClassifier", ["x"], ["label", "scores"], name="classify", domain=ML,
        classlabels_ints=[0, 1, 2], coefficients=[0.1] * 12, intercepts=[0.0] * 3))
    (problem,) = gemm_problems(graph.node_by_name("classify"))
    assert (problem.M, problem.K, problem.N) == (2, 4, 3)
