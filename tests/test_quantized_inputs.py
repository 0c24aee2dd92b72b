"""Models quantized before they reach GraphLab: QDQ groups folded into integer ops, lowered to
onnxruntime's QLinear operators, and verified like with like."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler_core.ir import FUSED_DOMAIN, load_model, to_bytes
from compiler_core.lowering import lower_for_onnxruntime
from compiler_core.passes import PassManager
from compiler_core.quantized_outputs import QUANTIZATION_STEPS, rounding_allowance
from compiler_core.runtime_check import RuntimeOutcome, onnxruntime_optimized
from compiler_core.runtime_verify import LevelCheck, against_input_at_level, check_pipeline
from compiler_core.verify import Verifier, compare_outputs
from graphlab.cli import main
from passes_helpers import build, load_sample, ops, tensor

U8 = TensorProto.UINT8


@pytest.fixture(scope="module")
def mobilenet():
    graph = load_sample("mobilenet_qdq")
    return graph, PassManager("O2", verify=True, check=True).run(graph)


def test_o2_folds_every_qdq_group_to_fewer_nodes_than_onnxruntime_extended(mobilenet):
    graph, result = mobilenet
    before, final = ops(graph), ops(result.final)
    extended = onnx.load_model_from_string(onnxruntime_optimized(to_bytes(graph), "extended"))
    assert len(result.final) <= len(extended.graph.node) < len(graph)
    assert final["QLinearConv"] == before["Conv"] and "Conv" not in final
    assert final["QLinearAdd"] == before["Add"] and "Add" not in final
    # left: the image's Quantize and the logits' Dequantize; Pad and MaxPool move codes
    assert final["QuantizeLinear"] == 1 and final["DequantizeLinear"] == 1
    for op in ("Pad", "MaxPool", "Flatten"):
        (node,) = result.final.nodes_of_type(op)
        assert node.outputs[0].elem_type == TensorProto.UINT8
    fused = {n.op_type for n in result.final.nodes if n.domain == FUSED_DOMAIN}
    assert fused == {"QLinearAdd", "QLinearGlobalAveragePool", "QGemm"}


def test_every_snapshot_and_the_onnxruntime_export_match_the_input_at_the_default_level(
        mobilenet):
    graph, result = mobilenet
    assert all(s.verify.ok for s in result.snapshots)
    lowering = lower_for_onnxruntime(result.final)
    assert {r.result for r in lowering.nodes} == {"com.microsoft:QLinearAdd",
                                                  "com.microsoft:QLinearGlobalAveragePool",
                                                  "com.microsoft:QGemm"}
    verifier = Verifier(graph, inputs={"image": np.random.default_rng(1).standard_normal(
        (1, 3, 64, 64), np.float32)})
    verdict = check_pipeline(result, verifier, each=True, exported=lowering.graph)
    assert verdict.ok, verdict.headline()
    assert verdict.export.report.max_abs_err <= rounding_allowance(graph)["logits"].absolute


def _qdq_nodes(kind: str):
    """x → Q → DQ → ``kind`` (with a second operand or a weight) → Q → DQ → y."""
    dq = helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"])
    head = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]), dq]
    if kind == "Mul":
        body = [helper.make_node("DequantizeLinear", ["bq", "sb", "z"], ["bf"]),
                helper.make_node("Mul", ["xf", "bf"], ["m"])]
    elif kind == "AveragePool":
        body = [helper.make_node("AveragePool", ["xf"], ["m"], kernel_shape=[2, 2],
                                 strides=[2, 2])]
    else:   # MatMul with int8 weights, one scale per column
        body = [helper.make_node("DequantizeLinear", ["wq", "sw", "wz"], ["wf"], axis=1),
                helper.make_node("MatMul", ["xf", "wf"], ["m"])]
    tail = [helper.make_node("QuantizeLinear", ["m", "sy", "zy"], ["yq"]),
            helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    return head + body + tail


def _qdq_graph(kind: str, input_zero=np.uint8(128)):
    rng = np.random.default_rng(3)
    consts = {"s": np.float32(0.02), "z": input_zero, "sy": np.float32(0.05),
              "zy": np.uint8(120), "sb": np.float32(0.01),
              "bq": rng.integers(0, 255, (1, 4, 1, 1)).astype(np.uint8),
              "wq": rng.integers(-127, 127, (8, 8)).astype(np.int8),
              "sw": np.linspace(0.01, 0.02, 8).astype(np.float32), "wz": np.zeros(8, np.int8)}
    used = {name for node in _qdq_nodes(kind) for name in node.input}
    shape = [2, 8] if kind == "MatMul" else [1, 4, 6, 6]
    return build(_qdq_nodes(kind), [tensor("x", shape=shape)], [tensor("y")],
                 {k: v for k, v in consts.items() if k in used}, opset=13)


@pytest.mark.parametrize("kind, made, lowered", [
    ("Mul", "QLinearMul", "com.microsoft:QLinearMul"),
    ("AveragePool", "QLinearAveragePool", "com.microsoft:QLinearAveragePool"),
    ("MatMul", "QLinearMatMul", None)])
def test_each_group_folds_and_runs_in_onnxruntime_as_the_input_does(kind, made, lowered):
    graph = _qdq_graph(kind)
    result = PassManager(["fold_qdq"], verify=True, check=True).run(graph)
    assert ops(result.final)[made] == 1 and kind not in ops(result.final)
    assert result.snapshots[0].verify.ok
    lowering = lower_for_onnxruntime(result.final)
    assert [r.result for r in lowering.nodes] == ([lowered] if lowered else [])
    verifier = Verifier(graph, inputs={"x": np.random.default_rng(0).standard_normal(
        graph.inputs[0].shape).astype(np.float32)})
    verdict = check_pipeline(result, verifier, exported=lowering.graph)
    assert verdict.ok, verdict.headline()


def test_a_group_at_two_scales_is_not_moved_onto_codes():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]),
             helper.make_node("MaxPool", ["xf"], ["m"], kernel_shape=[2, 2]),
             helper.make_node("QuantizeLinear", ["m", "s2", "z"], ["y"])]
    graph = build(nodes, [tensor("x", shape=[1, 2, 4, 4])], [tensor("y", U8)],
                  {"s": np.float32(0.1), "s2": np.float32(0.2), "z": np.uint8(0)}, opset=13)
    result = PassManager(["fold_qdq"]).run(graph)
    assert ops(result.final)["MaxPool"] == 1 and ops(result.final)["DequantizeLinear"] == 1
    (declined,) = result.snapshots[0].declined
    assert "one scale and zero point" in declined.reason


def test_a_product_quantized_to_another_code_type_stays_in_qdq_form():
    """int8 codes in, uint8 codes out: onnxruntime has no QLinearMatMul kernel for that."""
    graph = _qdq_graph("MatMul", input_zero=np.int8(0))
    result = PassManager(["fold_qdq"], check=True).run(graph)
    assert "QLinearMatMul" not in ops(result.final) and ops(result.final)["MatMul"] == 1
    (declined,) = result.snapshots[0].declined
    assert "quantized to int8" in declined.reason and "uint8" in declined.reason


def test_allowance_is_a_few_steps_of_the_output_grid_and_only_on_quantized_models():
    graph = load_sample("mobilenet_qdq")
    (allowance,) = rounding_allowance(graph).values()
    dequantize = graph.outputs[0].producer
    assert dequantize.op_type == "DequantizeLinear"
    step = float(dequantize.inputs[1].constant_value())
    assert allowance.absolute == pytest.approx(QUANTIZATION_STEPS * step)
    assert rounding_allowance(load_sample("cnn_bn")) is None
    reference = {"logits": np.linspace(-1, 1, 10, dtype=np.float32)}
    near = {"logits": reference["logits"] + (QUANTIZATION_STEPS - 1) * step}
    far = {"logits": reference["logits"] + 3 * QUANTIZATION_STEPS * step}
    allowances = rounding_allowance(graph)
    assert compare_outputs(reference, near, allowance=allowances).ok
    assert not compare_outputs(reference, near).ok
    assert not compare_outputs(reference, far, allowance=allowances).ok


def test_integer_outputs_are_allowed_a_few_codes():
    graph = build([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
                  [tensor("x", shape=[4])], [tensor("y", U8)],
                  {"s": np.float32(0.1), "z": np.uint8(0)}, opset=13)
    allowances = rounding_allowance(graph)
    codes = np.arange(4, dtype=np.uint8)
    assert compare_outputs({"y": codes}, {"y": codes + 1}, allowance=allowances).ok
    assert not compare_outputs({"y": codes}, {"y": codes + 1}).ok
    assert not compare_outputs({"y": codes}, {"y": codes + 2 * QUANTIZATION_STEPS},
                               allowance=allowances).ok


def _level_check(outputs: dict, reference: dict) -> LevelCheck:
    return LevelCheck(RuntimeOutcome("all", "ran", outputs=[outputs]),
                      compare_outputs(reference, outputs))


def test_a_failing_model_is_judged_against_the_input_at_the_same_level():
    graph = build([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", shape=[3])],
                  [tensor("y", shape=[3])])
    verifier = Verifier(graph, inputs={"x": np.array([1, 2, 3], np.float32)})
    moved = {"y": np.array([1.5, 2, 3], np.float32)}     # what onnxruntime makes of the input
    failing = _level_check(moved, verifier.reference_outputs)
    assert not failing.ok
    same = against_input_at_level(failing, _level_check(dict(moved), moved), verifier, 1e-4)
    assert same.ok and "the input model at ORT_ENABLE_ALL" in same.report.basis
    other = _level_check({"y": np.array([9, 2, 3], np.float32)}, verifier.reference_outputs)
    assert not against_input_at_level(other, _level_check(moved, moved), verifier, 1e-4).ok


def test_compile_verify_passes_on_the_quantized_sample(capsys):
    code = main(["compile", "mobilenet_qdq", "-p", "O2", "--verify", "--runtime",
                 "onnxruntime", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runtime_check"]["ok"] and report["runtime_check"]["export"]["ok"]
    assert Counter(report["export"]["lowered"]) == Counter(
        {"com.microsoft:QLinearAdd": 4, "com.microsoft:QLinearGlobalAveragePool": 1,
         "com.microsoft:QGemm": 1})


def test_the_inspector_shows_the_scales_and_zero_points_of_quantized_nodes(tmp_path):
    from graphlab.app.config import AppConfig
    from graphlab.app.inspector_data import describe_node
    from graphlab.app.panels.inspector import node_view
    from graphlab.app.services import Services
    from graphlab.app.view_state import ViewState

    services = Services.from_config(AppConfig(cache_dir=str(tmp_path)))
    ws = services.workspace(ViewState(model="mobilenet_qdq"), None)
    step = next(s.index for s in ws.result.snapshots if s.pass_name == "fold_qdq")
    graph = ws.result.snapshots[step].graph
    conv = graph.nodes_of_type("QLinearConv")[0]
    info = describe_node(ws, step, conv.id, "asic32")
    rows = {row["tensor"].split()[0]: row for row in info["quantization"]}
    assert list(rows) == ["x", "w", "y"]
    x_scale = float(conv.inputs[1].constant_value())
    assert rows["x"]["scale"] == f"{x_scale:.4g} (float32)"
    assert rows["x"]["zero_point"].endswith("(uint8)")
    channels = conv.inputs[4].stored.size
    assert rows["w"]["scale"].startswith(f"per channel: {channels} values")
    assert "zero point" in str(node_view(info, "asic32"))
    plain_conv = describe_node(ws, 0, ws.result.initial.nodes_of_type("Conv")[0].id, "asic32")
    assert plain_conv["quantization"] == []


def test_a_dynamically_quantized_model_is_allowed_a_few_255ths_of_its_float_outputs():
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["accf", "xs"], ["scaled"]),
             helper.make_node("Mul", ["scaled", "ws"], ["y"])]
    rng = np.random.default_rng(0)
    graph = build(nodes, [tensor("x", shape=[2, 8])], [tensor("y", shape=[2, 4])],
                  {"w": rng.integers(0, 255, (8, 4)).astype(np.uint8), "wz": np.uint8(128),
                   "ws": np.float32(0.01)}, opset=13)
    (allowance,) = rounding_allowance(graph).values()
    assert allowance.absolute == 0 and allowance.relative == QUANTIZATION_STEPS / 255
    reference = {"y": np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)}
    flipped = {"y": reference["y"] * (1 + 1 / 255)}       # one bucket's worth of change
    assert compare_outputs(reference, flipped, allowance=rounding_allowance(graph)).ok
    assert not compare_outputs(reference, flipped).ok
    assert not compare_outputs(reference, {"y": reference["y"] * 1.1},
                               allowance=rounding_allowance(graph)).ok


def test_a_candidate_is_held_to_onnxruntimes_integer_kernels_where_they_leave_the_float_graph(
        mobilenet):
    """On a CPU without 8-bit dot products onnxruntime's integer kernels saturate, away from
    the QDQ graph's float arithmetic: a folded graph is then held to the input as onnxruntime
    runs it with its own QDQ fusion.  The float reference is moved by 50 steps here, so the
    test does not depend on the CPU; a candidate far from both is still refused."""
    from compiler_core.runtime_check import run_isolated
    from compiler_core.verify import INTEGER_LEVEL

    graph, result = mobilenet
    folded = next(s.graph for s in result.snapshots if s.pass_name == "fold_qdq")
    verifier = Verifier(graph, inputs={"image": np.random.default_rng(3).standard_normal(
        (1, 3, 64, 64), np.float32)})
    step = verifier.allowance["logits"].absolute / 4
    verifier.reference_outputs = {"logits": verifier.reference_outputs["logits"] + 50 * step}
    report = verifier.check(folded)
    assert report.ok and INTEGER_LEVEL.upper() in report.basis, report
    integer = run_isolated(to_bytes(graph), [verifier.inputs], level=INTEGER_LEVEL).outputs[0]
    refused = verifier.judge({"logits": integer["logits"] + 20 * step})
    assert not refused.ok and INTEGER_LEVEL.upper() not in refused.basis


@pytest.mark.parametrize("scale, warned", [(np.inf, True), (0.0, True), (np.nan, True),
                                           (0.05, False)])
def test_a_scale_that_is_not_a_finite_positive_number_is_named_at_load(scale, warned):
    """A calibration range reaching -inf (an attention mask) gives a scale of inf: every code
    read with it dequantizes to inf or NaN.  The model loads, and says where and why."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quantize_mask"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequantize")]
    graph = build(nodes, [tensor("x", TensorProto.FLOAT, [2, 4])],
                  [tensor("y", TensorProto.FLOAT, [2, 4])],
                  {"s": np.array(scale, np.float32), "z": np.array(0, np.uint8)})
    read = load_model(to_bytes(graph))
    named = [w for w in read.warnings if "quantization scale" in w]
    assert bool(named) == warned
    if warned:
        assert "2 quantization scales are not finite positive numbers" in named[0]
        assert "'quantize_mask'" in named[0] and "calibration range" in named[0]
