"""INT8 post-training quantization: accuracy on real data, the QDQ graph onnxruntime runs,
int8 weights with per-channel scales, and the record of what stayed float and why."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from compiler_core.ir import to_bytes
from compiler_core.passes import PassManager, resolve_pipeline
from compiler_core.passes.quantization.int8 import activation_params, quantize_per_channel
from compiler_core.verify import run
from graphlab.cli import main
from graphlab.samples import get_sample
from passes_helpers import SAMPLE_BINDINGS, build, load_sample, ops, snapshot, tensor

CALIBRATION_IMAGES = 100  # the first images of the test file calibrate; accuracy counts all


@pytest.fixture(scope="module")
def digits():
    """The digits test split, the float model, and O2-int8 calibrated on its first images."""
    sample = get_sample("digits_cnn")
    with np.load(sample.test_data) as data:
        images, labels = data["image"], data["labels"]
    graph = load_sample("digits_cnn")
    result = PassManager("O2-int8", verify=True, check=True, verify_inputs={"image": images},
                         calibration_inputs=[{"image": images[:CALIBRATION_IMAGES]}]).run(graph)
    return images, labels, graph, result


def predictions(graph, images):
    return run(graph, {"image": images})["logits"].argmax(axis=1)


def test_o2_int8_is_o2_then_quantization_then_folding():
    assert resolve_pipeline("O2-int8") == resolve_pipeline("O2") + ["quantize_int8", "fold_qdq"]


def test_digits_int8_accuracy_within_one_point_of_float(digits):
    images, labels, graph, result = digits
    float_pred, int8_pred = predictions(graph, images), predictions(result.final, images)
    float_acc, int8_acc = np.mean(float_pred == labels), np.mean(int8_pred == labels)
    held_out = slice(CALIBRATION_IMAGES, None)
    assert float_acc > 0.95  # the float model is a real classifier
    assert int8_acc >= float_acc - 0.01
    assert np.mean(int8_pred[held_out] == labels[held_out]) >= \
        np.mean(float_pred[held_out] == labels[held_out]) - 0.01
    assert np.mean(float_pred == int8_pred) >= 0.98  # top-1 agreement


def test_quantized_snapshot_is_checked_with_its_own_tolerance(digits):
    _, _, _, result = digits
    quantized = snapshot(result, "quantize_int8")
    assert quantized.verify.ok and quantized.verify.rtol == 0.05
    assert quantized.verify.max_rel_err > 1e-4  # int8 really changed the numbers
    assert any(n.startswith("quantized to int8 by quantize_int8: compared with tolerance 0.05")
               for n in quantized.notes)
    assert all(s.verify.rtol == 1e-4 for s in result.snapshots[:quantized.index])
    assert quantized.summary()["verify"]["rtol"] == 0.05
    folded = result.snapshots[-1]   # O2's own fold_qdq found no QDQ group yet
    assert folded.pass_name == "fold_qdq" and folded.verify.ok and folded.verify.rtol == 0.05


def test_later_passes_keep_the_loosest_tolerance():
    graph = load_sample("cnn_bn")
    result = PassManager(["quantize_int8", "dce"], verify=True).run(graph)
    assert [s.verify.rtol for s in result.snapshots] == [0.05, 0.05]
    assert all(s.verify.ok for s in result.snapshots)


def test_weights_are_int8_codes_with_one_scale_per_output_channel(digits):
    _, _, graph, result = digits
    final = snapshot(result, "quantize_int8").graph
    weight_dqs = [n for n in final.nodes_of_type("DequantizeLinear") if "axis" in n.attrs]
    assert len(weight_dqs) == 4  # three convs and the classifier
    for dq in weight_dqs:
        codes, scale, zero_point = (v.constant_value() for v in dq.inputs)
        axis = dq.attrs["axis"]
        assert codes.dtype == np.int8 and zero_point.dtype == np.int8
        assert scale.dtype == np.float32 and scale.shape == (codes.shape[axis],)
        assert not zero_point.any() and np.abs(codes).max() == 127
    assert not any(v.const.dtype == np.float32 and v.const.ndim == 4
                   for v in final.initializers.values())  # float conv weights are gone


def test_per_channel_codes_reconstruct_the_weight_within_half_a_step():
    weight = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    weight[2] = 0.0  # a dead channel
    codes, scale = quantize_per_channel(weight, 0)
    restored = codes.astype(np.float32) * scale.reshape(-1, 1, 1, 1)
    assert np.all(np.abs(restored - weight) <= scale.reshape(-1, 1, 1, 1) / 2 + 1e-7)
    assert scale[2] == 1.0 and not codes[2].any()


def test_activation_parameters_cover_the_range_and_zero_is_a_code():
    params = activation_params(0.0, 6.0)  # a ReLU6 output: 0.0 is code -128
    assert params.zero_point == -128 and params.scale == pytest.approx(6 / 255)
    params = activation_params(-1.0, 3.0)
    lowest, highest = (np.array([-128, 127]) - int(params.zero_point)) * params.scale
    assert lowest == pytest.approx(-1.0, abs=float(params.scale))
    assert highest == pytest.approx(3.0, abs=float(params.scale))
    assert activation_params(2.0, 5.0).zero_point == -128  # the range is widened to hold 0
    assert activation_params(0.0, 0.0).scale == 1.0


def test_qdq_graph_runs_in_onnxruntime_with_its_own_optimizations_on(digits):
    """onnxruntime's optimizer turns the QDQ pairs into its int8 kernels (rounding slightly
    differently from the dequantized float arithmetic) and keeps the accuracy."""
    images, labels, graph, result = digits
    session = ort.InferenceSession(to_bytes(result.final), providers=["CPUExecutionProvider"])
    int8_pred = session.run(["logits"], {"image": images})[0].argmax(1)
    assert np.mean(int8_pred == labels) >= np.mean(predictions(graph, images) == labels) - 0.01


def test_activations_get_one_qdq_pair_and_data_movement_runs_on_int8(digits):
    _, _, _, result = digits
    final = snapshot(result, "quantize_int8").graph
    counts = ops(final)
    assert counts["QuantizeLinear"] == 4 and counts["DequantizeLinear"] == 8
    for op in ("MaxPool", "Flatten"):  # the Quantize was hoisted above them
        assert all(n.outputs[0].elem_type == TensorProto.INT8 for n in final.nodes_of_type(op))
    for node in final.nodes:
        if node.op_type in ("Gemm", "FusedConv"):
            assert all(v.producer is not None and v.producer.op_type == "DequantizeLinear"
                       for v in node.inputs[:2])


def test_fold_qdq_leaves_no_quantize_or_dequantize_between_the_convolutions(digits):
    images, labels, graph, result = digits
    step = result.snapshots[-1]
    final = result.final
    assert ops(final)["QLinearConv"] == 3 and "FusedConv" not in ops(final)
    assert step.rewrites == 3 and "3 QLinearConv" in " ".join(step.notes)
    # left: the image's Quantize, and the classifier's two Dequantize (its logits are float)
    assert ops(final)["QuantizeLinear"] == 1 and ops(final)["DequantizeLinear"] == 2
    for conv in final.nodes_of_type("QLinearConv"):
        assert conv.inputs[0].elem_type == TensorProto.INT8
        assert conv.outputs[0].elem_type == TensorProto.INT8
        assert conv.inputs[3].constant_value().dtype == np.int8
        assert conv.inputs[8].constant_value().dtype == np.int32  # bias at scale s_x·s_w
    (gemm,) = step.declined
    assert gemm.site == "/12/Gemm" and "it is a model output" in gemm.reason
    int8_acc = np.mean(predictions(final, images) == labels)
    assert int8_acc >= np.mean(predictions(graph, images) == labels) - 0.01


def test_fold_qdq_makes_qlinear_matmul_and_says_why_a_bias_blocks_it():
    rng = np.random.default_rng(2)
    first, second = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    graph = build([helper.make_node("MatMul", ["x", "w1"], ["h"]),
                   helper.make_node("MatMul", ["h", "w2"], ["m"]),
                   helper.make_node("Add", ["m", "b"], ["y"])],
                  [tensor("x", shape=[4, 8])], [tensor("y", shape=[4, 8])],
                  {"w1": first, "w2": second, "b": np.ones(8, np.float32)})
    result = PassManager(["quantize_int8", "fold_qdq"], verify=True, check=True).run(graph)
    assert all(s.verify.ok for s in result.snapshots)
    final = result.final
    assert ops(final)["QLinearMatMul"] == 1 and ops(final)["MatMul"] == 1
    (kept,) = snapshot(result, "fold_qdq").declined
    assert "read by Add" in kept.reason


def test_digits_batch_one_model_calibrates_on_a_file_of_many_images(digits):
    images, labels, _, _ = digits
    result = PassManager("O2-int8", bindings={"batch": 1},
                         calibration_inputs=[{"image": images[:20]}]).run(
        load_sample("digits_cnn"))
    assert "20 given calibration batch(es)" in " ".join(snapshot(result, "quantize_int8").notes)
    assert run(result.final, {"image": images[:1]})["logits"].shape == (1, 10)


def test_bert_quantizes_its_projections_and_says_what_stayed_float():
    graph = load_sample("bert_tiny_op13")
    result = PassManager("O2-int8", bindings=SAMPLE_BINDINGS["bert_tiny_op13"], verify=True,
                         check=True).run(graph)
    quantized = snapshot(result, "quantize_int8")
    assert quantized.verify.ok
    notes = " ".join(quantized.notes)
    # the output projections' biases joined their SkipLayerNormalization: bare MatMuls
    assert "4 MatMul, 2 MatMul in Attention, 2 MatMul in FusedMatMulBias" in notes
    reasons = {(d.rule, d.site.rsplit("/", 1)[-1]): d.reason for d in quantized.declined}
    attention = [d for d in quantized.declined if d.site.endswith("Attention")
                 and d.rule == "int8_layer"]
    assert len(attention) == 4  # Q·Kᵀ and P·V of two layers
    assert all("computed inside Attention" in d.reason for d in attention)
    assert "op not supported for int8" in reasons["int8_op", "SkipLayerNormalization"]
    assert "bias add kept float" in reasons["bias", "FusedMatMulBias"]


def test_an_activation_read_elsewhere_keeps_its_float_reader():
    weight = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    graph = build([helper.make_node("MatMul", ["x", "w"], ["y"]),
                   helper.make_node("MatMul", ["x", "w"], ["z"]),
                   helper.make_node("Sigmoid", ["x"], ["s"])],
                  [tensor("x", shape=[2, 4])],
                  [tensor("y", shape=[2, 3]), tensor("z", shape=[2, 3]),
                   tensor("s", shape=[2, 4])], {"w": weight})
    result = PassManager(["quantize_int8"], verify=True, check=True).run(graph)
    final = result.final
    assert ops(final)["QuantizeLinear"] == 1 and ops(final)["DequantizeLinear"] == 2
    sigmoid = final.nodes_of_type("Sigmoid")[0]
    assert sigmoid.inputs[0].name == "x" and sigmoid.inputs[0].is_graph_input
    assert result.snapshots[0].verify.ok


def test_a_range_calibration_never_saw_keeps_the_layer_float():
    weight = np.ones((4, 3), np.float32)
    graph = build([helper.make_node("Log", ["x"], ["l"]),
                   helper.make_node("MatMul", ["l", "w"], ["y"])],
                  [tensor("x", shape=[2, 4])], [tensor("y", shape=[2, 3])], {"w": weight})
    negative = {"x": -np.ones((2, 4), np.float32)}  # log of a negative number is NaN
    result = PassManager(["quantize_int8"], calibration_inputs=[negative]).run(graph)
    step = result.snapshots[0]
    assert not step.changed and step.rewrites == 0
    assert any(d.rule == "calibration" and "tensor range unknown" in d.reason
               for d in step.declined)


def test_product_of_two_activations_stays_float():
    graph = build([helper.make_node("MatMul", ["a", "b"], ["y"])],
                  [tensor("a", shape=[2, 4]), tensor("b", shape=[4, 3])],
                  [tensor("y", shape=[2, 3])])
    step = PassManager(["quantize_int8"]).run(graph).snapshots[0]
    assert not step.changed
    assert "not a constant weight" in step.declined[0].reason


def test_models_below_opset_13_are_declined():
    graph = build([helper.make_node("MatMul", ["x", "w"], ["y"])], [tensor("x", shape=[2, 4])],
                  [tensor("y", shape=[2, 3])], {"w": np.ones((4, 3), np.float32)}, opset=12)
    step = PassManager(["quantize_int8"]).run(graph).snapshots[0]
    assert not step.changed and "opset 13" in step.declined[0].reason


def test_compile_calibrates_on_a_file_and_writes_an_int8_model(tmp_path, capsys):
    data = get_sample("digits_cnn").test_data
    out = str(tmp_path / "digits_int8.onnx")
    code = main(["compile", "digits_cnn", "--pipeline", "O2-int8", "--calibrate", data,
                 "--inputs", data, "-o", out, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["passes"][-1]["verify"] == {
        "max_abs_err": report["passes"][-1]["verify"]["max_abs_err"], "ok": True, "rtol": 0.05}
    assert report["op_histogram_after"]["QLinearConv"] == 3
    weights = [t for t in onnx.load(out).graph.initializer if t.data_type == TensorProto.INT8
               and len(t.dims) > 1]
    assert len(weights) == 4
