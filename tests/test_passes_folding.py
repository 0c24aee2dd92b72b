"""Specialization, constant folding and CSE: hand-built edge cases and the real samples.

Sample runs verify every pass against onnxruntime (``run_checked``) and assert the effect on
the graph: which ops are gone and how many nodes are left (numbers measured on the samples).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from compiler_core.errors import VerificationError
from compiler_core.ir import load_model, to_bytes
from compiler_core.passes import PassManager, resolve_pipeline
from compiler_core.verify import run
from conformance import collect_cases, original_passes, outputs_match
from graphlab.samples import get_sample, list_samples
from passes_helpers import (F, I64, SAMPLE_BINDINGS, build, load_sample, ops, run_checked,
                            snapshot, tensor)

SHAPE_ARITHMETIC = {"Shape", "Constant", "Concat", "Unsqueeze", "Squeeze", "Range", "Slice",
                    "Expand", "ConstantOfShape", "Equal", "Ceil", "Size"}


# ----------------------------------------------------------------------------- every sample
@pytest.mark.parametrize("name", [s.name for s in list_samples()])
@pytest.mark.parametrize("bound", [False, True], ids=["dynamic", "specialized"])
def test_every_pass_keeps_every_sample_correct(name, bound):
    graph = load_sample(name)
    result = run_checked(graph, "O1", SAMPLE_BINDINGS.get(name) if bound else None)
    assert len(result.final) <= len(graph)
    assert [v.name for v in result.final.outputs] == [v.name for v in graph.outputs]


@pytest.mark.parametrize("name, nodes_after", [
    ("bert_tiny_op13", 122), ("bert_tiny_op20", 80), ("bert_tiny_dynamo", 84),
    ("gpt2_tiny", 130), ("mobilenet_tiny", 21),
])
def test_specialized_o1_leaves_no_shape_arithmetic(name, nodes_after):
    result = run_checked(load_sample(name), "O1", SAMPLE_BINDINGS[name])
    histogram = ops(result.final)
    assert not SHAPE_ARITHMETIC & set(histogram), histogram
    assert len(result.final) <= nodes_after


def test_bert_op13_o1_keeps_only_real_gathers():
    result = run_checked(load_sample("bert_tiny_op13"), "O1", SAMPLE_BINDINGS["bert_tiny_op13"])
    before, after = ops(result.initial), ops(result.final)
    assert (before["Shape"], before["Gather"], before["Concat"], before["Unsqueeze"]) == (
        9, 12, 10, 29)
    # word + token-type embedding lookups, the attention-mask gather, the pooler's [CLS] pick;
    # the position-embedding lookup read constant positions and was folded
    assert after["Gather"] == 4
    folding = snapshot(result, "fold_constants")
    assert folding.nodes_before - folding.nodes_after >= 140


def test_mobilenet_padding_becomes_constant_pads_then_conv_pads():
    result = run_checked(load_sample("mobilenet_tiny"), "O1", SAMPLE_BINDINGS["mobilenet_tiny"])
    folded = snapshot(result, "fold_constants").graph
    pads = [n for n in folded.nodes if n.op_type == "Pad"]
    assert len(pads) == 3 and all(p.inputs[1].is_initializer for p in pads)
    # constant pads are what fold_pad moves into the convolutions right after
    assert set(ops(result.final)) == {"Conv", "Clip", "GlobalAveragePool", "Flatten", "Gemm"}


def test_without_bindings_only_static_shapes_fold():
    result = run_checked(load_sample("mobilenet_tiny"), "O1")
    shot = snapshot(result, "specialize_dims")
    assert any("no dims were bound" in note for note in shot.notes)
    assert result.final.inputs[0].shape == ("batch", 3, "height", "width")
    # the padding of stride-2 convs depends on the run-time height and width
    assert ops(result.final)["Shape"] == 3 and ops(result.final)["Pad"] == 3


def test_specializing_says_the_signature_changed():
    result = run_checked(load_sample("bert_tiny_op13"), "specialize_dims",
                         {"batch": 1, "seq": 8, "beam": 4})
    notes = snapshot(result, "specialize_dims").notes
    assert "input input_ids: int64[batch,seq] -> int64[1,8]" in notes
    assert any("signature changed" in n for n in notes)
    assert any("beam" in n and "not bound" in n for n in notes)


def _scaler_then_matmul():
    """skl2onnx's shape: an unnamed batch dim, then an ai.onnx.ml op onnx cannot shape."""
    scaler = helper.make_node("Scaler", ["x"], ["scaled"], domain="ai.onnx.ml",
                              offset=[0.5] * 4, scale=[2.0] * 4)
    matmul = helper.make_node("MatMul", ["scaled", "w"], ["y"])
    g = helper.make_graph([scaler, matmul], "sk", [helper.make_tensor_value_info("x", F, [None, 4])],
                          [helper.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(np.ones((4, 3), np.float32), "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("ai.onnx.ml", 3)])
    return load_model(model.SerializeToString())


def test_an_unnamed_input_dim_gets_a_name_that_can_be_bound():
    graph = _scaler_then_matmul()
    assert graph.inputs[0].shape == ("x_dim0", 4)
    assert graph.values["scaled"].shape == ("x_dim0", 4)  # GraphLab's rule for Scaler
    final = run_checked(graph, "specialize_dims", {"x_dim0": 2}).final
    # onnx has no shape rule for Scaler: the bound size is written into its output too
    assert final.values["scaled"].shape == (2, 4) and final.values["y"].shape == (2, 3)

def test_digits_cnn_keeps_its_test_accuracy_exactly():
    sample = get_sample("digits_cnn")
    data = np.load(sample.test_data)
    images, labels = data["image"], data["labels"]
    graph = load_sample("digits_cnn")
    final = run_checked(graph, "O1").final

    def predict(g):
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(to_bytes(g), options, providers=["CPUExecutionProvider"])
        return session.run(None, {"image": images})[0].argmax(axis=1)

    before, after = predict(graph), predict(final)
    assert np.array_equal(before, after)
    assert np.mean(after == labels) == pytest.approx(0.9911, abs=5e-5)


# ----------------------------------------------------------------------------- folding rules
def test_constant_chain_folds_into_one_initializer():
    nodes = [helper.make_node("Constant", [], ["c"], value_ints=[2, 3]),
             helper.make_node("Mul", ["c", "two"], ["c2"]),
             helper.make_node("Reshape", ["x", "c2"], ["y"])]
    graph = build(nodes, [tensor("x", F, [4, 9])], [tensor("y", F, None)],
                  {"two": np.array([2, 3], np.int64)})
    final = run_checked(graph, "fold_constants,dce").final
    (reshape,) = final.nodes
    assert reshape.inputs[1].name == "c2" and tuple(reshape.inputs[1].const) == (4, 9)


def test_fold_above_the_size_cap_is_declined():
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["big"],
                              value=helper.make_tensor("v", F, [1], [1.0])),
             helper.make_node("Add", ["x", "big"], ["y"])]
    graph = build(nodes, [tensor("x", F, [1024, 1024])], [tensor("y", F, None)],
                  {"shape": np.array([1024, 1024], np.int64)})
    result = run_checked(graph, "fold_constants")
    (decline,) = snapshot(result, "fold_constants").declined
    assert decline.rule == "fold" and "4,194,304 bytes" in decline.reason
    assert "folding limit" in decline.reason
    assert ops(result.final)["ConstantOfShape"] == 1


def test_expand_to_a_huge_shape_is_declined_before_it_is_computed():
    # 1e12 elements: computing it would exhaust memory, so the size must be known first
    nodes = [helper.make_node("Expand", ["one", "shape"], ["big"]),
             helper.make_node("Shape", ["big"], ["y"])]
    graph = build(nodes, [], [tensor("y", I64, None)],
                  {"one": np.ones(1, np.float32),
                   "shape": np.array([1_000_000, 1_000_000], np.int64)})
    result = PassManager("fold_constants", check=True).run(graph)
    declined = snapshot(result, "fold_constants").declined
    assert [d.site for d in declined if "folding limit" in d.reason] == ["Expand_0"]


def test_random_ops_are_never_folded():
    nodes = [helper.make_node("RandomUniform", [], ["r"], shape=[2, 2]),
             helper.make_node("Mul", ["r", "zero"], ["z"]),
             helper.make_node("Add", ["x", "z"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2, 2])], [tensor("y", F, None)],
                  {"zero": np.zeros((2, 2), np.float32)})
    final = run_checked(graph, "fold_constants,cse").final
    assert ops(final) == {"RandomUniform": 1, "Mul": 1, "Add": 1}


def test_shape_of_a_static_activation_folds_without_bindings():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["d1"], axis=0),
             helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
             helper.make_node("Concat", ["d0", "d1"], ["target"], axis=0),
             helper.make_node("Reshape", ["r", "target"], ["y"])]
    graph = build(nodes, [tensor("x", F, ["n", 4])], [tensor("y", F, None)],
                  {"one": np.array([1], np.int64), "zero": np.array([0], np.int64)})
    final = run_checked(graph, "fold_constants,dce").final
    # dim 1 (=4) is known, dim 0 is symbolic: only the Gather of dim 1 folds
    assert ops(final) == {"Relu": 1, "Shape": 1, "Gather": 1, "Concat": 1, "Reshape": 1}
    concat = final.node_by_name("Concat_4")
    assert tuple(concat.inputs[1].const) == (4,)


def test_folding_a_graph_output_is_declined():
    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="sum")]
    graph = build(nodes, [tensor("x", F, [2])], [tensor("y", F, None)],
                  {"a": np.ones(2, np.float32), "b": np.ones(2, np.float32)})
    result = run_checked(graph, "fold_constants")
    (decline,) = snapshot(result, "fold_constants").declined
    assert decline.site == "sum" and "graph output" in decline.reason


def test_constant_nodes_become_initializers_with_their_names():
    nodes = [helper.make_node("Constant", [], ["k"], value_float=3.0),
             helper.make_node("Mul", ["x", "k"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2])], [tensor("y", F, None)])
    final = run_checked(graph, "fold_constants").final
    assert ops(final) == {"Mul": 1} and float(final.initializers["k"].const) == 3.0


def test_fold_uses_the_graph_opset():
    # opset 11 Unsqueeze takes axes as an attribute
    nodes = [helper.make_node("Unsqueeze", ["c"], ["u"], axes=[0]),
             helper.make_node("Reshape", ["x", "u"], ["y"])]
    graph = build(nodes, [tensor("x", F, [6])], [tensor("y", F, None)],
                  {"c": np.array(6, np.int64)}, opset=11)
    final = run_checked(graph, "fold_constants").final
    assert ops(final) == {"Reshape": 1}


def _with_constant_inputs(case) -> onnx.ModelProto | None:
    """The case's model with its inputs turned into weights, each output behind an Identity
    (a graph output keeps its producer, so the node under test is an inner node)."""
    graph = case.model.graph
    numeric = all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" for a in case.inputs)
    tensors = all(o.type.HasField("tensor_type") for o in graph.output)
    if not (graph.input and len(case.inputs) == len(graph.input) and numeric and tensors):
        return None
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    graph.initializer.extend(numpy_helper.from_array(a, vi.name)
                             for a, vi in zip(case.inputs, graph.input))
    del graph.input[:]
    outputs = list(graph.output)
    del graph.output[:]
    for output in outputs:
        graph.node.append(helper.make_node("Identity", [output.name], [f"{output.name}_out"]))
        graph.output.append(helper.make_value_info(f"{output.name}_out", output.type))
    return model


@pytest.mark.slow
def test_folding_reproduces_the_onnx_node_tests():
    folded, wrong = 0, []
    for case in collect_cases():
        model = _with_constant_inputs(case)
        if model is None:
            continue
        final = PassManager(["fold_constants", "dce"]).run(
            load_model(model.SerializeToString())).final
        folded += len(final) == len(model.graph.output)  # only the Identity wrappers left
        try:
            outputs = run(final, {})
            got = [outputs[o.name] for o in model.graph.output]
        except VerificationError:
            got = None
        if (got is None or not outputs_match(case.outputs, got, case.rtol, case.atol)) and (
                original_passes(case)):  # onnxruntime runs the original correctly
            wrong.append(case.name)
    assert wrong == []
    assert folded > 1000  # onnx 1.23: 1,454 of 1,532 cases fold completely


# ----------------------------------------------------------------------------- CSE
def test_cse_merges_repeated_shape_computations_and_constants():
    nodes = []
    for i in range(3):
        nodes += [helper.make_node("Shape", ["x"], [f"s{i}"]),
                  helper.make_node("Gather", [f"s{i}", f"idx{i}"], [f"d{i}"], axis=0)]
    nodes.append(helper.make_node("Concat", ["d0", "d1", "d2"], ["dims"], axis=0))
    graph = build(nodes, [tensor("x", F, ["n"])], [tensor("dims", I64, None)],
                  {f"idx{i}": np.array([0], np.int64) for i in range(3)})
    result = run_checked(graph, "cse")
    assert ops(result.final) == {"Shape": 1, "Gather": 1, "Concat": 1}
    assert "stored 2 duplicate constants once" in snapshot(result, "cse").notes


def test_cse_keeps_graph_output_names_and_never_merges_two_outputs():
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Relu", ["x"], ["b"]),
             helper.make_node("Relu", ["x"], ["c"]),
             helper.make_node("Neg", ["a"], ["n"])]
    graph = build(nodes, [tensor("x", F, [2])], [tensor("b", F, None), tensor("c", F, None),
                                                 tensor("n", F, None)])
    final = run_checked(graph, "cse").final
    assert [v.name for v in final.outputs] == ["b", "c", "n"]
    assert ops(final) == {"Relu": 2, "Neg": 1}
    assert final.node_by_name("Neg_3").inputs[0].name == "b"


def test_cse_does_not_merge_float_constants_that_only_compare_equal():
    # atan(1 / -0.0) = -pi/2 but atan(1 / 0.0) = pi/2: -0.0 == 0.0, yet they differ
    graph = build([helper.make_node("Add", ["x", "pz"], ["a"]),
                   helper.make_node("Div", ["one", "nz"], ["inf"]),
                   helper.make_node("Atan", ["inf"], ["b"]),
                   helper.make_node("Add", ["a", "b"], ["y"])],
                  [tensor("x", F, [2])], [tensor("y", F, None)],
                  {"pz": np.zeros(2, np.float32), "nz": -np.zeros(2, np.float32),
                   "one": np.ones(2, np.float32)})
    final = run_checked(graph, "cse").final
    assert {"pz", "nz"} <= set(final.initializers)


def test_cse_merges_string_constants_by_their_text():
    # string tensors are object arrays of references: identity must come from the text
    labels = {name: np.array(["cat", "dog"], dtype=object) for name in ("l0", "l1")}
    labels["l2"] = np.array(["cat", "cow"], dtype=object)
    nodes = [helper.make_node("Equal", ["s", f"l{i}"], [f"e{i}"]) for i in range(3)]
    nodes += [helper.make_node("And", ["e0", "e1"], ["both"]),
              helper.make_node("And", ["both", "e2"], ["y"])]
    graph = build(nodes, [tensor("s", onnx.TensorProto.STRING, [2])],
                  [tensor("y", onnx.TensorProto.BOOL, None)], labels, opset=20)
    final = run_checked(graph, "cse").final
    assert ops(final) == {"Equal": 2, "And": 2}
    assert len(final.initializers) == 2

def test_o1_preset_runs_cleanup_then_folding():
    assert resolve_pipeline("O1")[:6] == resolve_pipeline("clean")
    assert {"specialize_dims", "fold_constants", "cse", "dce"} <= set(resolve_pipeline("O1"))
