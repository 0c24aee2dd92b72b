"""`compile --verify` also runs models at onnxruntime's default level, in a child process.

A model that crashes onnxruntime's optimizer is a failed check naming the first pass whose
output fails (or saying that the input model fails already), never a dead command.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from attention_graphs import decoder_attention
from compiler_core.ir import exporter, to_bytes
from compiler_core.runtime_check import run_isolated
from compiler_core.runtime_verify import _first_failing
from compiler_core.verify import DEFAULT_RTOL, FLOAT16_RTOL
from graphlab.cli import main
from passes_helpers import F, tensor

# Bisected pipeline: cse changes nothing, fold_norm_affine leaves a LayerNormalization without
# its bias, dce and eliminate_noop come after.
PIPELINE = "cse,fold_norm_affine,dce,eliminate_noop"


def _save(tmp_path, name, nodes, inputs, outputs, initializers, opset=17) -> str:
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()]
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return str(path)


@pytest.fixture
def norm_then_linear(tmp_path) -> str:
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln"),
             helper.make_node("MatMul", ["ln", "w"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "b"], ["y"], name="bias")]
    return _save(tmp_path, "norm_linear", nodes, [tensor("x", F, [2, 8])],
                 [tensor("y", F, [2, 6])],
                 {"gamma": rng.random(8, dtype=np.float32) + 0.5,
                  "beta": rng.standard_normal(8).astype(np.float32),
                  "w": rng.standard_normal((8, 6)).astype(np.float32),
                  "b": rng.standard_normal(6).astype(np.float32)})


@pytest.fixture
def old_exporter(monkeypatch):
    """The exporter as it was before canonical export: optional inputs left out at the end are
    written as empty names, which crashes onnxruntime's LayerNorm fusion."""
    monkeypatch.setattr(exporter, "_empty_tail_dropped", lambda names, keep: names)


def _compile(capsys, argv) -> tuple[int, dict, str]:
    code = main(["compile", *argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_a_pass_whose_output_crashes_onnxruntime_is_named(capsys, norm_then_linear,
                                                          old_exporter):
    code, report, err = _compile(capsys, [norm_then_linear, "-p", PIPELINE, "--verify"])
    assert code == 1
    assert report["verify"]["ok"]  # onnxruntime without its optimizer is fine with the model
    runtime = report["runtime_check"]
    assert runtime["level"] == "ORT_ENABLE_ALL" and runtime["checked"] == "final"
    assert (runtime["ok"], runtime["stage"], runtime["input_fails"]) == (False, "crash", False)
    assert (runtime["first_failing_pass"], runtime["first_failing_index"]) == (
        "fold_norm_affine", 1)
    assert "SIGSEGV" in runtime["error"] and runtime["final"]["stage"] == "crash"
    assert "pass 2 (fold_norm_affine) is the first whose output crashes onnxruntime at " \
           "ORT_ENABLE_ALL" in err


def test_each_pass_checked_gives_a_row_per_pass(capsys, norm_then_linear, old_exporter):
    code, report, _ = _compile(capsys, [norm_then_linear, "-p", PIPELINE,
                                        "--runtime-check", "each"])  # implies --verify
    assert code == 1
    assert [p["runtime"]["stage"] for p in report["passes"]] == ["ran", "crash", "crash",
                                                                  "crash"]
    assert report["runtime_check"]["first_failing_pass"] == "fold_norm_affine"
    main(["compile", norm_then_linear, "-p", PIPELINE, "--runtime-check", "each"])
    text = capsys.readouterr().out
    assert "ORT_ENABLE_ALL" in text.splitlines()[0]
    assert [line.split()[6] for line in text.splitlines()[1:5]] == ["ok", "CRASH", "CRASH",
                                                                    "CRASH"]
    assert "runtime   ORT_ENABLE_ALL: FAILED: pass 2 (fold_norm_affine)" in text


def test_canonical_export_passes_at_every_level(capsys, norm_then_linear):
    for level in ("basic", "extended", "all"):
        code, report, _ = _compile(capsys, [norm_then_linear, "-p", PIPELINE, "--verify",
                                            "--runtime-level", level])
        assert code == 0, report["runtime_check"]
        assert report["runtime_check"]["ok"] and report["runtime_check"]["stage"] == "ran"


def test_runtime_check_off_and_without_verify(capsys, norm_then_linear):
    _, report, _ = _compile(capsys, [norm_then_linear, "-p", PIPELINE, "--verify",
                                     "--runtime-check", "off"])
    assert report["runtime_check"] is None and report["verify"]["ok"]
    _, report, _ = _compile(capsys, [norm_then_linear, "-p", PIPELINE])
    assert report["runtime_check"] is None and report["verify"] is None


def cast_fed_fp16_layernorm(tmp_path) -> str:
    """x (float) -> Cast to float16 -> a decomposed LayerNorm in float16 -> Cast back.

    onnxruntime's LayerNormFusion (BASIC and above) swallows the leading Cast, so its fused
    LayerNormalization reads float x with a float16 scale and fails to load: onnxruntime's
    fault, present in the input model (reproduced below)."""
    h = TensorProto.FLOAT16
    nodes = [helper.make_node("Cast", ["x"], ["xh"], to=h),
             helper.make_node("ReduceMean", ["xh"], ["mean"], axes=[-1]),
             helper.make_node("Sub", ["xh", "mean"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["d2"]),
             helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["xn"]),
             helper.make_node("Mul", ["xn", "gamma"], ["xs"]),
             helper.make_node("Add", ["xs", "beta"], ["ln"]),
             helper.make_node("Cast", ["ln"], ["y"], to=TensorProto.FLOAT)]
    half = np.float16
    return _save(tmp_path, "cast_fp16_layernorm", nodes, [tensor("x", F, [2, 8])],
                 [tensor("y", F, [2, 8])],
                 {"two": np.array(2, half), "eps": np.array(1e-5, half),
                  "gamma": np.linspace(0.5, 1.5, 8).astype(half),
                  "beta": np.linspace(-0.1, 0.1, 8).astype(half)})


def test_onnxruntime_misfuses_a_cast_fed_layernorm_from_basic_level_on(tmp_path):
    """Minimal reproduction of onnxruntime's fault; if it is fixed, this test says so."""
    model = Path(cast_fed_fp16_layernorm(tmp_path)).read_bytes()
    batch = [{"x": np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8)}]
    assert run_isolated(model, batch, level="disabled").ok
    broken = run_isolated(model, batch, level="basic")
    assert broken.stage == "load" and "LayerNormFusion" in broken.error


def test_an_input_model_that_fails_already_blames_no_pass(capsys, tmp_path):
    code, report, err = _compile(capsys, [cast_fed_fp16_layernorm(tmp_path), "-p", "clean",
                                          "--verify"])
    assert code == 1
    runtime = report["runtime_check"]
    assert (runtime["stage"], runtime["input_fails"], runtime["first_failing_pass"]) == (
        "load", True, None)
    assert "LayerNormalization" in runtime["error"]
    assert "the input model already fails to load at ORT_ENABLE_ALL" in err
    assert "no pass is to blame" in err


def test_recognizing_the_layernorm_avoids_onnxruntime_misfusion(capsys, tmp_path):
    """The LayerNormalization op leaves onnxruntime nothing to fuse: the output loads, and
    computes what the input computes to float16 precision (the model's)."""
    code, report, _ = _compile(capsys, [cast_fed_fp16_layernorm(tmp_path), "-p",
                                        "recognize_layernorm", "--verify"])
    assert report["op_histogram_after"]["LayerNormalization"] == 1
    runtime = report["runtime_check"]
    assert code == 0 and runtime["ok"] and runtime["final"]["stage"] == "ran"
    assert runtime["final"]["rtol"] == FLOAT16_RTOL


@pytest.mark.parametrize("outcomes, first", [
    ([False], 0),
    ([True, True, False, False, False], 2),
    ([True, True, True, True, False], 4),
    ([False, False, False, False, False, False], 0),
])
def test_bisect_finds_the_pass_where_a_lasting_failure_starts(outcomes, first):
    class Check:
        def __init__(self, ok):
            self.ok = ok
    asked = []

    def check(index):
        asked.append(index)
        return Check(index < 0 or outcomes[index])
    assert _first_failing(check, len(outcomes) - 1) == first
    assert len(asked) <= max(1, len(outcomes).bit_length())


def test_the_file_written_for_onnxruntime_is_the_one_checked(capsys, norm_then_linear,
                                                              monkeypatch):
    code, report, _ = _compile(capsys, [norm_then_linear, "-p", "O2", "--verify",
                                        "--runtime", "onnxruntime"])
    assert code == 0
    assert report["runtime_check"]["export"]["ok"]
    assert "the file written for onnxruntime too" in report["runtime_check"]["summary"]

    import compiler_core.lowering as lowering_package   # `compile` imports it when asked
    real = lowering_package.lower_for_onnxruntime

    def broken_lowering(graph):
        lowering = real(graph)
        lowering.graph.nodes[0].op_type = "NoSuchOp"  # a translation bug, not a pass's
        return lowering

    monkeypatch.setattr(lowering_package, "lower_for_onnxruntime", broken_lowering)
    code, report, err = _compile(capsys, [norm_then_linear, "-p", "O2", "--verify",
                                          "--runtime", "onnxruntime"])
    runtime = report["runtime_check"]
    assert code == 1 and not runtime["ok"] and runtime["final"]["ok"]
    assert runtime["export"]["stage"] == "load" and runtime["first_failing_pass"] is None
    assert "the final model passes, but the file written for onnxruntime" in err
    assert "NoSuchOp" in runtime["error"]


@pytest.mark.parametrize("dtype, rtol, note", [
    (TensorProto.FLOAT16, FLOAT16_RTOL, "float16 operators (GroupQueryAttention)"),
    (TensorProto.FLOAT, DEFAULT_RTOL, None)])
def test_float16_operators_are_checked_at_the_float16_tolerance(capsys, tmp_path, dtype, rtol,
                                                                note):
    # onnxruntime's float16 attention kernel rounds its own way: its export is held to a few
    # float16 ulps, as the float16 model's passes are; a float32 export stays held to the
    # exact tolerance
    path = tmp_path / "mqa.onnx"
    path.write_bytes(to_bytes(decoder_attention(kv_heads=1, dtype=dtype, fill=-65504.0)))
    code, report, _ = _compile(capsys, [str(path), "--verify", "--runtime", "onnxruntime"])
    runtime, export = report["runtime_check"], report["export"]
    assert code == 0 and runtime["export"]["ok"], runtime["summary"]
    # the passes' outputs at the model's own precision (float16: a few ulps)
    assert runtime["export"]["rtol"] == rtol and runtime["final"]["rtol"] == rtol
    assert export["lowered"]["com.microsoft:GroupQueryAttention"] == 1
    # no note on the export's check: the whole check is at the model's precision already
    assert runtime["export_note"] is None
    if note is None:
        assert export["tolerance"] is None
    else:
        assert export["tolerance"]["rtol"] == FLOAT16_RTOL and note in export["tolerance"]["why"]
