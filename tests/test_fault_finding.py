"""`graphlab bisect` finds the node a broken pass broke; `graphlab reduce` shrinks real exports
with onnxruntime's known faults planted inside to the few nodes that still fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import planted_faults
from compiler_core.errors import GraphLabError
from compiler_core.fault_finding import by_provenance, failure_of, reduce_model
from compiler_core.fault_finding.failures import signature
from compiler_core.ir import load_model
from compiler_core.passes import PassManager
from compiler_core.passes.framework.pass_registry import resolve_pipeline
from compiler_core.plugins import load_plugins
from compiler_core.runtime_check import run_isolated
from compiler_core.verify import make_inputs
from graphlab.cli import main
from graphlab.samples import resolve_model

PLUGINS = os.path.join(os.path.dirname(__file__), "broken_passes.py")
# loaded as the CLI loads it (once per process), for the names of the nodes it breaks
load_plugins([PLUGINS], entry_points_too=False)
BROKEN = next(module for name, module in sys.modules.items()
              if name.startswith("graphlab_plugin_broken_passes"))
CHANGED_ADD, DROPPED_TRANSPOSE = BROKEN.CHANGED_ADD, BROKEN.DROPPED_TRANSPOSE


def _pipeline_with(*broken: str) -> str:
    """25 passes: O2's first twelve, the broken ones, then O2's next ones up to 25."""
    o2 = resolve_pipeline("O2")
    return ",".join(o2[:12] + list(broken) + o2[12:25 - len(broken)])


def _bisect(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(["bisect", *argv, "--plugins", PLUGINS, "--json"])
    return code, json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------------- bisect
def test_a_changed_constant_is_found_at_the_node_that_reads_it_through_25_passes(capsys):
    pipeline = _pipeline_with("test_change_one_constant", "test_drop_transpose")
    assert len(pipeline.split(",")) == 25
    code, report = _bisect(capsys, ["bert_tiny_op13", "-p", pipeline])
    assert code == 1
    first = report["first_divergence"]
    assert first["a"]["node"] == first["b"]["node"] == CHANGED_ADD
    assert "test_change_one_constant" in report["b"]
    by_slot = {i["slot"]: i for i in first["inputs"]}
    constant = next(i for i in by_slot.values() if "constant" in i["note"])
    computed = next(i for i in by_slot.values() if "constant" not in i["note"])
    assert constant["diverged"] and constant["b"] != constant["a"]
    assert computed["error"] == 0.0 and not computed["diverged"]
    # every value before it agrees: the error appears here, it does not propagate here
    values = report["values"]
    at = next(k for k, v in enumerate(values) if v["a"] == first["a"]["value"])
    assert at > 20 and not any(v["diverged"] for v in values[:at])
    assert first["error"] == values[at]["error"] > report["rtol"]


def test_a_dropped_transpose_is_found_at_its_reader_with_the_missing_input_named(capsys):
    pipeline = _pipeline_with("test_drop_transpose")
    code, report = _bisect(capsys, ["bert_tiny_op13", "-p", pipeline,
                                    "--pass", "test_drop_transpose"])
    assert code == 1
    first = report["first_divergence"]
    reader = DROPPED_TRANSPOSE.replace("Transpose_3", "Reshape_3")
    assert first["a"]["node"] == first["b"]["node"] == reader
    missing = first["inputs"][0]
    assert missing["b"] is None and DROPPED_TRANSPOSE in missing["note"]
    assert report["unmatched"] == {"a": [DROPPED_TRANSPOSE + "_output_0"], "b": []}


def test_a_pass_that_keeps_the_meaning_shows_no_divergence_and_pairs_fused_outputs(capsys):
    code, report = _bisect(capsys, ["bert_tiny_op13", "-p", "O2",
                                    "--pass", "recognize_layernorm"])
    assert code == 0 and report["first_divergence"] is None
    fused = [v for v in report["values"] if v["how"] == "provenance"]
    assert len(fused) == 5 and all(v["error"] < 1e-5 for v in fused)  # BERT-tiny's 5 norms


def test_two_files_one_weight_changed_is_found_at_the_matmul_reading_it(capsys, tmp_path):
    model = onnx.load(resolve_model("bert_tiny_op20"))
    matmul = [n for n in model.graph.node if n.op_type == "MatMul"][5]
    weight = next(t for t in model.graph.initializer if t.name in matmul.input)
    array = numpy_helper.to_array(weight).copy()
    array[0] += 0.5
    weight.CopyFrom(numpy_helper.from_array(array, weight.name))
    for node in model.graph.node:
        node.name = "renamed_" + node.name      # the two files share no names of nodes
    changed = tmp_path / "changed.onnx"
    onnx.save(model, changed)
    code, report = _bisect(capsys, ["bert_tiny_op20", str(changed)])
    assert code == 1
    first = report["first_divergence"]
    assert first["a"]["node"] == matmul.name[len("renamed_"):]
    assert first["b"]["node"] == matmul.name


def test_onnxruntime_optimized_model_agrees_value_for_value(capsys):
    code, report = _bisect(capsys, ["bert_tiny_op13", "--onnxruntime", "extended"])
    assert code == 0 and report["first_divergence"] is None
    assert len(report["values"]) > 80 and report["unmatched"]["a"]


def test_fused_node_stands_for_the_value_its_body_computes():
    graph = load_model(resolve_model("teach_layernorm"))
    final = PassManager("recognize_layernorm").run(graph).final
    pairs = [p for p in by_provenance(graph, final, "sources") if p.how == "provenance"]
    assert pairs
    for pair in pairs:
        assert pair.b.producer.op_type == "LayerNormalization"
        assert pair.a.producer.op_type == "Add" and pair.a.name == pair.b.name


def test_bisect_needs_exactly_one_other_side(capsys):
    assert main(["bisect", "bert_tiny_op13"]) == 2
    assert "give exactly one of" in capsys.readouterr().err


# ------------------------------------------------------------------------------------- reduce
def _reduced(model: onnx.ModelProto, kind: str, **options):
    data = model.SerializeToString()
    feed = make_inputs(load_model(data))
    failure = failure_of(kind, data, feed, **options)
    return reduce_model(model, feed, failure, seconds=240)


def test_a_layernorm_with_an_empty_bias_is_reduced_from_bert_to_itself(tmp_path):
    reduction = _reduced(planted_faults.empty_layernorm_bias("bert_tiny_op20"), "crash")
    graph = reduction.built.model.graph
    assert reduction.original_nodes == 271 and len(graph.node) <= 5
    layernorm = next(n for n in graph.node if n.op_type == "LayerNormalization")
    assert list(layernorm.input)[-1] == ""
    data = reduction.built.data
    crashed = run_isolated(data, [reduction.built.feed], level="all")
    assert crashed.stage == "crash" and "SIGSEGV" in crashed.error
    assert run_isolated(data, [reduction.built.feed], level="disabled").ok


def test_a_float64_clip_under_relu_is_reduced_from_gpt2_with_a_script_that_shows_it(tmp_path):
    out = tmp_path / "small.onnx"
    source = tmp_path / "planted.onnx"
    onnx.save(planted_faults.float64_relu_clip("gpt2_tiny"), source)
    assert main(["reduce", str(source), "--until", "load-error", "-o", str(out),
                 "--json"]) == 0
    reduced = onnx.load(out)
    assert len(reduced.graph.node) <= 5
    assert {"Relu", "Clip"} <= {n.op_type for n in reduced.graph.node}
    feed = dict(np.load(tmp_path / "small.npz"))
    refused = run_isolated(out, [feed], level="all")
    assert refused.stage == "load" and "FuseReluClip" in refused.error
    script = tmp_path / "small.py"
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode != 0 and "FuseReluClip" in ran.stderr
    assert "import graphlab" not in script.read_text() and "compiler_core" not in \
        script.read_text()


def test_a_float64_round_trip_before_a_layernorm_keeps_the_pattern_onnxruntime_misfuses():
    reduction = _reduced(planted_faults.float64_round_trip_layernorm("bert_tiny_op13"),
                         "load-error")
    ops = [n.op_type for n in reduction.built.model.graph.node]
    # onnxruntime's LayerNormFusion needs the whole decomposed norm: it stays, the rest goes
    assert reduction.original_nodes == 288 and len(ops) <= 12
    assert "Cast" in ops and ops.count("ReduceMean") == 2


def test_a_pass_that_raises_is_reduced_to_the_nodes_it_raises_on(tmp_path, capsys):
    out = tmp_path / "small.onnx"
    code = main(["reduce", "bert_tiny_op13", "--until", "pass-error", "-p",
                 "test_raise_on_erf_after_div", "--plugins", PLUGINS, "-o", str(out), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0
    assert record["nodes_before"] == 286 and record["nodes_after"] <= 2
    assert record["ops"] == ["Div", "Erf"]
    assert "test_raise_on_erf_after_div failed" in record["last_seen"]


def test_a_pass_that_changes_the_meaning_is_reduced_to_the_node_it_changes(tmp_path, capsys):
    out = tmp_path / "small.onnx"
    code = main(["reduce", "bert_tiny_op13", "--until", "mismatch", "-p",
                 "test_change_one_constant", "--plugins", PLUGINS, "-o", str(out), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["nodes_before"] == 286
    reduced = onnx.load(out)
    assert [n.name for n in reduced.graph.node] == [CHANGED_ADD]
    assert "differ" in record["last_seen"]


def test_a_model_without_the_failure_is_refused():
    model = onnx.load(resolve_model("bert_tiny_op20"))
    with pytest.raises(GraphLabError, match="does not show the failure"):
        _reduced(model, "crash")


def test_the_signature_of_a_load_error_leaves_out_names_and_sizes():
    a = "Type Error: Type (tensor(double)) of input parameter (lo_7) of operator (Clip) in " \
        "node (n12) is invalid."
    b = "Type Error: Type (tensor(float)) of input parameter (x) of operator (Relu) in node " \
        "(other) is invalid."
    assert signature(a) == signature(b)
    assert signature(a) != signature("Failed to find kernel for LayerNormalization(1)")
