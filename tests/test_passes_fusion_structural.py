"""Structural fusions: sibling MatMuls (horizontal) and element-wise chains (vertical), on the
transformer samples and on hand-built edge cases.  Every run is checked with onnxruntime, so the
fused nodes (exported as model-local functions) are proven to run and to compute the same."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler_core.ir import Graph
from compiler_core.passes import PassManager, resolve_pipeline
from compiler_core.passes.framework.rewrite import creates_cycle
from passes_helpers import SAMPLE_BINDINGS, build, load_sample, ops, run_checked, tensor

TRANSFORMERS = ["bert_tiny_op13", "bert_tiny_op20", "bert_tiny_dynamo", "gpt2_tiny"]


def run_pass(graph: Graph, name: str, bindings=None):
    return run_checked(graph, [name], bindings).snapshots[0]


def weight(rows: int, cols: int, seed: int = 0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(dtype)


# ----------------------------------------------------------------------------- horizontal
def constant_weight_siblings(graph: Graph) -> Counter:
    """For each activation, how many MatMul/Gemm nodes multiply it by a constant weight."""
    return Counter(n.inputs[0].name for n in graph.nodes
                   if n.op_type in ("MatMul", "Gemm") and n.inputs[1].constant_value() is not None)


@pytest.mark.parametrize("sample", TRANSFORMERS)
def test_sibling_projections_share_one_matmul(sample):
    before = load_sample(sample)
    groups = {name: n for name, n in constant_weight_siblings(before).items() if n > 1}
    snapshot = run_pass(before, "fuse_sibling_matmuls", SAMPLE_BINDINGS[sample])
    after = constant_weight_siblings(snapshot.graph)
    assert all(count == 1 for count in after.values())
    assert snapshot.rewrites == len(groups) == ops(snapshot.graph)["Split"] - ops(before)["Split"]
    merged = sum(groups.values())
    assert ops(snapshot.graph)["MatMul"] + ops(snapshot.graph)["Gemm"] == \
        ops(before)["MatMul"] + ops(before)["Gemm"] - merged + len(groups)


@pytest.mark.parametrize("sample", ["bert_tiny_op13", "bert_tiny_op20", "bert_tiny_dynamo"])
def test_bert_query_key_value_become_one_matmul_and_one_bias_per_layer(sample):
    before = load_sample(sample)
    snapshot = run_pass(before, "fuse_sibling_matmuls", SAMPLE_BINDINGS[sample])
    assert snapshot.rewrites == 2  # two encoder layers
    added = [snapshot.graph.node_by_id(i) for i in snapshot.diff.added]
    by_rule = Counter(n.provenance.rule for n in added)
    assert by_rule == {"concat_weights": 2, "concat_biases": 2, "split_outputs": 2}
    for node in added:
        if node.provenance.rule == "concat_weights":
            assert [before.node_by_id(i).op_type for i in node.provenance.sources] == ["MatMul"] * 3
            assert node.inputs[1].constant_value().shape == (64, 192)
    assert len(snapshot.graph) == len(before) - 12 + 6  # per layer: 3 MatMul+Add pairs -> 3


def test_gpt2_attention_is_already_fused_and_the_mlp_is_sequential():
    snapshot = run_pass(load_sample("gpt2_tiny"), "fuse_sibling_matmuls",
                        SAMPLE_BINDINGS["gpt2_tiny"])
    assert snapshot.rewrites == 0 and not snapshot.changed and not snapshot.declined


def sibling_graph(third_weight_is_input: bool = False, third_weight=None,
                  third_bias: bool = True) -> Graph:
    """x @ Wq + bq, x @ Wk + bk, x @ Wv (+ bv): three projections of one activation."""
    inits = {"wq": weight(16, 8, 1), "wk": weight(16, 4, 2), "bq": weight(1, 8, 3)[0],
             "bk": weight(1, 4, 4)[0], "bv": weight(1, 8, 5)[0]}
    inputs = [tensor("x", shape=[2, 3, 16])]
    if third_weight_is_input:
        inputs.append(tensor("wv", shape=[16, 8]))
    else:
        inits["wv"] = weight(16, 8, 6) if third_weight is None else third_weight
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q0"], name="q"),
             helper.make_node("Add", ["q0", "bq"], ["q"], name="q_bias"),
             helper.make_node("MatMul", ["x", "wk"], ["k0"], name="k"),
             helper.make_node("Add", ["bk", "k0"], ["k"], name="k_bias"),
             helper.make_node("MatMul", ["x", "wv"], ["v0" if third_bias else "v"], name="v")]
    if third_bias:
        nodes.append(helper.make_node("Add", ["v0", "bv"], ["v"], name="v_bias"))
    outputs = [tensor("q", shape=[2, 3, 8]), tensor("k", shape=[2, 3, 4]),
               tensor("v", shape=[2, 3, 8])]
    return build(nodes, inputs, outputs, inits)


def test_siblings_with_constant_biases_merge_weights_and_biases():
    snapshot = run_pass(sibling_graph(), "fuse_sibling_matmuls")
    assert ops(snapshot.graph) == {"MatMul": 1, "Add": 1, "Split": 1}
    assert [v.name for v in snapshot.graph.outputs] == ["q", "k", "v"]


def test_a_sibling_with_a_run_time_weight_is_declined_and_the_rest_merge():
    snapshot = run_pass(sibling_graph(third_weight_is_input=True), "fuse_sibling_matmuls")
    assert [(d.site, "computed at run time" in d.reason) for d in snapshot.declined] == \
        [("v", True)]
    assert ops(snapshot.graph) == {"MatMul": 2, "Add": 2, "Split": 1}


def test_a_sibling_with_a_batched_weight_is_declined():
    batched = np.stack([weight(16, 8, 7), weight(16, 8, 8)])  # [2, 16, 8]: not one [K, N]
    snapshot = run_pass(sibling_graph(third_weight=batched, third_bias=False),
                        "fuse_sibling_matmuls")
    assert len(snapshot.declined) == 1 and "[2, 16, 8]" in snapshot.declined[0].reason
    assert snapshot.rewrites == 1


def test_a_sibling_with_another_weight_dtype_is_declined():
    graph = sibling_graph(third_weight=weight(16, 8, 6, np.float64), third_bias=False)
    snapshot = PassManager(["fuse_sibling_matmuls"], check=True).run(graph).snapshots[0]
    assert [d.site for d in snapshot.declined] == ["v"]
    assert "float64" in snapshot.declined[0].reason and "float32" in snapshot.declined[0].reason


def test_biases_are_left_in_place_unless_every_sibling_has_one():
    snapshot = run_pass(sibling_graph(third_bias=False), "fuse_sibling_matmuls")
    assert ops(snapshot.graph) == {"MatMul": 1, "Split": 1, "Add": 2}


def test_gemm_siblings_with_transposed_weights_merge():
    graph = build(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["y1"], transB=1),
         helper.make_node("Gemm", ["x", "w2"], ["y2"], transB=1),
         helper.make_node("Gemm", ["x", "w3", "b3"], ["y3"])],
        [tensor("x", shape=[4, 16])],
        [tensor("y1", shape=[4, 8]), tensor("y2", shape=[4, 6]), tensor("y3", shape=[4, 5])],
        {"w1": weight(8, 16, 1), "b1": weight(1, 8, 2), "w2": weight(6, 16, 3),
         "w3": weight(16, 5, 4), "b3": np.float32(0.5)})
    snapshot = run_pass(graph, "fuse_sibling_matmuls")
    assert ops(snapshot.graph) == {"Gemm": 1, "Split": 1}
    assert snapshot.graph.nodes_of_type("Gemm")[0].inputs[1].constant_value().shape == (16, 19)


# ----------------------------------------------------------------------------- element-wise
def fused_bodies(graph: Graph) -> list[list[str]]:
    return [[b.op_type for b in n.body.nodes] for n in graph.nodes
            if n.op_type == "FusedElementwise"]


@pytest.mark.parametrize("sample", TRANSFORMERS)
def test_element_wise_chains_fuse_on_transformers(sample):
    before = load_sample(sample)
    snapshot = run_pass(before, "fuse_elementwise", SAMPLE_BINDINGS[sample])
    bodies = fused_bodies(snapshot.graph)
    assert bodies and all(len(body) >= 2 for body in bodies)
    assert len(snapshot.graph) == len(before) - sum(len(b) for b in bodies) + len(bodies)
    for node in snapshot.graph.nodes_of_type("FusedElementwise", "graphlab"):
        internal = {v.name for b in node.body.nodes for v in b.outputs} - \
            {v.name for v in node.body.outputs}
        assert not internal & set(snapshot.graph.values), "an intermediate escaped the chain"


def test_a_long_chain_sharing_one_constant_becomes_one_node_and_runs_the_same():
    """Every Mul and Add reads the same constant (hundreds of uses dropped as the chain fuses);
    one op's result also feeds a later op of the chain (a diamond), so it joins once both of
    its readers are in."""
    nodes, current = [], "x"
    for index in range(300):
        op = ("Relu", "Mul", "Tanh", "Add")[index % 4]
        inputs = [current] if op in ("Relu", "Tanh") else [current, "c"]
        nodes.append(helper.make_node(op, inputs, [f"v{index}"], name=f"node_{op}_{index}"))
        current = f"v{index}"
    nodes.append(helper.make_node("Add", [current, "v150"], ["y"], name="diamond"))
    graph = build(nodes, [tensor("x", shape=[2, 8])], [tensor("y", shape=[2, 8])],
                  {"c": np.float32(0.5)})
    result = run_checked(graph, ["fuse_elementwise"])
    fused = result.final
    assert ops(fused) == {"FusedElementwise": 1} and len(fused.nodes[0].body) == 301
    assert len(fused.values["c"].uses) == 1


def test_decomposed_gelu_becomes_one_fused_node():
    snapshot = run_pass(load_sample("teach_gelu"), "fuse_elementwise")
    assert fused_bodies(snapshot.graph) == [["Div", "Erf", "Add", "Mul", "Mul"] * 2]


def test_chain_stops_at_an_intermediate_that_is_a_graph_output():
    graph = build(
        [helper.make_node("Add", ["x", "one"], ["a"]),
         helper.make_node("Mul", ["a", "x"], ["m"]),
         helper.make_node("Relu", ["m"], ["y"])],
        [tensor("x", shape=[2, 8])], [tensor("m", shape=[2, 8]), tensor("y", shape=[2, 8])],
        {"one": np.float32(1.0)})
    snapshot = run_pass(graph, "fuse_elementwise")
    assert fused_bodies(snapshot.graph) == [["Add", "Mul"]]
    assert ops(snapshot.graph)["Relu"] == 1
    assert [v.name for v in snapshot.graph.outputs] == ["m", "y"]
    assert any("model output" in d.reason for d in snapshot.declined)


def test_chain_does_not_cross_an_opaque_op_or_integer_math():
    graph = build(
        [helper.make_node("Add", ["x", "x"], ["a"]),
         helper.make_node("Softmax", ["a"], ["s"]),
         helper.make_node("Mul", ["s", "x"], ["m"]),
         helper.make_node("Add", ["i", "i"], ["j"]),
         helper.make_node("Mul", ["j", "i"], ["k"])],
        [tensor("x", shape=[2, 8]), tensor("i", TensorProto.INT64, [2, 8])],
        [tensor("m", shape=[2, 8]), tensor("k", TensorProto.INT64, [2, 8])])
    snapshot = run_pass(graph, "fuse_elementwise")
    assert snapshot.rewrites == 0 and not snapshot.changed


def test_nodes_fused_earlier_are_left_alone():
    first = run_pass(load_sample("teach_gelu"), "fuse_elementwise")
    again = run_pass(first.graph, "fuse_elementwise")
    assert not again.changed


def test_a_fusion_that_would_wrap_around_an_outside_node_is_refused():
    graph = build(
        [helper.make_node("Relu", ["x"], ["a"]),
         helper.make_node("Neg", ["a"], ["b"]),
         helper.make_node("Add", ["a", "b"], ["y"])],
        [tensor("x", shape=[2, 8])], [tensor("y", shape=[2, 8])])
    relu, neg, add = graph.nodes
    assert creates_cycle(graph, [relu, add])  # one exit (Relu), but Add does not feed it
    assert not creates_cycle(graph, [neg, add]) and not creates_cycle(graph, [relu, neg, add])


def test_o2_merges_siblings_first_and_fuses_leftover_chains_last():
    fusions = [name for name in resolve_pipeline("O2") if name.startswith("fuse_")]
    assert fusions[0] == "fuse_sibling_matmuls" and fusions[-1] == "fuse_elementwise"
    snapshots = run_checked(load_sample("bert_tiny_op13"), "O2",
                            SAMPLE_BINDINGS["bert_tiny_op13"]).snapshots
    merged = next(s for s in snapshots if s.pass_name == "fuse_sibling_matmuls")
    assert merged.rewrites == 2
