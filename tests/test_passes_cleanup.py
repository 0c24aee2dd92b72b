"""Cleanup passes: each rule on a tiny graph (edge cases included) and on the real samples.

Every run goes through the PassManager with invariant checks and an onnxruntime comparison
after every pass (``run_checked``), so each test also proves the rewrite kept the outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from compiler_core.passes import resolve_pipeline
from compiler_core.records import to_json
from fusion_graphs import LN_CONSTANTS, decomposed_layernorm
from passes_helpers import F, I64, build, load_sample, ops, run_checked, snapshot, tensor

INT64_MAX = np.iinfo(np.int64).max


# ----------------------------------------------------------------------------- samples
def test_clean_removes_training_mode_dropout_from_mlp():
    result = run_checked(load_sample("mlp_dropout"), "clean")
    assert ops(result.final)["Dropout"] == 0
    assert ops(result.final)["Constant"] == 0  # the ratio/training_mode constants went too
    notes = snapshot(result, "eliminate_dropout").notes
    assert any("2 Dropout nodes had training_mode true" in n for n in notes)


def test_clean_removes_identity_aliases_of_weights_in_cnn_bn():
    result = run_checked(load_sample("cnn_bn"), "clean")
    final = result.final
    assert ops(final)["Identity"] == 0 and len(final) == 17
    aux = final.node_by_name("/aux_head/Gemm")
    assert [v.name for v in aux.inputs[1:]] == ["head.weight", "head.bias"]


def test_clean_keeps_every_graph_output_name():
    for name in ("cnn_bn", "mlp_dropout", "gpt2_tiny"):
        graph = load_sample(name)
        final = run_checked(graph, "clean").final
        assert [v.name for v in final.outputs] == [v.name for v in graph.outputs]


def test_clean_preset_is_the_documented_pipeline():
    assert resolve_pipeline("clean") == [
        "eliminate_dropout", "eliminate_identity", "eliminate_noop", "cancel_transposes",
        "merge_reshapes", "dce"]


# ----------------------------------------------------------------------------- dropout
def _dropout_graph(source_is_input: bool, mask_read: bool = False, training: bool = True):
    nodes = [] if source_is_input else [helper.make_node("Relu", ["x"], ["r"], name="relu")]
    source = "x" if source_is_input else "r"
    outputs = ["y", "mask"] if mask_read else ["y"]
    nodes.append(helper.make_node("Dropout", [source, "ratio", "training"], outputs,
                                  name="drop"))
    graph_outputs = [tensor("y", F, [2, 3])]
    if mask_read:
        nodes.append(helper.make_node("Cast", ["mask"], ["mask_f"], to=TensorProto.FLOAT))
        graph_outputs.append(tensor("mask_f", F, [2, 3]))
    return build(nodes, [tensor("x", F, [2, 3])], graph_outputs,
                 {"ratio": np.array(0.5, np.float32), "training": np.array(training)})


def test_dropout_feeding_a_graph_output_keeps_the_output_name():
    result = run_checked(_dropout_graph(source_is_input=False), "eliminate_dropout")
    final = result.final
    assert ops(final)["Dropout"] == 0
    assert final.outputs[0].name == "y" and final.outputs[0].producer.op_type == "Relu"


def test_dropout_between_graph_input_and_output_is_declined_with_a_reason():
    result = run_checked(_dropout_graph(source_is_input=True), "eliminate_dropout")
    shot = snapshot(result, "eliminate_dropout")
    assert ops(result.final)["Dropout"] == 1
    assert shot.declined and "rename the model's output" in shot.declined[0].reason


def test_dropout_mask_reader_gets_an_all_true_mask_with_provenance():
    result = run_checked(_dropout_graph(source_is_input=False, mask_read=True),
                         "eliminate_dropout,fold_constants")
    shot = snapshot(result, "eliminate_dropout")
    assert ops(shot.graph)["Dropout"] == 0
    record = to_json(shot)
    assert {p["rule"] for p in record["provenance"].values()} == {"dropout_mask_all_true"}
    dropout_id = next(n.id for n in result.initial.nodes if n.op_type == "Dropout")
    assert all(p["sources"] == [dropout_id] for p in record["provenance"].values())
    assert ops(result.final)["ConstantOfShape"] == 0  # a static mask folds to a constant


def test_inference_mode_dropout_is_removed_without_a_training_note():
    result = run_checked(_dropout_graph(source_is_input=False, training=False),
                         "eliminate_dropout")
    assert ops(result.final)["Dropout"] == 0
    assert snapshot(result, "eliminate_dropout").notes == []


# ----------------------------------------------------------------------------- identity
def test_identity_of_an_initializer_is_bypassed():
    nodes = [helper.make_node("Identity", ["w"], ["w_alias"]),
             helper.make_node("MatMul", ["x", "w_alias"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2, 4])], [tensor("y", F, [2, 3])],
                  {"w": np.ones((4, 3), np.float32)})
    final = run_checked(graph, "eliminate_identity").final
    assert ops(final) == {"MatMul": 1}
    assert final.nodes[0].inputs[1].name == "w"


def test_identity_from_input_to_output_is_declined():
    graph = build([helper.make_node("Identity", ["x"], ["y"], name="alias")],
                  [tensor("x", F, [2])], [tensor("y", F, [2])])
    result = run_checked(graph, "eliminate_identity")
    decline = snapshot(result, "eliminate_identity").declined[0]
    assert decline.site == "alias" and "graph input" in decline.reason


# ----------------------------------------------------------------------------- no-ops
def _noop_case(op_nodes, inits=None, shape=(2, 3, 4)):
    nodes = [helper.make_node("Relu", ["x"], ["a"])] + op_nodes + [
        helper.make_node("Neg", ["b"], ["y"])]
    return build(nodes, [tensor("x", F, list(shape))], [tensor("y", F, None)], inits)


@pytest.mark.parametrize("op_nodes, inits", [
    ([helper.make_node("Cast", ["a"], ["b"], to=TensorProto.FLOAT)], None),
    ([helper.make_node("Cast", ["a"], ["d"], to=TensorProto.DOUBLE),
      helper.make_node("Cast", ["d"], ["b"], to=TensorProto.FLOAT)], None),
    ([helper.make_node("Expand", ["a", "s"], ["b"])], {"s": np.array([1, 3, 1], np.int64)}),
    ([helper.make_node("Reshape", ["a", "s"], ["b"])], {"s": np.array([0, 3, -1], np.int64)}),
    ([helper.make_node("Reshape", ["a", "s"], ["b"])], {"s": np.array([2, 3, 4], np.int64)}),
    ([helper.make_node("Slice", ["a", "st", "en"], ["b"])],
     {"st": np.array([0, 0], np.int64), "en": np.array([INT64_MAX, 3], np.int64)}),
    ([helper.make_node("Concat", ["a"], ["b"], axis=0)], None),
    ([helper.make_node("Unsqueeze", ["a", "ax"], ["u"]),
      helper.make_node("Squeeze", ["u", "ax"], ["b"])], {"ax": np.array([-1], np.int64)}),
    ([helper.make_node("Unsqueeze", ["a", "ax"], ["u"]),
      helper.make_node("Squeeze", ["u", "ax2"], ["b"])],
     {"ax": np.array([1], np.int64), "ax2": np.array([-3], np.int64)}),
], ids=["cast", "cast_double_round_trip", "expand", "reshape_0_-1", "reshape_static", "slice_all", "concat_one",
        "unsqueeze_squeeze", "unsqueeze_squeeze_negative_axis"])
def test_noop_is_removed(op_nodes, inits):
    final = run_checked(_noop_case(op_nodes, inits), "eliminate_noop").final
    assert ops(final) == {"Relu": 1, "Neg": 1}


def test_squeeze_then_unsqueeze_on_the_same_axis_cancels():
    nodes = [helper.make_node("Squeeze", ["a", "ax"], ["s"]),
             helper.make_node("Unsqueeze", ["s", "ax"], ["b"])]
    final = run_checked(_noop_case(nodes, {"ax": np.array([1], np.int64)}, (2, 1, 4)),
                        "eliminate_noop").final
    assert ops(final) == {"Relu": 1, "Neg": 1}


@pytest.mark.parametrize("op_nodes, inits, shape", [
    ([helper.make_node("Cast", ["a"], ["d"], to=TensorProto.FLOAT16),
      helper.make_node("Cast", ["d"], ["b"], to=TensorProto.FLOAT)], None, (2, 3, 4)),
    ([helper.make_node("Cast", ["a"], ["d"], to=TensorProto.INT32),
      helper.make_node("Cast", ["d"], ["b"], to=TensorProto.FLOAT)], None, (2, 3, 4)),
    ([helper.make_node("Expand", ["a", "s"], ["b"])], {"s": np.array([2, 2, 3, 4], np.int64)},
     (2, 3, 4)),
    ([helper.make_node("Reshape", ["a", "s"], ["b"])], {"s": np.array([0, -1], np.int64)},
     (2, 3, 4)),
    ([helper.make_node("Slice", ["a", "st", "en"], ["b"])],
     {"st": np.array([1], np.int64), "en": np.array([INT64_MAX], np.int64)}, (2, 3, 4)),
    ([helper.make_node("Unsqueeze", ["a", "ax"], ["u"]),
      helper.make_node("Squeeze", ["u", "ax2"], ["b"])],
     {"ax": np.array([0], np.int64), "ax2": np.array([2], np.int64)}, (2, 1, 4)),
], ids=["cast_half_rounds", "cast_int_truncates", "expand_grows", "reshape_changes", "slice_skips_first",
        "different_axes"])
def test_real_work_is_not_mistaken_for_a_noop(op_nodes, inits, shape):
    graph = _noop_case(op_nodes, inits, shape)
    final = run_checked(graph, "eliminate_noop").final
    assert len(final) == len(graph)


def test_slice_of_a_symbolic_dim_only_counts_as_whole_when_it_runs_to_the_end():
    def graph(end):
        nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"]),
                 helper.make_node("Neg", ["s"], ["y"])]
        return build(nodes, [tensor("x", F, ["n", 4])], [tensor("y", F, None)],
                     {"st": np.array([0], np.int64), "en": np.array([end], np.int64),
                      "ax": np.array([0], np.int64)})
    assert ops(run_checked(graph(INT64_MAX), "eliminate_noop").final) == {"Neg": 1}
    assert ops(run_checked(graph(1000), "eliminate_noop").final)["Slice"] == 1


# ------------------------------------------------- onnxruntime faults our output avoids
def _load_outcome(graph) -> str:
    from compiler_core.ir import to_bytes
    from compiler_core.runtime_check import run_isolated
    from compiler_core.verify import make_inputs

    return run_isolated(to_bytes(graph), [make_inputs(graph)], level="all").stage


def _with_layernorm_of(source: str, nodes: list, shape: list, opset: int = 17):
    """``nodes``, then a LayerNorm written out of ``source`` into y (width 8), on an input x
    of ``shape``."""
    return build([*nodes, *decomposed_layernorm(source, "y")], [tensor("x", F, shape)],
                 [tensor("y", F, shape)], LN_CONSTANTS, opset=opset)


def test_a_float64_round_trip_before_a_layernorm_no_longer_trips_onnxruntime():
    """Minimal reproduction: onnxruntime's LayerNormFusion looks through Cast(double) ->
    Cast(float) and builds a LayerNormalization with mismatched types that fails to load at
    its default level.  The original model fails; clean's output (round trip gone) loads."""
    graph = _with_layernorm_of("f", [
        helper.make_node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["d"], ["f"], to=TensorProto.FLOAT)], [2, 8], opset=16)
    assert _load_outcome(graph) == "load"  # onnxruntime's own fault, kept visible here
    final = run_checked(graph, "clean").final
    assert "Cast" not in ops(final) and _load_outcome(final) == "ran"


def test_a_transpose_pair_between_a_cast_and_a_layernorm_stays_so_onnxruntime_loads_it():
    """Found by fuzzing: x -> Cast(float16) -> Cast(float) -> two Transposes that cancel ->
    a LayerNorm written out.  The input loads at onnxruntime's default level; without the
    Transposes its LayerNormFusion would take the Cast in and fail to load, so the pair
    stays and the decline says why."""
    graph = _with_layernorm_of("tt", [
        helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["h"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["f"], ["t"], perm=[1, 0]),
        helper.make_node("Transpose", ["t"], ["tt"], perm=[1, 0])], [4, 8])
    assert _load_outcome(graph) == "ran"
    result = run_checked(graph, "clean")
    assert ops(result.final)["Transpose"] == 2 and _load_outcome(result.final) == "ran"
    declines = snapshot(result, "cancel_transposes").declined
    assert [d.rule for d in declines] == ["transpose_pair_cancels"]
    assert "LayerNormFusion" in declines[0].reason and "Cast" in declines[0].reason


def test_an_identity_between_a_cast_and_a_layernorm_goes_as_onnxruntime_removes_it_too():
    """Found by fuzzing (seed 20261201, case 3693): an Identity in the same place is not
    kept.  onnxruntime removes it itself before its LayerNormFusion runs, so the input model
    fails to load already and keeping it would protect nothing; it goes, and
    eliminate_identity keeps its promise (no removable Identity left, checked in check mode)."""
    graph = _with_layernorm_of("i", [
        helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["h"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Identity", ["f"], ["i"])], [4, 8])
    assert _load_outcome(graph) == "load"   # onnxruntime's own fault, in the input
    result = run_checked(graph, ["eliminate_identity"])   # check mode: the promise is tested
    assert ops(result.final)["Identity"] == 0
    assert not snapshot(result, "eliminate_identity").declined


def test_a_transpose_pair_before_a_layernorm_of_an_input_still_cancels():
    """The guard is for a Cast only: read straight from the model's input, the norm is safe."""
    graph = _with_layernorm_of("tt", [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        helper.make_node("Transpose", ["t"], ["tt"], perm=[1, 0])], [4, 8])
    result = run_checked(graph, "clean")
    assert ops(result.final)["Transpose"] == 0 and _load_outcome(result.final) == "ran"


def test_relu_under_a_float64_clip_is_absorbed_so_onnxruntime_loads_the_model():
    """Minimal reproduction: onnxruntime's FuseReluClip fails on a float64 Clip at its default
    level.  Clip(Relu(x), lo, hi) = Clip(x, max(lo, 0), hi), so the Relu goes."""
    nodes = [helper.make_node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
             helper.make_node("Relu", ["d"], ["r"]),
             helper.make_node("Clip", ["r", "lo", "hi"], ["c"]),
             helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    graph = build(nodes, [tensor("x", F, [2, 8])], [tensor("y", F, [2, 8])],
                  {"lo": np.float64(-1.0), "hi": np.float64(0.5)})
    assert _load_outcome(graph) == "load"
    final = run_checked(graph, "eliminate_noop").final
    assert ops(final) == {"Cast": 2, "Clip": 1} and _load_outcome(final) == "ran"
    clip = next(n for n in final.nodes if n.op_type == "Clip")
    assert float(clip.inputs[1].constant_value()) == 0.0  # max(-1, 0)


@pytest.mark.parametrize("clip, inits, opset", [
    (helper.make_node("Clip", ["r"], ["b"]), None, 13),                       # no bounds
    (helper.make_node("Clip", ["r", "", "hi"], ["b"]), {"hi": np.float32(-0.5)}, 13),
    (helper.make_node("Clip", ["r", "lo"], ["b"]), {"lo": np.float32(0.25)}, 13),
    (helper.make_node("Clip", ["r"], ["b"], min=-2.0, max=6.0), None, 6),     # attributes
], ids=["no_bounds", "max_only_negative", "positive_min", "attribute_form"])
def test_relu_into_clip_is_exact_for_every_bound(clip, inits, opset):
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Relu", ["n"], ["r"]),
             clip, helper.make_node("Neg", ["b"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2, 3, 4])], [tensor("y", F, None)], inits, opset)
    final = run_checked(graph, "eliminate_noop").final  # compared with onnxruntime
    assert ops(final) == {"Neg": 2, "Clip": 1}


def test_relu_also_read_elsewhere_stays_for_that_reader():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Clip", ["r", "lo", "hi"], ["y"]),
             helper.make_node("Neg", ["r"], ["z"])]
    graph = build(nodes, [tensor("x", F, [2, 3])], [tensor("y", F, None), tensor("z", F, None)],
                  {"lo": np.float32(0.0), "hi": np.float32(6.0)})
    final = run_checked(graph, "eliminate_noop").final
    assert ops(final) == {"Relu": 1, "Clip": 1, "Neg": 1}
    clip = next(n for n in final.nodes if n.op_type == "Clip")
    assert clip.inputs[0].name == "x"


# ----------------------------------------------------------------------------- transposes
def _transpose_pair(perm1, perm2, source_is_input=True):
    nodes = [] if source_is_input else [helper.make_node("Relu", ["x"], ["r"])]
    source = "x" if source_is_input else "r"
    nodes += [helper.make_node("Transpose", [source], ["t1"], perm=perm1, name="t1"),
              helper.make_node("Transpose", ["t1"], ["y"], perm=perm2, name="t2")]
    return build(nodes, [tensor("x", F, [2, 3, 4])], [tensor("y", F, None)])


def test_transpose_pair_that_cancels_is_removed():
    final = run_checked(_transpose_pair([1, 2, 0], [2, 0, 1], source_is_input=False),
                        "cancel_transposes").final
    assert ops(final) == {"Relu": 1} and final.outputs[0].name == "y"


def test_transpose_pair_from_input_to_output_is_declined():
    result = run_checked(_transpose_pair([1, 0, 2], [1, 0, 2]), "cancel_transposes")
    declined = snapshot(result, "cancel_transposes").declined
    assert ops(result.final)["Transpose"] == 2
    assert declined[0].rule == "transpose_pair_cancels" and "graph input" in declined[0].reason


def test_transpose_pair_merges_into_one_with_provenance():
    result = run_checked(_transpose_pair([1, 0, 2], [0, 2, 1]), "cancel_transposes")
    final = result.final
    (merged,) = final.nodes
    assert merged.attrs["perm"] == (1, 2, 0)
    assert merged.provenance.rule == "transpose_pair_merges"
    assert set(merged.provenance.sources) == {n.id for n in result.initial.nodes}


def test_transposed_operand_of_gemm_becomes_a_flag():
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("Gemm", ["xt", "wt"], ["y"], transB=1)]
    graph = build(nodes, [tensor("x", F, [4, 2])], [tensor("y", F, None)],
                  {"w": np.arange(12, dtype=np.float32).reshape(4, 3)})
    final = run_checked(graph, "cancel_transposes").final
    (gemm,) = final.nodes
    assert gemm.attrs["transA"] == 1 and gemm.attrs["transB"] == 0
    assert [v.name for v in gemm.inputs] == ["x", "w"]


def test_transposed_constant_matmul_weight_is_stored_transposed():
    weight = np.arange(12, dtype=np.float32).reshape(3, 4)
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2, 5, 4])], [tensor("y", F, None)], {"w": weight})
    final = run_checked(graph, "cancel_transposes,dce").final
    (matmul,) = final.nodes
    assert np.array_equal(matmul.inputs[1].const, weight.T)
    assert list(final.initializers) == [matmul.inputs[1].name]


def test_matmul_of_a_transposed_2d_activation_becomes_gemm():
    nodes = [helper.make_node("Transpose", ["b"], ["bt"], perm=[1, 0]),
             helper.make_node("MatMul", ["a", "bt"], ["y"])]
    graph = build(nodes, [tensor("a", F, [2, 4]), tensor("b", F, [3, 4])],
                  [tensor("y", F, None)])
    result = run_checked(graph, "cancel_transposes")
    (gemm,) = result.final.nodes
    assert gemm.op_type == "Gemm" and gemm.attrs["transB"] == 1
    assert gemm.provenance.rule == "matmul_of_transpose_to_gemm"


# ----------------------------------------------------------------------------- reshapes
def _reshape_chain(first, second, shape=(2, 3, 4), allowzero=0):
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "s1"], ["m"], name="first"),
             helper.make_node("Reshape", ["m", "s2"], ["y"], name="second",
                              allowzero=allowzero)]
    return build(nodes, [tensor("x", F, list(shape))], [tensor("y", F, None)],
                 {"s1": np.array(first, np.int64), "s2": np.array(second, np.int64)})


@pytest.mark.parametrize("first, second, expected", [
    ([6, 4], [4, -1], (4, -1)),           # the middle shape does not matter
    ([6, -1], [0, 2, 2], (6, 2, 2)),      # outer 0 copies a middle dim: made explicit
    ([0, 12], [0, 3, -1], (0, 3, -1)),    # both copy x's dim 0: the 0 stays a copy
    ([-1, 4], [0, 0], (6, 4)),            # the middle dims are known from shape inference
], ids=["minus_one", "zero_from_middle", "zero_from_input", "zero_from_inferred"])
def test_reshape_chain_merges(first, second, expected):
    result = run_checked(_reshape_chain(first, second), "merge_reshapes")
    reshapes = [n for n in result.final.nodes if n.op_type == "Reshape"]
    assert len(reshapes) == 1
    assert tuple(reshapes[0].inputs[1].const) == expected
    assert reshapes[0].inputs[0].producer.op_type == "Relu"
    assert reshapes[0].provenance.rule == "reshape_chain"


def test_reshape_chain_with_an_unknown_middle_dim_is_declined():
    nodes = [helper.make_node("Reshape", ["x", "s1"], ["m"], name="first"),
             helper.make_node("Reshape", ["m", "s2"], ["y"], name="second")]
    graph = build(nodes, [tensor("x", F, ["n", 12])], [tensor("y", F, None)],
                  {"s1": np.array([-1, 4], np.int64), "s2": np.array([0, 2, 2], np.int64)})
    result = run_checked(graph, "merge_reshapes")
    decline = snapshot(result, "merge_reshapes").declined[0]
    assert decline.site == "second" and "not known" in decline.reason
    assert ops(result.final)["Reshape"] == 2


def test_allowzero_reshape_keeps_its_literal_zeros():
    # x is empty; with allowzero the outer 0 is a zero-sized dim, not "copy x's dim 0" (= 2)
    nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=0),
             helper.make_node("Reshape", ["f", "s"], ["y"], allowzero=1)]
    graph = build(nodes, [tensor("x", F, [2, 0])], [tensor("y", F, None)],
                  {"s": np.array([0, 7], np.int64)}, opset=14)
    (reshape,) = run_checked(graph, "merge_reshapes").final.nodes
    assert reshape.inputs[0].name == "x" and reshape.attrs["allowzero"] == 1


def test_flatten_then_reshape_merges():
    nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=1),
             helper.make_node("Reshape", ["f", "s"], ["y"])]
    graph = build(nodes, [tensor("x", F, [2, 3, 4])], [tensor("y", F, None)],
                  {"s": np.array([4, 6], np.int64)})
    final = run_checked(graph, "merge_reshapes").final
    assert ops(final) == {"Reshape": 1} and final.nodes[0].inputs[0].name == "x"


def test_index_typed_reshape_targets_are_int64():
    graph = _reshape_chain([6, -1], [0, 2, 2])
    final = run_checked(graph, "merge_reshapes").final
    (reshape,) = [n for n in final.nodes if n.op_type == "Reshape"]
    assert reshape.inputs[1].elem_type == I64
