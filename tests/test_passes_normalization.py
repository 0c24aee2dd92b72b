"""BatchNorm folding and normalization-affine folding: samples, hand-built cases, declines.

Every run verifies each pass against onnxruntime (``run_checked``); the tests then assert the
effect on the graph and, where a fold must not happen, the reason the pass gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler_core.verify import run
from fusion_graphs import LN_CONSTANTS, decomposed_layernorm, rand
from graphlab.samples import get_sample
from passes_helpers import F, build, load_sample, ops, run_checked, snapshot, tensor

def bn_params(prefix: str, channels: int) -> dict:
    return {f"{prefix}_scale": rand(channels) + 1, f"{prefix}_bias": rand(channels),
            f"{prefix}_mean": rand(channels), f"{prefix}_var": np.abs(rand(channels)) + 0.5}


def bn_node(prefix: str, x: str, y: str):
    return helper.make_node("BatchNormalization", [x] + [f"{prefix}_{k}" for k in
                                                         ("scale", "bias", "mean", "var")],
                            [y], name=prefix, epsilon=1e-3)


# ----------------------------------------------------------------------------- fold_batchnorm
@pytest.mark.parametrize("name", ["cnn_bn", "digits_cnn"])
def test_batchnorms_fold_into_the_convs(name):
    result = run_checked(load_sample(name), "O1,fold_batchnorm,dce")
    shot = snapshot(result, "fold_batchnorm")
    assert shot.rewrites == 3 and not shot.declined
    assert "BatchNormalization" not in ops(result.final)
    assert ops(result.final)["Conv"] == 3
    folded = [n for n in result.final.nodes if n.op_type == "Conv"]
    assert all(n.provenance.rule == "conv_bn" and len(n.provenance.sources) == 2 for n in folded)


def test_teach_conv_bn_folds_the_good_site_and_names_the_blocking_consumer():
    result = run_checked(load_sample("teach_conv_bn"), ["fold_batchnorm"])
    shot = snapshot(result, "fold_batchnorm")
    graph = shot.graph
    assert graph.node_by_name("bn_good") is None
    assert graph.node_by_name("conv_good").op_type == "Conv"
    assert graph.node_by_name("bn_shared").op_type == "BatchNormalization"
    (declined,) = shot.declined
    assert declined.site == "bn_shared" and declined.rule == "conv_bn"
    assert declined.reason == "Conv output has another consumer (Relu 'relu_side')"
    (report,) = [r for r in shot.pattern_reports if r.name == "conv_bn"]
    assert [m.root.name for m in report.matches] == ["bn_good"]
    (miss,) = report.near_misses
    assert miss.site.name == "bn_shared" and miss.blocking_node.name == "relu_side"


def test_digits_cnn_keeps_its_test_accuracy_exactly_after_o2():
    sample = get_sample("digits_cnn")
    data = np.load(sample.test_data)
    images, labels = data["image"], data["labels"]
    graph = load_sample("digits_cnn")
    final = run_checked(graph, "O2").final
    assert "BatchNormalization" not in ops(final)

    def predict(g):
        (logits,) = run(g, {"image": images}).values()
        return logits.argmax(axis=1)

    before, after = predict(graph), predict(final)
    assert np.array_equal(before, after)
    assert np.mean(after == labels) == pytest.approx(0.9911, abs=5e-5)


@pytest.mark.parametrize("bias", [False, True])
def test_matmul_and_batchnorm_become_one_gemm(bias):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm")]
    inits = {"w": rand(8, 6), **bn_params("bn", 6)}
    if bias:
        nodes.append(helper.make_node("Add", ["mm", "b"], ["biased"], name="add"))
        inits["b"] = rand(6)
    nodes.append(bn_node("bn", "biased" if bias else "mm", "y"))
    graph = build(nodes, [tensor("x", F, [4, 8])], [tensor("y", F, [4, 6])], inits)
    final = run_checked(graph, "fold_batchnorm,dce").final
    (gemm,) = final.nodes
    assert gemm.op_type == "Gemm" and gemm.name == "mm" and gemm.outputs[0].name == "y"


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_and_batchnorm_fold_with_either_weight_layout(trans_b):
    weight = rand(6, 8) if trans_b else rand(8, 6)
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["g"], name="g", transB=trans_b,
                              alpha=0.5, beta=2.0), bn_node("bn", "g", "y")]
    graph = build(nodes, [tensor("x", F, [4, 8])], [tensor("y", F, [4, 6])],
                  {"w": weight, "c": rand(6), **bn_params("bn", 6)})
    assert ops(run_checked(graph, "fold_batchnorm,dce").final) == {"Gemm": 1}


def test_batchnorm_over_the_sequence_axis_of_a_matmul_is_declined():
    """[N, T, C] -> BN normalizes T (axis 1), but a weight can only scale the C columns."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"), bn_node("bn", "mm", "y")]
    graph = build(nodes, [tensor("x", F, [2, 5, 8])], [tensor("y", F, [2, 5, 6])],
                  {"w": rand(8, 6), **bn_params("bn", 5)})
    shot = snapshot(run_checked(graph, "fold_batchnorm"), "fold_batchnorm")
    assert shot.rewrites == 0 and ops(shot.graph)["BatchNormalization"] == 1
    (declined,) = shot.declined
    assert declined.rule == "linear_bn" and "axis 1" in declined.reason
    assert "rank 3" in declined.reason


# ----------------------------------------------------------------------------- fold_norm_affine
@pytest.mark.parametrize("swapped", [False, True], ids=["x*gamma+beta", "beta+gamma*x"])
def test_decomposed_layernorm_affine_moves_into_the_matmul_bias(swapped):
    nodes = decomposed_layernorm("x", "ln", swapped) + [
        helper.make_node("MatMul", ["ln", "w"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "b"], ["y"], name="bias")]
    graph = build(nodes, [tensor("x", F, [2, 3, 8])], [tensor("y", F, [2, 3, 6])],
                  {**LN_CONSTANTS, "w": rand(8, 6), "b": rand(6)}, opset=13)
    result = run_checked(graph, "fold_norm_affine,recognize_layernorm,dce")
    shot = snapshot(result, "fold_norm_affine")
    assert shot.rewrites == 1
    assert not {"ln_scale", "ln_shift"} & {n.name for n in shot.graph.nodes}
    # the normalization without its affine is still recognized
    assert ops(result.final) == {"LayerNormalization": 1, "MatMul": 1, "Add": 1}


@pytest.mark.parametrize("trans_b", [0, 1])
def test_layernormalization_op_gets_unit_scale_and_the_gemm_takes_gamma_and_beta(trans_b):
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln"),
             helper.make_node("Gemm", ["ln", "w"], ["y"], name="g", transB=trans_b, alpha=0.5)]
    graph = build(nodes, [tensor("x", F, [4, 8])], [tensor("y", F, [4, 6])],
                  {"gamma": rand(8) + 1, "beta": rand(8),
                   "w": rand(6, 8) if trans_b else rand(8, 6)})
    result = run_checked(graph, "fold_norm_affine,fold_norm_affine,dce")
    assert [s.rewrites for s in result.snapshots[:2]] == [1, 0]  # a unit affine stays put
    layernorm = result.final.node_by_name("ln")
    assert np.all(layernorm.inputs[1].const == 1) and layernorm.input(2) is None
    assert result.final.node_by_name("g").input(2) is not None


def test_batchnorm_on_features_folds_into_the_next_matmul():
    nodes = [bn_node("bn", "x", "normed"),
             helper.make_node("MatMul", ["normed", "w"], ["mm"], name="mm"),
             helper.make_node("Add", ["b", "mm"], ["y"], name="bias")]
    graph = build(nodes, [tensor("x", F, [4, 8])], [tensor("y", F, [4, 6])],
                  {**bn_params("bn", 8), "w": rand(8, 6), "b": rand(6)})
    final = run_checked(graph, "fold_norm_affine,dce").final
    assert ops(final) == {"MatMul": 1, "Add": 1}


def declined_reason(nodes, inputs, outputs, inits, opset=17) -> str:
    graph = build(nodes, inputs, outputs, inits, opset=opset)
    shot = snapshot(run_checked(graph, "fold_norm_affine"), "fold_norm_affine")
    assert shot.rewrites == 0
    (declined,) = shot.declined
    return declined.reason


def test_affine_read_by_a_second_node_is_declined_naming_it():
    reason = declined_reason(
        [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln"),
         helper.make_node("MatMul", ["ln", "w"], ["y"]),
         helper.make_node("Relu", ["ln"], ["side"], name="side_relu")],
        [tensor("x", F, [4, 8])], [tensor("y", F, [4, 6]), tensor("side", F, [4, 8])],
        {"gamma": rand(8), "beta": rand(8), "w": rand(8, 6)})
    assert "also read by Relu 'side_relu'" in reason


def test_shared_weight_is_declined():
    reason = declined_reason(
        [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln"),
         helper.make_node("MatMul", ["ln", "w"], ["y"]),
         helper.make_node("MatMul", ["x", "w"], ["z"], name="other")],
        [tensor("x", F, [4, 8])], [tensor("y", F, [4, 8]), tensor("z", F, [4, 8])],
        {"gamma": rand(8), "beta": rand(8), "w": rand(8, 8)})
    assert "also read by MatMul 'other'" in reason and "second copy" in reason


def test_shift_without_a_bias_to_go_to_is_declined():
    reason = declined_reason(
        [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln"),
         helper.make_node("MatMul", ["ln", "w"], ["y"])],
        [tensor("x", F, [2, 4, 8])], [tensor("y", F, [2, 4, 6])],
        {"gamma": rand(8), "beta": rand(8), "w": rand(8, 6)})
    assert "no constant bias" in reason


def test_batchnorm_on_channels_before_a_matmul_over_the_last_axis_is_declined():
    reason = declined_reason(
        [bn_node("bn", "x", "normed"), helper.make_node("MatMul", ["normed", "w"], ["mm"]),
         helper.make_node("Add", ["mm", "b"], ["y"])],
        [tensor("x", F, [2, 8, 8])], [tensor("y", F, [2, 8, 6])],
        {**bn_params("bn", 8), "w": rand(8, 6), "b": rand(6)})
    assert "axis 1" in reason and "last axis" in reason


def test_gpt2_pre_layernorms_fold_into_their_gemms():
    result = run_checked(load_sample("gpt2_tiny"), "O1,fold_norm_affine,dce")
    shot = snapshot(result, "fold_norm_affine")
    assert shot.rewrites == 4  # ln_1 and ln_2 of both blocks feed c_attn / c_fc only
    (declined,) = shot.declined  # ln_f feeds the bias-free LM head
    assert declined.site == "/gpt2/transformer/ln_f/Add_1"
    assert "no constant bias" in declined.reason
    assert shot.nodes_before - shot.nodes_after == 8


def test_bert_layernorms_feeding_the_residual_are_declined():
    result = run_checked(load_sample("bert_tiny_op20"), "O1,fold_norm_affine")
    shot = snapshot(result, "fold_norm_affine")
    assert shot.rewrites == 0 and len(shot.declined) == 4
    # each LayerNorm output also feeds the next residual Add (and the Q, K, V projections)
    assert all("is also read by" in d.reason and "Add '" in d.reason for d in shot.declined)
