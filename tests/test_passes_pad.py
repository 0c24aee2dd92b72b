"""Pad folding: a constant zero Pad into the Conv, ConvTranspose or pooling op that reads it.

Every run verifies the pass against onnxruntime (``run_checked``); the tests then assert the
folded pads, or, where the fold would change results, the reason given — and for the subtle
declines (MaxPool, AveragePool) that the fold the pass refuses really is wrong.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler_core.verify import make_inputs, run
from fusion_graphs import rand
from passes_helpers import (F, I64, SAMPLE_BINDINGS, build, load_sample, ops, run_checked,
                            snapshot, tensor)

X = [1, 4, 8, 8]
ZERO_PAD = [0, 0, 1, 2, 0, 0, 2, 1]      # begins (N, C, H, W), then ends


def pad_then(op: str, attrs: dict, *, pads=ZERO_PAD, source: str = "x", pad_attrs=None,
             extra_inits=None, opset: int = 17, pad_inputs=None, before=(), out_shape=None):
    """x -> [before] -> Pad -> op -> y, with the pads (and weights) as initializers."""
    weights = {"w": rand(6, 4, 3, 3)} if op == "Conv" else {
        "w": rand(4, 3, 3, 3)} if op == "ConvTranspose" else {}
    inits = {"pads": np.array(pads, np.int64), **weights, **(extra_inits or {})}
    nodes = [*before,
             helper.make_node("Pad", pad_inputs or [source, "pads"], ["padded"], name="pad",
                              **(pad_attrs or {})),
             helper.make_node(op, ["padded", *weights], ["y"], name="reader", **attrs)]
    return build(nodes, [tensor("x", F, X)], [tensor("y", F, out_shape)], inits, opset=opset)


def folded(graph, bindings=None):
    """The graph after fold_pad, which must have folded every Pad."""
    shot = snapshot(run_checked(graph, ["fold_pad"], bindings), "fold_pad")
    assert "Pad" not in ops(shot.graph) and not shot.declined, shot.declined
    return shot.graph


def declined(graph) -> str:
    """The one reason fold_pad gives for leaving the Pad in place."""
    shot = snapshot(run_checked(graph, ["fold_pad"]), "fold_pad")
    assert ops(shot.graph)["Pad"] == 1 and shot.rewrites == 0
    (decline,) = shot.declined
    assert decline.site == "pad" and decline.rule == "fold_pad"
    return decline.reason


def reader(graph):
    return graph.node_by_name("reader")


# ----------------------------------------------------------------------------- Conv
def test_pad_adds_to_the_conv_pads_and_records_where_it_went():
    graph = folded(pad_then("Conv", {"pads": [1, 0, 0, 1], "strides": [2, 2]}))
    conv = reader(graph)
    assert conv.attrs["pads"] == (2, 2, 2, 2)
    assert conv.inputs[0].name == "x"
    assert conv.provenance.rule == "fold_pad" and len(conv.provenance.sources) == 2


@pytest.mark.parametrize("opset", [10, 13, 18, 21])
def test_every_pad_signature_folds(opset):
    """Pads an attribute (opset < 11), an input (11+), limited to some axes (18+)."""
    if opset < 11:
        graph = pad_then("Conv", {}, pad_inputs=["x"], opset=opset,
                         pad_attrs={"pads": ZERO_PAD, "value": 0.0})
    elif opset < 18:
        graph = pad_then("Conv", {}, pad_inputs=["x", "pads", "zero"], opset=opset,
                         extra_inits={"zero": np.array(0.0, np.float32)})
    else:
        graph = pad_then("Conv", {}, pads=[1, 2, 2, 1], pad_inputs=["x", "pads", "", "axes"],
                         opset=opset, extra_inits={"axes": np.array([-2, -1], np.int64)})
    assert reader(folded(graph)).attrs["pads"] == (1, 2, 2, 1)


@pytest.mark.parametrize("auto_pad, pads", [
    ("VALID", (1, 1, 1, 0)),
    # padded to 10x9, stride 2: SAME pads 1 row (the odd one at the end for SAME_UPPER, at the
    # beginning for SAME_LOWER) and 1+1 columns
    ("SAME_UPPER", (1, 2, 2, 1)),
    ("SAME_LOWER", (2, 2, 1, 1)),
])
def test_auto_pad_becomes_explicit_pads(auto_pad, pads):
    graph = folded(pad_then("Conv", {"auto_pad": auto_pad, "strides": [2, 2]},
                            pads=[0, 0, 1, 1, 0, 0, 1, 0]))
    conv = reader(graph)
    assert conv.attrs["pads"] == pads and "auto_pad" not in conv.attrs


def test_one_dimensional_conv_folds():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad"),
             helper.make_node("Conv", ["padded", "w"], ["y"], name="reader")]
    graph = build(nodes, [tensor("x", F, [2, 3, 16])], [tensor("y", F, None)],
                  {"pads": np.array([0, 0, 3, 0, 0, 1], np.int64), "w": rand(5, 3, 4)})
    assert reader(folded(graph)).attrs["pads"] == (3, 1)


def test_pad_read_by_two_convs_folds_into_both():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad"),
             helper.make_node("Conv", ["padded", "w"], ["y"], name="a"),
             helper.make_node("Conv", ["padded", "w"], ["z"], name="b", strides=[2, 2])]
    graph = build(nodes, [tensor("x", F, X)], [tensor("y", F, None), tensor("z", F, None)],
                  {"pads": np.array(ZERO_PAD, np.int64), "w": rand(6, 4, 3, 3)})
    graph = folded(graph)
    assert [graph.node_by_name(n).attrs["pads"] for n in "ab"] == [(1, 2, 2, 1)] * 2


def test_two_stacked_pads_both_fold():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["once"], name="first"),
             helper.make_node("Pad", ["once", "pads"], ["twice"], name="second"),
             helper.make_node("Conv", ["twice", "w"], ["y"], name="reader")]
    graph = build(nodes, [tensor("x", F, X)], [tensor("y", F, None)],
                  {"pads": np.array(ZERO_PAD, np.int64), "w": rand(6, 4, 3, 3)})
    assert reader(folded(graph)).attrs["pads"] == (2, 4, 4, 2)


# ----------------------------------------------------------------------------- ConvTranspose
def test_conv_transpose_crop_absorbs_input_padding():
    """One zero row in front of a stride-2 ConvTranspose's input moves its output by 2 rows,
    which a crop of 2 rows removes again: pads shrink by stride × pad."""
    graph = folded(pad_then("ConvTranspose", {"strides": [2, 2], "pads": [2, 4, 3, 2],
                                              "output_padding": [1, 1]},
                            pads=[0, 0, 1, 2, 0, 0, 1, 1]))
    assert reader(graph).attrs["pads"] == (0, 0, 1, 0)


def test_conv_transpose_that_would_need_negative_pads_is_declined():
    reason = declined(pad_then("ConvTranspose", {"strides": [2, 2], "pads": [1, 1, 1, 1]}))
    assert "widen its output by stride × pad" in reason and "negative ([-1, -3, -3, -1])" in reason


# ----------------------------------------------------------------------------- pooling
def test_average_pool_counting_its_pads_folds():
    graph = folded(pad_then("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 0, 0, 1],
                                            "count_include_pad": 1}))
    assert reader(graph).attrs["pads"] == (2, 2, 2, 2)


@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_average_pool_without_own_pads_starts_counting_them(ceil_mode):
    """The Pad's zeros are data the average counts: the folded pool must count its pads."""
    graph = folded(pad_then("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2],
                                            "ceil_mode": ceil_mode}))
    assert reader(graph).attrs["count_include_pad"] == 1


def test_average_pool_that_leaves_out_its_own_pads_is_declined_and_the_fold_would_be_wrong():
    attrs, pads = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, [0, 0, 1, 0, 0, 0, 0, 1]
    reason = declined(pad_then("AveragePool", attrs, pads=pads))
    assert "count_include_pad=0" in reason
    folded_pads = {"kernel_shape": [3, 3], "pads": [2, 1, 1, 2]}
    for counting in (0, 1):  # neither way of treating the folded pads gives the same averages
        assert not _same_results(pad_then("AveragePool", attrs, pads=pads), _pool_graph(
            "AveragePool", {**folded_pads, "count_include_pad": counting}))


@pytest.mark.parametrize("activation, extra", [
    (helper.make_node("Relu", ["x"], ["act"]), {}),
    (helper.make_node("Clip", ["x", "lo", "hi"], ["act"]),
     {"lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}),
])
def test_max_pool_after_a_non_negative_op_folds(activation, extra):
    graph = folded(pad_then("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2]},
                            source="act", before=[activation], extra_inits=extra))
    assert reader(graph).attrs["pads"] == (1, 2, 2, 1)


def test_max_pool_of_signed_values_is_declined_and_the_fold_would_be_wrong():
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2]}
    reason = declined(pad_then("MaxPool", attrs))
    assert "pads with -inf" in reason and "'x' (input) is not known to be non-negative" in reason
    assert not _same_results(pad_then("MaxPool", attrs),
                             _pool_graph("MaxPool", {**attrs, "pads": [1, 2, 2, 1]}))


def test_max_pool_whose_indices_are_read_is_declined():
    nodes = [helper.make_node("Relu", ["x"], ["act"]),
             helper.make_node("Pad", ["act", "pads"], ["padded"], name="pad"),
             helper.make_node("MaxPool", ["padded"], ["y", "indices"], kernel_shape=[3, 3])]
    graph = build(nodes, [tensor("x", F, X)], [tensor("y", F, None), tensor("indices", I64, None)],
                  {"pads": np.array(ZERO_PAD, np.int64)})
    assert "Indices output is read" in declined(graph)


def test_lp_pool_folds():
    graph = folded(pad_then("LpPool", {"kernel_shape": [3, 3], "p": 2}))
    assert reader(graph).attrs["pads"] == (1, 2, 2, 1)


def test_pool_pads_as_large_as_the_kernel_are_declined():
    reason = declined(pad_then("AveragePool", {"kernel_shape": [2, 2], "count_include_pad": 1}))
    assert "not be smaller than the kernel [2, 2]" in reason


# ----------------------------------------------------------------------------- the Pad itself
@pytest.mark.parametrize("change, expected", [
    ({"pad_attrs": {"mode": "reflect"}}, "mode 'reflect' repeats values"),
    ({"pad_inputs": ["x", "pads", "one"], "extra_inits": {"one": np.array(1.0, np.float32)}},
     "it pads with 1, but"),
    ({"pads": [1, 0, 1, 1, 0, 0, 1, 1]}, "pads the batch or channel axis"),
    ({"pads": [0, 0, 1, -1, 0, 0, 1, 1]}, "negative pads, which crop"),
    ({"pad_inputs": ["x", "run_time_pads"],
      "before": [helper.make_node("Identity", ["pads"], ["run_time_pads"])]},
     "pads are computed at run time"),
])
def test_a_pad_that_is_not_a_zero_spatial_padding_is_declined(change, expected):
    assert expected in declined(pad_then("Conv", {}, **change))


def test_pad_also_read_by_another_op_is_declined_naming_it():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad"),
             helper.make_node("Conv", ["padded", "w"], ["y"]),
             helper.make_node("Relu", ["padded"], ["side"], name="side_relu")]
    graph = build(nodes, [tensor("x", F, X)], [tensor("y", F, None), tensor("side", F, None)],
                  {"pads": np.array(ZERO_PAD, np.int64), "w": rand(6, 4, 3, 3)})
    assert "also read by Relu 'side_relu', which needs the padded tensor" in declined(graph)


def test_pad_that_is_a_graph_output_is_declined():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad"),
             helper.make_node("Conv", ["padded", "w"], ["y"])]
    graph = build(nodes, [tensor("x", F, X)], [tensor("y", F, None), tensor("padded", F, None)],
                  {"pads": np.array(ZERO_PAD, np.int64), "w": rand(6, 4, 3, 3)})
    assert "is a graph output" in declined(graph)


def test_pad_read_by_no_convolution_is_not_a_candidate():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad"),
             helper.make_node("Relu", ["padded"], ["y"])]
    graph = build(nodes, [tensor("x", F, X)], [tensor("y", F, None)],
                  {"pads": np.array(ZERO_PAD, np.int64)})
    shot = snapshot(run_checked(graph, ["fold_pad"]), "fold_pad")
    assert ops(shot.graph)["Pad"] == 1 and not shot.declined


# ----------------------------------------------------------------------------- samples
def test_mobilenet_o2_with_bindings_leaves_no_pad():
    result = run_checked(load_sample("mobilenet_tiny"), "O2", SAMPLE_BINDINGS["mobilenet_tiny"])
    assert "Pad" not in ops(result.final)
    assert snapshot(result, "fold_pad").rewrites == 3


def test_mobilenet_without_bindings_says_the_pads_are_only_known_at_run_time():
    shot = snapshot(run_checked(load_sample("mobilenet_tiny"), "O1"), "fold_pad")
    assert len(shot.declined) == 3
    assert all("computed at run time" in d.reason for d in shot.declined)


def test_mobilenet_zeropad_o1_folds_every_pad_and_o2_beats_onnxruntime_extended():
    """onnxruntime's PadFusion leaves the Pad before the stem's MaxPool (32 nodes at
    ORT_ENABLE_EXTENDED); its input is a ReLU output, so folding it is exact here."""
    result = run_checked(load_sample("mobilenet_zeropad"), "O2")
    shot = snapshot(result, "fold_pad")
    assert shot.rewrites == 9 and not shot.declined
    assert "Pad" not in ops(result.final)
    assert result.final.nodes_of_type("MaxPool")[0].attrs["pads"] == (1, 1, 1, 1)
    assert len(result.final) == 31


# ----------------------------------------------------------------------------- helpers
def _pool_graph(op: str, attrs: dict):
    nodes = [helper.make_node(op, ["x"], ["y"], **attrs)]
    return build(nodes, [tensor("x", F, X)], [tensor("y", F, None)])


def _same_results(a, b) -> bool:
    inputs = make_inputs(a)
    (ya,), (yb,) = run(a, inputs).values(), run(b, inputs).values()
    return ya.shape == yb.shape and np.allclose(ya, yb, atol=1e-5)
