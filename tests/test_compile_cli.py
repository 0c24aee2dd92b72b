"""`graphlab compile` and `graphlab passes`: the real commands, asserted on their JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from compiler_core.compilation import compile_model
from compiler_core.ir import load_model
from compiler_core.passes import Pass, PassResult
from compiler_core.passes.framework import pass_registry as registry
from compiler_core.records import to_json
from graphlab.cli import main
from graphlab.samples import get_sample
import sized_models
from passes_helpers import F, tensor

PASS_KEYS = {"name", "nodes_before", "nodes_after", "changed", "rewrites", "seconds",
             "cpu_seconds", "verify", "modified"}


def _json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(argv + ["--json"])
    return code, json.loads(capsys.readouterr().out)


class NegateFirstOutput(Pass):
    """Test-only pass that breaks the model (negates its first output), to see checks fail."""

    name = "test_only_negate_first_output"
    family = "test"

    def run(self, graph, ctx):
        output = graph.outputs[0]
        name = output.name
        graph.rename_value(output, graph.unique_name(f"{name}_before_negate"))
        negate = graph.add_node("Neg", [output], [name])
        graph.set_outputs([negate.outputs[0], *graph.outputs[1:]])
        return PassResult(rewrites=1)


@pytest.fixture
def breaking_pass(monkeypatch):
    """Registers the test-only pass for one test, so no other test ever sees it."""
    monkeypatch.setitem(registry._PASSES, NegateFirstOutput.name, NegateFirstOutput)
    return NegateFirstOutput.name


def test_compile_json_reports_every_pass(capsys):
    code, report = _json(capsys, ["compile", "mlp_dropout", "--pipeline", "clean", "--verify"])
    assert code == 0
    assert set(report) == {"nodes_before", "nodes_after", "op_histogram_after", "passes",
                           "verify", "verify_note", "runtime_check", "output", "output_files",
                           "export", "decided"}
    assert report["runtime_check"]["ok"] and report["runtime_check"]["level"] == "ORT_ENABLE_ALL"
    assert (report["nodes_before"], report["nodes_after"]) == (11, 5)
    assert report["op_histogram_after"] == {"Gemm": 3, "Relu": 2}
    assert [p["name"] for p in report["passes"]] == [
        "eliminate_dropout", "eliminate_identity", "eliminate_noop", "cancel_transposes",
        "merge_reshapes", "dce"]
    first = report["passes"][0]
    assert set(first) == PASS_KEYS
    assert first["changed"] is True and first["rewrites"] == 2
    # eliminate_dropout rewired the Gemms that read the Dropouts: each says which input
    assert [c["kind"] for m in first["modified"] for c in m["changes"]] == ["input", "input"]
    assert set(first["verify"]) == {"max_abs_err", "ok", "rtol"} and first["verify"]["ok"] is True
    assert first["verify"]["rtol"] == 1e-4
    assert report["passes"][1]["changed"] is False
    assert report["verify"] == {"max_abs_err": 0.0, "ok": True, "inputs": {
        "generated": True, "shapes": {"x": [2, 32]}, "sizes": {"batch": 2}, "found": {},
        "bound": {}, "origin": "the model's structure", "tried": []}}
    assert report["output"] is None and report["output_files"] is None


def test_compile_json_names_the_files_written(capsys, tmp_path):
    out = tmp_path / "m.onnx"
    code, report = _json(capsys, ["compile", "mobilenet_zeropad", "-o", str(out),
                                  "--external-data"])
    assert code == 0 and report["output"] == str(out)
    files = report["output_files"]
    assert files["data_path"] == f"{out}.data" and files["data_bytes"] > 200_000
    assert files["bytes"] == out.stat().st_size


def test_compile_without_verify_reports_null_checks(capsys):
    code, report = _json(capsys, ["compile", "cnn_bn", "-p", "eliminate_identity,dce"])
    assert code == 0 and report["verify"] is None
    assert [p["verify"] for p in report["passes"]] == [None, None]
    assert "Identity" not in report["op_histogram_after"]


def test_compile_writes_a_specialized_model_onnxruntime_runs(capsys, tmp_path):
    out = str(tmp_path / "bert.onnx")
    code, report = _json(capsys, ["compile", "bert_tiny_op13", "--pipeline", "O1", "--bind",
                                  "batch=1,seq=8", "--verify", "-o", out])
    assert code == 0 and report["output"] == out and report["verify"]["ok"]
    assert report["nodes_after"] < report["nodes_before"] // 2
    assert "Shape" not in report["op_histogram_after"]
    model = onnx.load(out)
    onnx.checker.check_model(model)
    assert len(model.graph.node) == report["nodes_after"]
    session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.ones(i.shape, np.int64) for i in session.get_inputs()}
    assert [i.shape for i in session.get_inputs()] == [[1, 8]] * 3
    assert session.run(None, feeds)[0].shape == (1, 8, 64)


def test_compile_verifies_with_user_inputs(capsys):
    data = get_sample("digits_cnn").test_data
    code, report = _json(capsys, ["compile", "digits_cnn", "--pipeline", "O1", "--inputs",
                                  data])
    assert code == 0 and report["verify"]["ok"]
    assert all(p["verify"] is not None for p in report["passes"])
    assert report["verify"]["inputs"] == {"generated": False, "shapes": {"image": [450, 1, 8, 8]}}


def test_failed_verification_exits_1_and_says_so(capsys, breaking_pass):
    code = main(["compile", "cnn_bn", "--pipeline", f"eliminate_identity,{breaking_pass}",
                 "--verify", "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1
    assert [p["verify"]["ok"] for p in report["passes"]] == [True, False]
    assert report["verify"]["ok"] is False
    assert "verification FAILED" in captured.err
    assert "test_only_negate_first_output" in captured.err
    # the model onnxruntime optimizes computes the same wrong answer, and the same pass is named
    runtime = report["runtime_check"]
    assert (runtime["ok"], runtime["stage"]) == (False, "ran")
    assert runtime["first_failing_pass"] == breaking_pass and "differ" in runtime["error"]


def test_verify_finds_and_reports_the_sizes_a_model_fixes_inside(capsys, tmp_path):
    path = tmp_path / "heads.onnx"
    onnx.save(sized_models.seq_first_heads(), path)
    assert main(["compile", str(path), "--pipeline", "O2", "--verify"]) == 0
    out = capsys.readouterr().out
    assert ("inputs    generated inputs x float32[5, 2, 16] at seq=5 (fixed by node "
            "'split_heads': a Reshape to [5, 4*batch, 4]") in out
    code, report = _json(capsys, ["compile", str(path), "--pipeline", "clean", "--verify"])
    inputs = report["verify"]["inputs"]
    assert code == 0 and report["runtime_check"]["ok"]
    assert inputs["shapes"] == {"x": [5, 2, 16]} and inputs["sizes"] == {"seq": 5, "batch": 2}
    assert set(inputs["found"]) == {"seq"} and inputs["tried"] == []


def test_verify_refuses_a_model_that_runs_at_no_size_in_one_line(capsys, tmp_path):
    path = tmp_path / "impossible.onnx"
    onnx.save(sized_models.impossible(), path)
    assert main(["compile", str(path), "--verify"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("graphlab: error: found no input sizes") and "\n" not in err
    assert "--bind n=..." in err


@pytest.mark.parametrize("argv", [
    ["compile", "mlp_dropout", "--bind", "batch=x"],
    ["compile", "mlp_dropout", "--pipeline", "no_such_pass"],
    ["compile", "no_such_model"],
    ["compile", "mlp_dropout", "--inputs", "missing.npz"],
])
def test_bad_input_exits_2_with_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("graphlab: error:") and "\n" not in err


def test_text_report_lists_passes_declines_and_notes(capsys, tmp_path):
    path = tmp_path / "alias.onnx"
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="alias")], "g",
                              [tensor("x", F, [2])], [tensor("y", F, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["compile", str(path), "--pipeline", "clean", "--verify"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["pass", "nodes", "rewrites", "seconds", "verify"]
    assert "eliminate_identity" in out and "1 -> 1" in out and "ok (max abs err 0)" in out
    assert "declined  eliminate_identity: identity_alias at alias:" in out


def test_near_misses_are_judged_only_for_a_report_that_shows_declines(capsys, tmp_path):
    """An Add of a Mul (not of a MatMul) under a Relu is a near miss of MatMul+bias+Relu: the
    text report declines it; the record `compile --json` prints, which shows no declines, is
    the same whether or not they were judged."""
    path = tmp_path / "near.onnx"
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["m"], name="mul"),
         helper.make_node("Add", ["m", "b"], ["a"], name="add"),
         helper.make_node("Relu", ["a"], ["y"], name="relu")], "g",
        [tensor("x", F, [2, 4])], [tensor("y", F, [2, 4])],
        [onnx.numpy_helper.from_array(np.ones(4, np.float32), "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["compile", str(path)]) == 0
    assert "declined  fuse_linear_bias_act: matmul_bias_act at relu: Add input 0: expected " \
           "MatMul, found Mul" in capsys.readouterr().out
    loaded = load_model(str(path))
    judged, unjudged = (compile_model(loaded, declines=d, all_near_misses=False)
                        for d in (True, False))
    assert any(s.declined for s in judged.snapshots)
    assert not any(s.declined for s in unjudged.snapshots)

    def timeless(record: dict) -> dict:
        return {**record, "passes": [{k: v for k, v in p.items() if "seconds" not in k}
                                     for p in record["passes"]]}
    assert timeless(to_json(judged.record())) == timeless(to_json(unjudged.record()))


def test_compile_runs_as_a_real_command(tmp_path):
    out = tmp_path / "mobilenet.onnx"
    done = subprocess.run(
        [sys.executable, "-m", "graphlab", "compile", "mobilenet_tiny", "--pipeline", "O1",
         "--bind", "batch=1,height=32,width=32", "--verify", "-o", str(out), "--json"],
        capture_output=True, text=True, check=False,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["nodes_after"] == 21 and report["verify"]["ok"] and out.exists()


def test_passes_json_lists_passes_and_presets(capsys):
    code, info = _json(capsys, ["passes"])
    assert code == 0
    by_name = {p["name"]: p for p in info["passes"]}
    for name, family in [("eliminate_dropout", "cleanup"), ("eliminate_identity", "cleanup"),
                         ("eliminate_noop", "cleanup"), ("cancel_transposes", "cleanup"),
                         ("merge_reshapes", "cleanup"), ("cse", "cleanup"), ("dce", "cleanup"),
                         ("specialize_dims", "folding"), ("fold_constants", "folding")]:
        assert by_name[name]["family"] == family
        assert by_name[name]["description"].endswith(".")
    presets = {p["name"]: p for p in info["presets"]}
    assert {"clean", "O1", "O2"} <= set(presets)
    assert presets["O1"]["passes"][:6] == presets["clean"]["passes"]
    assert all(p["description"] for p in presets.values())


def test_the_program_runs_main_then_freezes_what_the_process_holds(tmp_path, capsys):
    """`graphlab` as a process: main's status, then its objects out of the cycle collector's
    reach, so the exit does not walk them (the process ends next)."""
    import gc

    from graphlab.cli import program

    out = tmp_path / "compiled.onnx"
    assert program(["compile", "teach_gelu", "-p", "O2", "-o", str(out), "--json"]) == 0
    assert gc.get_freeze_count() > 0     # handed back after the test (conftest)
    assert json.loads(capsys.readouterr().out)["output"] == str(out)
    assert program(["compile", str(tmp_path / "missing.onnx")]) == 2
