"""convert_layout_nhwc: CNN samples and hand-built edge cases run NHWC with transposes only at
region edges, and still compute what they computed (onnxruntime runs every fused Nhwc node)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler_core.passes import PassContext, PassManager, resolve_pipeline
from compiler_core.passes.layout.rules import KERNELS
from compiler_core.passes.framework.rewrite import fuse_nodes
from graphlab.samples import get_sample
from passes_helpers import SAMPLE_BINDINGS, build, load_sample, ops, run_checked, tensor

PASS = "convert_layout_nhwc"


def convert(graph, bindings=None):
    return run_checked(graph, [PASS], bindings).snapshots[0]


def region_ids(snapshot) -> set[int]:
    """Nodes that compute on NHWC tensors: the Nhwc kernels and the ops the pass rewired."""
    graph = snapshot.graph
    return {n.id for n in graph.nodes
            if n.op_type.startswith("Nhwc")
            or n.id in snapshot.diff.modified and n.op_type not in ("Shape", "Transpose")}


def edge_transposes(snapshot) -> list:
    """Transposes this pass left in the graph (entries and exits of regions)."""
    return [n for n in snapshot.graph.nodes_of_type("Transpose")
            if n.provenance is not None and n.provenance.pass_name == PASS]


def assert_only_edge_transposes(snapshot) -> None:
    region = region_ids(snapshot)
    for node in edge_transposes(snapshot):
        source = node.inputs[0].producer
        enters = source is None or source.id not in region
        leaves = not any(reader.id in region for reader, _ in node.outputs[0].uses)
        assert enters != leaves, f"{node.name} is inside the region, not on its edge"


@pytest.mark.parametrize("sample, regions, transposes", [
    ("cnn_bn", 1, 3),         # entry at the image; exits before both Flatten heads
    ("digits_cnn", 1, 2),     # entry at the image; exit before Flatten
    ("mobilenet_tiny", 1, 2),  # run-time Pad and Shape readers stay inside the region
])
def test_cnn_samples_run_channels_last(sample, regions, transposes):
    before = load_sample(sample)
    kernels = sum(n.op_type in KERNELS for n in before.nodes)
    snapshot = convert(before, SAMPLE_BINDINGS[sample])
    after = snapshot.graph
    assert not any(n.op_type in KERNELS for n in after.nodes)
    assert sum(n.op_type.startswith("Nhwc") for n in after.nodes) == kernels
    assert len([note for note in snapshot.notes if note.startswith("region")]) == regions
    assert len(edge_transposes(snapshot)) == transposes
    assert_only_edge_transposes(snapshot)
    assert [v.name for v in after.outputs] == [v.name for v in before.outputs]


def test_fused_kernel_keeps_the_original_op_and_id_in_its_body():
    before = load_sample("cnn_bn")
    conv = before.nodes_of_type("Conv")[0]
    after = convert(before, SAMPLE_BINDINGS["cnn_bn"]).graph
    fused = next(n for n in after.nodes if n.op_type == "NhwcConv"
                 and n.provenance.sources == (conv.id,))
    assert [n.op_type for n in fused.body.nodes] == ["Transpose", "Conv", "Transpose"]
    assert fused.body.node_by_id(conv.id).attrs == conv.attrs
    assert fused.outputs[0].shape[1:] == (32, 32, 16)


def test_digits_cnn_matches_on_its_real_test_images():
    data = np.load(get_sample("digits_cnn").test_data)
    result = PassManager([PASS], verify=True, check=True,
                         verify_inputs={"image": data["image"]}).run(load_sample("digits_cnn"))
    assert result.snapshots[0].verify.ok


def conv_weight(out_channels: int, in_channels: int) -> np.ndarray:
    return np.random.default_rng(out_channels).standard_normal(
        (out_channels, in_channels, 3, 3)).astype(np.float32)


def head_graph(*, relu_after_pool: bool):
    """Conv -> Relu -> MaxPool [-> Relu] -> Flatten -> Gemm, the classic classifier head."""
    pooled = "p_relu" if relu_after_pool else "p"
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", [pooled], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    if relu_after_pool:
        nodes.insert(3, helper.make_node("Relu", ["p"], ["p_relu"]))
    return build(nodes, [tensor("x", shape=[1, 3, 4, 4])], [tensor("y", shape=[1, 5])],
                 {"w": conv_weight(8, 3), "fc": np.ones((5, 32), np.float32)})


def test_region_feeding_a_flatten_gemm_head_exits_before_flatten():
    snapshot = convert(head_graph(relu_after_pool=False))
    flatten = snapshot.graph.nodes_of_type("Flatten")[0]
    exit_transpose = flatten.inputs[0].producer
    assert exit_transpose.op_type == "Transpose" and exit_transpose.attrs["perm"] == (0, 3, 1, 2)
    assert flatten.inputs[0].shape == (1, 8, 2, 2)
    assert len(edge_transposes(snapshot)) == 2
    assert_only_edge_transposes(snapshot)


def test_an_element_wise_op_after_the_last_kernel_stays_nchw():
    """Keeping it in the region would only move the exit transpose, not save one."""
    snapshot = convert(head_graph(relu_after_pool=True))
    relus = snapshot.graph.nodes_of_type("Relu")
    assert [r.outputs[0].shape for r in relus] == [(1, 4, 4, 8), (1, 8, 2, 2)]
    assert len(edge_transposes(snapshot)) == 2


def test_a_region_value_that_is_a_model_output_keeps_its_name_and_layout():
    graph = build(
        [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Conv", ["r", "w2"], ["y"], pads=[1, 1, 1, 1])],
        [tensor("x", shape=[1, 3, 5, 5])],
        [tensor("c", shape=[1, 4, 5, 5]), tensor("y", shape=[1, 4, 5, 5])],
        {"w1": conv_weight(4, 3), "w2": conv_weight(4, 4)})
    result = run_checked(graph, [PASS, PASS])
    converted, again = result.snapshots
    outputs = {v.name: v for v in converted.graph.outputs}
    assert list(outputs) == ["c", "y"] and outputs["c"].shape == (1, 4, 5, 5)
    assert outputs["c"].producer.op_type == "Transpose"
    assert ops(converted.graph)["Relu"] == 1 and len(edge_transposes(converted)) == 3
    assert not again.changed  # nothing left to convert


def test_axes_and_per_channel_constants_are_remapped():
    bias = np.arange(8, dtype=np.float32).reshape(8, 1, 1)
    graph = build(
        [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["x", "w2"], ["b"], pads=[1, 1, 1, 1]),
         helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
         helper.make_node("Add", ["cat", "bias"], ["biased"]),
         helper.make_node("Softmax", ["biased"], ["soft"], axis=1),
         helper.make_node("ReduceMean", ["soft"], ["mean"], axes=[2, 3], keepdims=1),
         helper.make_node("Conv", ["mean", "w3"], ["y"], pads=[1, 1, 1, 1])],
        [tensor("x", shape=[1, 3, 5, 5])], [tensor("y", shape=[1, 2, 1, 1])],
        {"w1": conv_weight(4, 3), "w2": conv_weight(4, 3), "bias": bias,
         "w3": conv_weight(2, 8)}, opset=13)
    snapshot = convert(graph)
    after = snapshot.graph
    assert after.nodes_of_type("Concat")[0].attrs["axis"] == 3
    assert after.nodes_of_type("Softmax")[0].attrs["axis"] == 3
    assert after.nodes_of_type("ReduceMean")[0].attrs["axes"] == (1, 2)
    relaid = after.nodes_of_type("Add")[0].inputs[1].constant_value()
    assert relaid.shape == (1, 1, 1, 8) and np.array_equal(relaid.reshape(-1), bias.reshape(-1))
    assert len(edge_transposes(snapshot)) == 2  # x enters once for both convs; y leaves
    assert_only_edge_transposes(snapshot)


def test_transposes_that_meet_the_model_own_transposes_cancel():
    """A model fed NHWC images transposes them to NCHW itself: both transposes disappear."""
    graph = build(
        [helper.make_node("Transpose", ["x"], ["nchw"], perm=[0, 3, 1, 2]),
         helper.make_node("Conv", ["nchw", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])],
        [tensor("x", shape=[1, 6, 6, 3])], [tensor("y", shape=[1, 6, 6, 8])],
        {"w": conv_weight(8, 3)})
    snapshot = convert(graph)
    assert "Transpose" not in ops(snapshot.graph)
    assert any("folded" in note for note in snapshot.notes)


def test_ops_that_cannot_run_nhwc_stop_the_region_with_a_reason():
    graph = build(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("MaxPool", ["c"], ["p", "indices"], kernel_shape=[2, 2]),
         helper.make_node("Softmax", ["c"], ["s"], axis=1)],
        [tensor("x", shape=[1, 3, 4, 4])],
        [tensor("p", shape=[1, 8, 3, 3]), tensor("indices", 7, [1, 8, 3, 3]),
         tensor("s", shape=[1, 8, 4, 4])],
        {"w": conv_weight(8, 3)}, opset=11)
    snapshot = convert(graph)
    reasons = {d.site: d.reason for d in snapshot.declined}
    assert "outputs" in reasons["MaxPool_1"] and "opset 13" in reasons["Softmax_2"]
    assert ops(snapshot.graph)["MaxPool"] == 1 and ops(snapshot.graph)["NhwcConv"] == 1


def test_a_fused_conv_relu_counts_as_a_kernel():
    graph = head_graph(relu_after_pool=False)
    conv, relu = graph.nodes[:2]
    fuse_nodes(graph, PassContext(pass_name="test"), [conv, relu], "FusedConv", "conv_relu")
    result = run_checked(graph, [PASS, PASS])
    converted, again = result.snapshots
    fused = converted.graph.nodes_of_type("NhwcFusedConv", "graphlab")[0]
    assert [n.op_type for n in fused.body.nodes] == ["Transpose", "FusedConv", "Transpose"]
    assert len(edge_transposes(converted)) == 2
    assert not again.changed  # the converted node reads through a Transpose: not a kernel


@pytest.mark.parametrize("sample, transposes", [
    ("cnn_bn", 3), ("digits_cnn", 2), ("mobilenet_tiny", 2)])
def test_o2_nhwc_converts_the_fused_network_as_one_region(sample, transposes):
    result = run_checked(load_sample(sample), "O2-nhwc", SAMPLE_BINDINGS[sample])
    snapshot = next(s for s in result.snapshots if s.pass_name == PASS)
    assert len([note for note in snapshot.notes if note.startswith("region")]) == 1
    assert len(edge_transposes(snapshot)) == transposes
    assert_only_edge_transposes(snapshot)


def test_graphs_without_convolutions_are_left_alone():
    snapshot = convert(load_sample("bert_tiny_op13"), SAMPLE_BINDINGS["bert_tiny_op13"])
    assert not snapshot.changed and snapshot.rewrites == 0


def test_o2_nhwc_preset_is_o2_plus_layout_conversion():
    o2, nhwc = resolve_pipeline("O2"), resolve_pipeline("O2-nhwc")
    assert PASS not in o2 and [p for p in nhwc if p != PASS] == o2
    assert nhwc.index(PASS) < nhwc.index("fuse_elementwise")
