"""Linear layer + bias + activation fusion, and residual Add + LayerNorm fusion."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler_core.ir import FUSED_DOMAIN
from fusion_graphs import LN_CONSTANTS, decomposed_layernorm, prenorm_stream, rand
from passes_helpers import F, build, load_sample, ops, run_checked, snapshot, tensor


def body_ops(node) -> list[str]:
    return [n.op_type for n in node.body.nodes]


# ------------------------------------------------------------------------ fuse_linear_bias_act
def test_teach_matmul_bias_fuses_the_constant_bias_and_explains_the_input_bias():
    shot = snapshot(run_checked(load_sample("teach_matmul_bias"), "fuse_linear_bias_act"),
                    "fuse_linear_bias_act")
    graph = shot.graph
    fused = graph.node_by_name("FusedGemm")
    assert fused.domain == FUSED_DOMAIN and body_ops(fused) == ["Gemm", "Relu"]
    assert [v.name for v in fused.inputs] == ["x", "matmul_good_w", "add_bias_good_b"]
    assert fused.attrs == {"activation": "Relu"}
    assert fused.provenance.rule == "matmul_bias_act" and len(fused.provenance.sources) == 3
    # the site whose bias is a graph input is not fused, and the reason says why; it still
    # becomes one plain Gemm, whose C operand may arrive at run time
    plain = graph.node_by_name("matmul_inputbias")
    assert plain.op_type == "Gemm" and plain.domain == ""
    assert [v.name for v in plain.inputs][2] == "bias"
    assert plain.provenance.rule == "matmul_runtime_bias"
    assert graph.node_by_name("add_inputbias") is None
    (declined,) = shot.declined
    assert declined.site == "add_inputbias" and declined.rule == "matmul_add"
    assert declined.reason == "Add input 1: expected constant, found graph input 'bias'"
    reports = {r.name: r for r in shot.pattern_reports}
    assert [m.site.name for m in reports["matmul_add"].near_misses] == ["add_inputbias"]


def test_two_d_matmul_with_constant_bias_becomes_a_standard_gemm():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
             helper.make_node("Add", ["b", "mm"], ["y"])]
    graph = build(nodes, [tensor("x", F, [4, 8])], [tensor("y", F, [4, 6])],
                  {"w": rand(8, 6), "b": rand(1, 6)})
    (gemm,) = run_checked(graph, "fuse_linear_bias_act").final.nodes
    assert (gemm.op_type, gemm.domain, gemm.name) == ("Gemm", "", "mm")
    assert [v.name for v in gemm.inputs] == ["x", "w", "b"]


@pytest.mark.parametrize("act", ["Gelu", "Relu", "Sigmoid"])
def test_batched_matmul_bias_and_activation_become_fused_matmul_bias(act):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["biased"]),
             helper.make_node(act, ["biased"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2, 3, 8])], [tensor("y", F, [2, 3, 6])],
                  {"w": rand(8, 6), "b": rand(6)}, opset=20)
    (fused,) = run_checked(graph, "fuse_linear_bias_act").final.nodes
    assert fused.op_type == "FusedMatMulBias" and body_ops(fused) == ["MatMul", "Add", act]
    assert fused.outputs[0].name == "y"


def test_activation_read_elsewhere_is_not_absorbed():
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="g"),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    graph = build(nodes, [tensor("x", F, [4, 8])],
                  [tensor("y", F, [4, 6]), tensor("g", F, [4, 6])],
                  {"w": rand(8, 6), "b": rand(6)})
    shot = snapshot(run_checked(graph, "fuse_linear_bias_act"), "fuse_linear_bias_act")
    assert shot.rewrites == 0
    (declined,) = shot.declined
    assert declined.site == "relu" and "graph output" in declined.reason


def test_mobilenet_relu6_convs_become_fused_convs():
    result = run_checked(load_sample("mobilenet_tiny"), "O1,fuse_linear_bias_act")
    shot = snapshot(result, "fuse_linear_bias_act")
    fused = [n for n in shot.graph.nodes if n.op_type == "FusedConv"]
    assert len(fused) == 9 and all(n.attrs["activation"] == "Clip" for n in fused)
    assert "Conv" not in ops(shot.graph)
    # the Clip bounds moved into the bodies: the fused node reads x, W, B only
    assert all(len(n.inputs) == 3 for n in fused)


@pytest.mark.parametrize("name, fused", [
    ("bert_tiny_op13", {"FusedMatMulBias": 12, "FusedGemm": 1}),
    ("bert_tiny_dynamo", {"FusedMatMulBias": 12, "FusedGemm": 1}),
    ("cnn_bn", {"FusedConv": 3}), ("mlp_dropout", {"FusedGemm": 2}),
])
def test_samples_fuse_their_linear_layers(name, fused):
    pipeline = "O1,fold_batchnorm,recognize_gelu,fuse_linear_bias_act"
    shot = snapshot(run_checked(load_sample(name), pipeline), "fuse_linear_bias_act")
    counts = ops(shot.graph)
    assert {op: counts[op] for op in fused} == fused


def test_ffn_gelu_is_the_fused_matmul_epilogue():
    pipeline = "O1,recognize_gelu,fuse_linear_bias_act"
    shot = snapshot(run_checked(load_sample("bert_tiny_op13"), pipeline), "fuse_linear_bias_act")
    with_gelu = [n for n in shot.graph.nodes if n.attrs.get("activation") == "Gelu"]
    assert len(with_gelu) == 2 and all(body_ops(n)[-1] == "Gelu" for n in with_gelu)


# ----------------------------------------------------------------------------- fuse_skip_layernorm
@pytest.mark.parametrize("name, pipeline", [
    ("bert_tiny_op13", "O1,recognize_layernorm,fuse_skip_layernorm"),
    ("bert_tiny_op13", "O1,fuse_skip_layernorm"),
    ("bert_tiny_op20", "O1,fuse_skip_layernorm"),
    ("bert_tiny_dynamo", "O1,fuse_skip_layernorm"),
])
def test_bert_residual_adds_fuse_with_their_layernorms(name, pipeline):
    """4 residual + LayerNorm pairs per model, each absorbing its projection's bias Add, plus
    the embeddings' sum + LayerNorm (no bias: a sum of two lookups)."""
    shot = snapshot(run_checked(load_sample(name), pipeline), "fuse_skip_layernorm")
    fused = [n for n in shot.graph.nodes if n.op_type == "SkipLayerNormalization"]
    assert len(fused) == 5 and not shot.declined
    assert sorted(len(n.inputs) for n in fused) == [4, 5, 5, 5, 5]
    for node in fused:
        assert body_ops(node)[:len(node.inputs) - 3] == ["Add"] * (len(node.inputs) - 3)
        assert len(node.outputs) == 1  # post-norm: the sum is read by the norm only
        if len(node.inputs) == 5:  # input, skip, gamma, beta, the projection's bias
            assert node.inputs[0].producer.op_type == "MatMul"
            assert node.inputs[4].constant_value().shape == (64,)


def test_gpt2_residual_stream_fuses_and_returns_the_sum_to_the_next_block():
    pipeline = "O1,recognize_layernorm,fuse_skip_layernorm"
    shot = snapshot(run_checked(load_sample("gpt2_tiny"), pipeline), "fuse_skip_layernorm")
    assert shot.rewrites == 5 and not shot.declined
    fused = [n for n in shot.graph.nodes if n.op_type == "SkipLayerNormalization"]
    read_on = [n for n in fused if len(n.outputs) == 2]
    assert len(read_on) == 4  # the last sum feeds ln_f only
    for node in read_on:  # the next block's residual Add, now inside its skip norm
        assert {u.op_type for u in node.outputs[1].users()} == {"SkipLayerNormalization"}
    assert "4 also returning the sum" in shot.notes[0]


def test_prenorm_stream_returns_the_sum_and_absorbs_the_bias_after_affine_folding():
    """fold_norm_affine leaves each block's norm with a unit scale and no shift: the fused
    node gets a zero shift before the absorbed bias."""
    nodes, inits = prenorm_stream()
    graph = build(nodes, [tensor("x", F, ["batch", 5, 8])], [tensor("y", F, None)], inits)
    final = run_checked(graph, "O2", bindings={"batch": 2}).final
    first, last = [n for n in final.nodes if n.op_type == "SkipLayerNormalization"]
    assert [v.name for v in first.outputs] == ["h1", "sum0"]
    assert [v.name for v in last.outputs] == ["y"]
    # the projections' biases, with the folded shifts of the norms before them
    assert [v.name for v in first.inputs[:2]] == ["mm0", "x"]
    assert first.inputs[4].name.startswith("bias0")
    assert not first.inputs[3].constant_value().any()  # the zero shift
    assert [v.name for v in last.inputs[:4]] == ["mm1", "sum0", "g2", "b2"]
    assert last.inputs[4].name.startswith("bias1")
    assert body_ops(first) == ["Add", "Add", "LayerNormalization"]


def test_a_projection_read_elsewhere_keeps_its_bias_add():
    nodes, inits = prenorm_stream(bias_read_elsewhere=True)
    graph = build(nodes, [tensor("x", F, ["batch", 5, 8])],
                  [tensor("y", F, None), tensor("proj0", F, None)], inits)
    shot = snapshot(run_checked(graph, "fuse_skip_layernorm"), "fuse_skip_layernorm")
    first, _ = [n for n in shot.graph.nodes if n.op_type == "SkipLayerNormalization"]
    assert [v.name for v in first.inputs] == ["proj0", "x", "g1", "b1"]
    assert shot.graph.values["proj0"].producer.op_type == "Add"


def test_a_layernorm_statistic_read_elsewhere_is_a_near_miss_naming_the_reader():
    nodes = [helper.make_node("Add", ["x", "r"], ["sum"]),
             helper.make_node("LayerNormalization", ["sum", "gamma", "beta"], ["y", "mean"]),
             helper.make_node("Neg", ["mean"], ["neg_mean"], name="reads_mean")]
    graph = build(nodes, [tensor("x", F, [2, 3, 8]), tensor("r", F, [2, 3, 8])],
                  [tensor("y", F, None), tensor("neg_mean", F, None)], LN_CONSTANTS)
    shot = snapshot(run_checked(graph, "fuse_skip_layernorm"), "fuse_skip_layernorm")
    (declined,) = shot.declined
    assert declined.reason == "LayerNormalization output has another consumer (Neg 'reads_mean')"


def test_skip_layernorm_keeps_the_op_signature():
    nodes = [helper.make_node("Add", ["x", "r"], ["sum"])] + decomposed_layernorm("sum", "y")
    graph = build(nodes, [tensor("x", F, [2, 3, 8]), tensor("r", F, [2, 3, 8])],
                  [tensor("y", F, [2, 3, 8])], LN_CONSTANTS, opset=13)
    (fused,) = run_checked(graph, "fuse_skip_layernorm").final.nodes
    assert fused.op_type == "SkipLayerNormalization"
    assert [v.name for v in fused.inputs] == ["x", "r", "gamma", "beta"]
    assert fused.attrs["epsilon"] == pytest.approx(1e-5)


def test_a_bias_shared_with_the_norms_shift_still_fuses_with_a_bias_of_its_own():
    # Exporters keep one zero vector for a freshly initialized model's projection bias and
    # norm shift; the fused op reads each slot once, so the bias slot gets its own copy.
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "zeros"], ["proj"]),
             helper.make_node("Add", ["proj", "x"], ["sum"]),
             helper.make_node("LayerNormalization", ["sum", "gamma", "zeros"], ["y"], axis=-1)]
    inits = {"w": rand(8, 8), "gamma": rand(8) + 1, "zeros": np.zeros(8, np.float32)}
    graph = build(nodes, [tensor("x", F, [2, 3, 8])], [tensor("y", F, [2, 3, 8])], inits)
    shot = snapshot(run_checked(graph, "fuse_skip_layernorm"), "fuse_skip_layernorm")
    assert not shot.declined
    assert ops(shot.graph) == {"MatMul": 1, "SkipLayerNormalization": 1}
    fused = shot.graph.nodes[-1]
    names = [v.name for v in fused.inputs]
    assert names[:4] == ["mm", "x", "gamma", "zeros"] and len(set(names)) == 5
    assert not fused.inputs[4].constant_value().any()


def test_a_sum_of_a_value_with_itself_is_declined_with_the_reason():
    nodes = [helper.make_node("Add", ["x", "x"], ["sum"]),
             helper.make_node("LayerNormalization", ["sum", "gamma", "beta"], ["y"], axis=-1)]
    graph = build(nodes, [tensor("x", F, [2, 3, 8])], [tensor("y", F, [2, 3, 8])],
                  LN_CONSTANTS)
    (declined,) = snapshot(run_checked(graph, "fuse_skip_layernorm"),
                           "fuse_skip_layernorm").declined
    assert declined.reason.startswith("one value is read twice")
