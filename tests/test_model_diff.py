"""The diff of any two models: nodes matched without shared ids, and each kind of difference.

Small graphs built by hand check each kind of change on its own (and that names are not needed
to match); the samples check the promises: a model against itself, GraphLab's output against
its input, two exports of one network, onnxruntime's optimized model against its input.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

from compiler_core.ir import Graph, load_model, to_bytes
from compiler_core.model_diff import b_in_a_ids, diff_models
from compiler_core.model_diff.fingerprints import array_digest
from compiler_core.model_diff.sides import file_bytes, onnxruntime_version
from compiler_core.passes import PassManager
from graphlab.cli import main
from graphlab.samples import resolve_model
from passes_helpers import F, build, load_sample, tensor

RNG = np.random.default_rng(0)
W1, B1 = RNG.standard_normal((4, 8)).astype(np.float32), RNG.standard_normal(8).astype(np.float32)
W2, B2 = RNG.standard_normal((8, 3)).astype(np.float32), RNG.standard_normal(3).astype(np.float32)


def mlp(*, w2=W2, softmax_axis: int | None = -1, bias_first: bool = False, relu: bool = True,
        extra_identity: bool = False, names: str = "", batch: int = 1) -> Graph:
    """x -> MatMul W1 -> Add b1 -> Relu -> MatMul W2 -> Add b2 -> Softmax -> y, with one knob
    per kind of difference; ``names`` prefixes every node name."""
    h = "h_relu" if relu else "h_bias"
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h_mm"], name=names + "mm1"),
             helper.make_node("Add", ["B1", "h_mm"] if bias_first else ["h_mm", "B1"],
                              ["h_bias"], name=names + "add1")]
    if relu:
        nodes.append(helper.make_node("Relu", ["h_bias"], ["h_relu"], name=names + "relu"))
    if extra_identity:
        nodes.append(helper.make_node("Identity", [h], ["h_id"], name=names + "id"))
        h = "h_id"
    nodes += [helper.make_node("MatMul", [h, "W2"], ["o_mm"], name=names + "mm2"),
              helper.make_node("Add", ["o_mm", "B2"], ["logits"], name=names + "add2")]
    axis = {} if softmax_axis is None else {"axis": softmax_axis}
    nodes.append(helper.make_node("Softmax", ["logits"], ["y"], name=names + "softmax", **axis))
    return build(nodes, [tensor("x", F, [batch, 4])], [tensor("y", F, [batch, 3])],
                 {"W1": W1, "B1": B1, "W2": w2, "B2": B2})


def only_change(diff) -> tuple[str, list]:
    """The one changed pair's op and its changes (fails when there is not exactly one)."""
    changed = diff.changed_pairs
    assert len(changed) == 1, [(p.a.name, p.changes) for p in changed]
    return changed[0].a.op, list(changed[0].changes)


def test_a_model_against_itself_has_no_difference():
    diff = diff_models(mlp(), mlp())
    assert diff.identical and len(diff.pairs) == 6
    assert diff.summary()["identical"] == 6
    assert "no difference" in diff.headline()


def test_nodes_are_matched_without_their_names():
    diff = diff_models(mlp(), mlp(names="renamed/"))
    assert diff.identical and len(diff.pairs) == 6
    assert {p.a.name: p.b.name for p in diff.pairs}["mm2"] == "renamed/mm2"
    assert "name" not in diff.how_matched()


def test_a_changed_weight_is_reported_on_its_reader_with_the_largest_difference():
    w2 = W2.copy()
    w2[2, 1] += 0.5
    op, changes = only_change(diff_models(mlp(), mlp(w2=w2, names="b/")))
    assert op == "MatMul"
    assert [(c.kind, c.where) for c in changes] == [("weights", "input 1")]
    assert changes[0].a == "float32[8, 3]" and changes[0].b.endswith("max |Δ| 0.5")


def test_attribute_changes_count_defaults_as_written():
    op, changes = only_change(diff_models(mlp(), mlp(softmax_axis=0)))
    assert op == "Softmax"
    assert [(c.kind, c.where, c.a, c.b) for c in changes] == [
        ("attributes", "attribute axis", "-1 (default)", "0")]
    assert diff_models(mlp(softmax_axis=-1), mlp(softmax_axis=None)).identical


def test_operands_of_a_commutative_op_may_come_in_either_order():
    assert diff_models(mlp(), mlp(bias_first=True)).identical


def test_a_removed_node_is_only_in_a_and_its_reader_is_rewired():
    diff = diff_models(mlp(), mlp(relu=False))
    assert [n.op for n in diff.only_a] == ["Relu"] and not diff.only_b
    op, changes = only_change(diff)
    assert op == "MatMul"
    assert [(c.kind, c.where) for c in changes] == [("inputs", "input 0")]
    assert changes[0].a == "Relu 'relu', only in A" and changes[0].b == "Add 'add1'"


def test_an_inserted_node_is_only_in_b():
    diff = diff_models(mlp(), mlp(extra_identity=True))
    assert [n.op for n in diff.only_b] == ["Identity"] and not diff.only_a
    assert only_change(diff)[1][0].b == "Identity 'id', only in B"


def test_other_input_shapes_are_an_interface_change_and_a_shape_change_per_node():
    diff = diff_models(mlp(batch=1), mlp(batch=2))
    assert [(c.kind, c.where) for c in diff.interface] == [
        ("shapes", "graph input 'x'"), ("shapes", "graph output 'y'")]
    assert diff.kinds() == {"shapes": 6}
    assert not diff.only_a and not diff.only_b


def test_b_in_a_ids_gives_matched_nodes_a_ids_and_the_rest_fresh_ones():
    a, b = mlp(), mlp(relu=False, extra_identity=True, names="b/")
    diff = diff_models(a, b)
    side_by_side = b_in_a_ids(diff)
    renumbered, ids = side_by_side.graph, side_by_side.diff
    renumbered.check()
    assert len(renumbered) == len(b)
    for pair in diff.pairs:
        assert renumbered.node_by_id(pair.a.id).name == pair.b.name
    assert ids.removed == [a.node_by_name("relu").id]
    assert [renumbered.node_by_id(i).op_type for i in ids.added] == ["Identity"]
    assert ids.added[0] not in a.node_ids()
    assert ids.modified == [a.node_by_name("mm2").id]
    assert side_by_side.view_id[b.node_by_name("b/id").id] == ids.added[0]


@pytest.mark.parametrize("sample", ["bert_tiny_op13", "gpt2_tiny", "mobilenet_tiny"])
def test_every_sample_against_its_own_export_has_no_difference(sample):
    graph = load_sample(sample)
    diff = diff_models(graph, load_model(to_bytes(graph)))
    assert diff.identical, diff.headline()
    assert len(diff.pairs) == len(graph)


@pytest.mark.parametrize("sample", ["bert_tiny_op13", "mobilenet_tiny"])
def test_graphlab_output_matches_every_node_the_pipeline_left_untouched(sample):
    graph = load_sample(sample)
    result = PassManager("O2").run(graph)
    touched = set()
    for snapshot in result.snapshots:
        touched |= set(snapshot.diff.removed) | set(snapshot.diff.modified)
    untouched = [n.name for n in graph.nodes if n.id not in touched]
    diff = diff_models(graph, load_model(to_bytes(result.final)))   # ids do not survive a file
    partner = {p.a.name: p.b.name for p in diff.pairs}
    assert len(untouched) > 10
    assert [n for n in untouched if partner.get(n) != n] == []
    fused = {n.name for n in result.final.nodes if n.body is not None}
    assert fused and fused <= {n.name for n in diff.only_b}


def weight_of(node) -> int | None:
    weights = [v.const for v in node.inputs if v is not None and v.is_initializer]
    return array_digest(weights[0]) if weights else None


def test_two_exports_of_one_network_pair_the_matmuls_reading_the_same_weights():
    a, b = load_sample("bert_tiny_op13"), load_sample("bert_tiny_dynamo")
    diff = diff_models(a, b, "op13", "dynamo")
    b_nodes = {n.id: n for n in b.nodes}
    weighted = [p for p in diff.pairs if p.a.op == "MatMul" and weight_of(a.node_by_id(p.a.id))]
    assert len(weighted) == 12   # Q, K, V, output, FFN in and out of both layers
    for pair in weighted:
        assert weight_of(a.node_by_id(pair.a.id)) == weight_of(b_nodes[pair.b.id])
    rows = {row.op: row for row in diff.by_op()}
    assert rows["LayerNormalization"].only_b == 5 and rows["ReduceMean"].only_a == 10
    assert rows["Gelu"].only_b == 2 and rows["Erf"].only_a == 2


def test_opset_13_and_20_exports_match_all_sixteen_matmuls():
    diff = diff_models(load_sample("bert_tiny_op13"), load_sample("bert_tiny_op20"))
    rows = {row.op: row for row in diff.by_op()}
    assert rows["MatMul"].matched == 16
    assert rows["LayerNormalization"].only_b == 5


def test_onnxruntime_extended_keeps_untouched_nodes_matched_and_its_fusions_only_in_b():
    graph = load_sample("bert_tiny_op13")
    optimized = onnxruntime_version(graph, "extended", file_bytes(resolve_model("bert_tiny_op13")))
    diff = diff_models(graph, optimized)
    names_a = {n.name: n.qualified_op for n in graph.nodes}
    kept = [n.name for n in optimized.nodes if names_a.get(n.name) == n.qualified_op]
    partner = {p.b.name: p.a.name for p in diff.pairs}
    assert len(kept) > 50 and all(partner[name] == name for name in kept)
    own_ops = {n.op for n in diff.only_b}
    assert {"com.microsoft.FusedMatMul", "com.microsoft.Gelu"} <= own_ops
    assert not any(p.b.op.startswith("com.microsoft") for p in diff.pairs)


def test_cli_diff_json_and_text(capsys, tmp_path):
    w2 = W2.copy()
    w2[0, 0] = 9.0
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(to_bytes(mlp()))
    b.write_bytes(to_bytes(mlp(w2=w2, relu=False)))
    assert main(["diff", str(a), str(b), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["a"] == "a.onnx" and record["b"] == "b.onnx"
    assert record["summary"]["only_a"] == 1 and record["summary"]["changed"] == 1
    assert record["summary"]["change_kinds"] == {"weights": 1, "inputs": 1}
    changed = [m for m in record["matched"] if m["changes"]]
    assert changed[0]["op"] == "MatMul" and changed[0]["a"] == "mm2"
    assert {(r["op"], r["only_a"]) for r in record["by_op"]} >= {("Relu", 1)}
    assert main(["diff", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "only in A (1): 1 Relu" in text
    assert "input 1: float32[8, 3] → float32[8, 3], max |Δ|" in text


def test_cli_diff_against_onnxruntime_after_a_pipeline(capsys):
    assert main(["diff", "cnn_bn", "--pipeline", "O2", "--onnxruntime", "extended",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["a"] == "cnn_bn after O2" and record["b"].startswith("onnxruntime extended")
    assert any(n["op"] == "com.microsoft.FusedConv" for n in record["only_b"])
    assert any(n["op"] == "graphlab.FusedConv" for n in record["only_a"])


@pytest.mark.parametrize("argv, message", [
    (["diff", "cnn_bn"], "give either a second model B or --onnxruntime LEVEL"),
    (["diff", "cnn_bn", "cnn_bn", "--onnxruntime", "basic"], "give either a second model"),
    (["diff", "cnn_bn", "no_such_model"], "is neither a file nor a sample name"),
])
def test_cli_diff_refuses_what_it_cannot_compare(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_fused_nodes_compare_their_bodies():
    graph = load_sample("teach_gelu")
    fused = PassManager("O2").run(graph).final
    assert any(n.body is not None for n in fused.nodes)
    assert diff_models(fused, fused.copy()).identical
    other = fused.copy()
    node = next(n for n in other.nodes if n.body is not None)
    node.body = node.body.copy()
    node.body.set_node_attr(node.body.nodes[0], "test_only_attribute", 1)
    op, changes = only_change(diff_models(fused, other))
    assert op == node.qualified_op
    assert [(c.kind, c.where) for c in changes] == [("attributes", "fused body")]
