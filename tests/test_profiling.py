"""Measured, not only modeled: onnxruntime's profile joined to node ids, this machine as a
measured target, and prediction beside measurement (`compiler_core.profiling`,
`graphlab profile`, `graphlab targets --measure`).  Profiling runs are kept short: tiny
samples, one warm-up, two or three timed runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler_core.hardware.cost import graph_cost
from compiler_core.hardware.rate_kinds import RATE_KINDS
from compiler_core.hardware.targets import get_target, measured_targets, target_from_dict, \
    user_targets_dir
from compiler_core.ir import load_model
from compiler_core.lowering import lower_for_onnxruntime
from compiler_core.passes import PassManager
from compiler_core.profiling.compare import ComparedOp, compare, ranks, spearman
from compiler_core.profiling.machine import MACHINE_TARGET, measure_machine
from compiler_core.profiling.runner import LevelProfile, ProfiledOp, ProfileSettings, \
    profile_graphs
from compiler_core.records import to_json
from compiler_core.verify import make_inputs
from graphlab.cli import main
from graphlab.samples import resolve_model

BINDINGS = {"batch": 1, "seq": 16}
SHORT = ProfileSettings(warmup=1, repeats=2)


def sample(name: str, pipeline: str | None = None):
    graph = load_model(resolve_model(name))
    return PassManager(pipeline, bindings=BINDINGS).run(graph).final if pipeline else graph


def run_json(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def bert_o2():
    graph = sample("bert_tiny_op13", "O2")
    return graph, profile_graphs([graph], make_inputs(graph, BINDINGS), SHORT)[0]


@pytest.fixture(scope="module")
def machine():
    return measure_machine(threads=os.cpu_count() or 1)


def test_every_kernel_of_a_fused_bert_is_traced_to_a_node_that_exists(bert_o2):
    graph, levels = bert_o2
    ids = {node.id for node in graph.nodes}
    assert set(levels) == {"all", "disabled"}
    for level in levels.values():
        assert level.untraced == []
        assert level.ops and all(set(op.ids) <= ids for op in level.ops)
        assert all(len(op.micros) == SHORT.repeats for op in level.ops)
        assert level.total_ms > 0 and level.kernel_ms > 0
        assert all(op.measured_ms >= 0 for op in level.ops)
        slowest = max(level.ops, key=lambda op: op.measured_ms)
        assert slowest.measured_ms > 0


def test_a_fused_node_written_inline_is_measured_as_one_node(bert_o2):
    graph, levels = bert_o2
    attention = [n.id for n in graph.nodes if n.op_type == "Attention"]
    assert attention, "O2 fuses BERT's attention"
    for node_id in attention:
        owning = [op for op in levels["disabled"].ops if node_id in op.ids]
        assert len(owning) == 1 and owning[0].ids == (node_id,)
        assert len(owning[0].kernels) > 5   # its body's ops, written inline by onnxruntime
        assert all(k.startswith("_inlfunc_") for k in owning[0].kernels)


def test_nodes_onnxruntime_fused_itself_are_one_group_that_says_so(bert_o2):
    graph, levels = bert_o2
    fused = [op for op in levels["all"].ops if op.fused_by_onnxruntime]
    assert fused
    by_id = {n.id: n for n in graph.nodes}
    for op in fused:
        assert len(op.ids) > 1 and to_json(op)["note"].startswith("onnxruntime ran these")
        assert {by_id[i].op_type for i in op.ids} == set(op.op_types)
    # none of the nodes is measured twice
    counted = [i for op in levels["all"].ops for i in op.ids]
    assert len(counted) == len(set(counted))


def test_a_cnn_at_every_level_is_traced_whole():
    graph = sample("mobilenet_tiny")
    levels = profile_graphs([graph], make_inputs(graph, BINDINGS), SHORT)[0]
    ids = {node.id for node in graph.nodes}
    convs = {n.id for n in graph.nodes if n.op_type == "Conv"}
    for level in levels.values():
        assert level.untraced == [] and all(set(op.ids) <= ids for op in level.ops)
        traced = {i for op in level.ops for i in op.ids}
        assert convs <= traced


def test_ranks_share_ties_and_spearman_reads_order_not_scale():
    assert ranks([3.0, 1.0, 2.0, 2.0]) == [4.0, 1.0, 2.5, 2.5]
    assert spearman([1, 2, 3, 4], [10, 20, 300, 4000]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2], [1, 2]) is None
    assert spearman([1, 1, 1], [1, 2, 3]) is None


def _op(measured_ms: float, **terms) -> ComparedOp:
    profiled = ProfiledOp((1,), ("mm",), ("MatMul",), ("mm (MatMul)",),
                          (measured_ms * 1000,) * 3, "name")
    return ComparedOp(profiled, **terms)


def test_a_prediction_off_by_more_than_twice_names_the_term_that_dominates():
    slow = _op(10.0, compute_ms=1.0, traffic_ms=0.2, overhead_ms=0.01, roofline_ms=1.0,
               flops=2_000_000_000, bytes=1000)
    assert slow.ratio == pytest.approx(10 / 1.01)
    assert slow.dominant == "compute"
    assert "slower than predicted; compute dominates" in slow.miss()
    assert "200 GFLOP/s" in slow.miss()      # 2e9 FLOP in 10 ms
    tiny = _op(0.05, compute_ms=0.0, traffic_ms=0.001, overhead_ms=0.005, roofline_ms=0.001,
               flops=0, bytes=10)
    assert tiny.dominant == "overhead" and "overhead dominates" in tiny.miss()
    close = _op(1.5, compute_ms=1.0, traffic_ms=0.1, overhead_ms=0.0, roofline_ms=1.0,
                flops=1, bytes=1)
    assert close.miss() is None


def _convolutions(tmp_path):
    """Three float32 3x3 convolutions in a row: at stride 1, at stride 2, depthwise."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (8, 8, 3, 3)), ("w2", (8, 8, 3, 3)),
                                   ("w3", (8, 1, 3, 3)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="unit", kernel_shape=[3, 3],
                              pads=[1] * 4),
             helper.make_node("Conv", ["a", "w2"], ["b"], name="strided", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1] * 4),
             helper.make_node("Conv", ["b", "w3"], ["y"], name="depthwise", group=8,
                              kernel_shape=[3, 3], pads=[1] * 4)]
    graph = helper.make_graph(
        nodes, "convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "convs.onnx"
    onnx.save(model, path)
    return load_model(str(path))


def _measured_like(paper: str, **by_kind):
    data = to_json(get_target(paper))
    data.update(name="measured_here", measured={"when": "now", "how": "timed",
                                                "ops_per_s_by_kind": by_kind})
    return target_from_dict(data)


def test_a_measured_target_prices_a_convolution_at_its_kinds_rate(tmp_path):
    graph = _convolutions(tmp_path)
    profile = LevelProfile("all", [1.0], [1.0], [
        ProfiledOp((n.id,), (n.name,), (n.op_type,), (f"{n.name} (Conv)",), (100.0,), "name")
        for n in graph.nodes])
    flops = {op.node: op.flops for op in graph_cost(graph, "asic32").ops}
    measured = _measured_like("asic32", conv=2e11, strided_conv=5e10)
    priced = {op.profiled.node: op.compute_ms
              for op in compare(graph, profile, measured).ops}
    peak = measured.peak("float32")
    assert priced == pytest.approx({"unit": flops["unit"] / 2e11 * 1000,
                                    "strided": flops["strided"] / 5e10 * 1000,
                                    "depthwise": flops["depthwise"] / peak * 1000})
    paper = get_target("asic32")   # priced from papers: every op at its dtype's peak, as before
    on_paper = {op.profiled.node: op.compute_ms for op in compare(graph, profile, paper).ops}
    assert on_paper == pytest.approx({name: f / paper.peak("float32") * 1000
                                      for name, f in flops.items()})
    assert measured.rate("float16", "conv") == measured.peak("float16")  # measured in float32


def test_onnxruntimes_fused_convolution_runs_at_the_convolution_rate():
    """O2 written for onnxruntime turns Conv + Relu into com.microsoft FusedConv: it runs
    onnxruntime's convolution kernels, so it is priced at the measured convolution rate, not
    at the matmul peak (it was, and ResNet-50's O2 ranked its convolutions apart)."""
    lowered = lower_for_onnxruntime(sample("cnn_bn", "O2")).graph
    fused = [n for n in lowered.nodes if (n.op_type, n.domain) == ("FusedConv", "com.microsoft")]
    assert fused
    profile = LevelProfile("all", [1.0], [1.0], [
        ProfiledOp((n.id,), (n.name,), (n.op_type,), (f"{n.name} (FusedConv)",), (100.0,),
                   "name") for n in fused])
    measured = _measured_like("asic32", conv=2e11, strided_conv=5e10)
    flops = {op.node: op.flops for op in graph_cost(lowered, measured, BINDINGS).ops}
    for op in compare(lowered, profile, measured, BINDINGS).ops:
        assert op.flops > 0
        assert op.compute_ms == pytest.approx(flops[op.profiled.node] / 2e11 * 1000)


def _float16_matmul(tmp_path):
    """x (16x64, float16) @ a float16 weight (64x32), then Relu: onnxruntime's CPU has no
    float16 MatMul or Relu, so it casts to float32 and back around them."""
    weight = numpy_helper.from_array(np.ones((64, 32), np.float16), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
         helper.make_node("Relu", ["y"], ["z"], name="relu")], "half",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [16, 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT16, [16, 32])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "half.onnx")
    return load_model(str(tmp_path / "half.onnx"))


def test_the_casts_onnxruntime_inserts_are_priced_at_the_measured_cast_rate(tmp_path):
    graph = _float16_matmul(tmp_path)
    inputs = {"x": np.ones((16, 64), np.float16)}
    profiles = profile_graphs([graph], inputs, SHORT)[0]
    target = _measured_like("asic32", conv=2e11)
    target = target_from_dict({**to_json(target), "measured": {**target.measured,
                                                               "recast_bytes_per_s": 1e9}})
    # each cast moves its value once in float16 (2 bytes) and once in float32 (4 bytes)
    expected = {"all": {"mm": 16 * 64 * 6, "relu": 16 * 32 * 6},   # the weight cast once
                "disabled": {"mm": (16 * 64 + 64 * 32) * 6, "relu": 16 * 32 * 6}}
    for level, profile in profiles.items():
        ops = {op.profiled.node: op for op in compare(graph, profile, target).ops}
        assert {name: op.cast_bytes for name, op in ops.items()} == expected[level]
        for op in ops.values():
            assert sum("InsertedPrecisionFreeCast_" in k for k in op.profiled.kernels) >= 1
            assert op.cast_ms == pytest.approx(op.cast_bytes / 1e9 * 1000)
            assert op.predicted_ms == pytest.approx(op.roofline_ms + op.cast_ms
                                                    + op.overhead_ms)
    assert get_target("asic32").recast_bytes_per_s == get_target("asic32").bandwidth_bytes_per_s


def test_a_compared_group_is_written_flat_its_profiled_keys_first():
    fused = ProfiledOp((3, 4), ("mm", "add"), ("MatMul", "Add"), ("k (FusedMatMul)",),
                       (1000.0, 4000.0, 2000.0), "name", 64.0)
    data = to_json(ComparedOp(fused, compute_ms=0.5, traffic_ms=0.25, overhead_ms=0.5,
                              roofline_ms=0.5, flops=10, bytes=8))
    assert list(data) == ["node", "ids", "op_type", "measured_ms", "measured_min_ms",
                          "measured_max_ms", "measured_bytes", "kernels", "traced_by",
                          "fused_by_onnxruntime", "note", "predicted_ms", "ratio", "compute_ms",
                          "traffic_ms", "cast_ms", "overhead_ms", "roofline_ms", "flops",
                          "bytes", "cast_bytes", "dominant", "miss"]
    assert (data["node"], data["ids"], data["op_type"]) == ("mm + add", [3, 4], "MatMul+Add")
    assert (data["measured_ms"], data["measured_min_ms"], data["measured_max_ms"]) == (2, 1, 4)
    assert data["note"] == "onnxruntime ran these 2 nodes as 1 kernel(s) of its own fusion"
    assert (data["predicted_ms"], data["ratio"], data["dominant"]) == (1.0, 2.0, "compute")
    assert to_json(_op(1.0, compute_ms=1.0, traffic_ms=0.0, overhead_ms=0.0, roofline_ms=1.0,
                       flops=1, bytes=1))["note"] is None


def test_settings_and_levels_are_written_as_onnxruntime_names_them():
    settings = to_json(ProfileSettings(levels=("all", "disabled"), repeats=3, timeout=5))
    assert settings == {"levels": ["ORT_ENABLE_ALL", "ORT_DISABLE_ALL"], "warmup": 2,
                        "repeats": 3, "threads": "onnxruntime default"}
    assert to_json(ProfileSettings(threads=2))["threads"] == 2


def test_the_measured_target_is_written_to_the_data_folder_and_prices_a_model(machine,
                                                                              capsys):
    path = user_targets_dir() / f"{MACHINE_TARGET}.json"
    assert path.exists() and MACHINE_TARGET in measured_targets()
    assert not Path(path).is_relative_to(Path(__file__).resolve().parent.parent)
    data = json.loads(path.read_text())
    assert data["measured"]["when"] and "MatMul" in data["measured"]["how"]
    assert data["peak_ops_per_s"]["float32"] > 1e8 and data["bandwidth_bytes_per_s"] > 1e8
    rates = data["measured"]["ops_per_s_by_kind"]
    assert set(rates) == set(RATE_KINDS) and all(rate > 1e8 for rate in rates.values())
    assert "3x3 Conv" in data["measured"]["how"] and "stride 2" in data["measured"]["how"]
    assert data["measured"]["recast_bytes_per_s"] > 1e8 and "Cast of" in data["measured"]["how"]
    target = get_target(MACHINE_TARGET)
    assert target.measured is not None and target.overhead_seconds_per_op > 0
    cost = graph_cost(sample("cnn_bn"), MACHINE_TARGET, BINDINGS)
    conv = max((op for op in cost.ops if op.op_type == "Conv"), key=lambda op: op.flops)
    assert conv.est_seconds == pytest.approx(max(conv.flops / target.peak("float32"),
                                                 conv.bytes / target.bandwidth_bytes_per_s))
    listed = run_json(capsys, "targets")
    record = next(t for t in listed["targets"] if t["name"] == MACHINE_TARGET)
    assert record["measured"]["threads"] == os.cpu_count()


def test_profile_cli_joins_measured_and_predicted_per_op(machine, capsys):
    record = run_json(capsys, "profile", "bert_tiny_op13", "-p", "O2", "--bind",
                      "batch=1,seq=16", "--repeats", "2", "--warmup", "1")
    assert record["target"] == MACHINE_TARGET and record["measured_target"]
    assert record["total_ms"] > 0 and record["predicted_total_ms"] > 0
    assert set(record["levels"]) == {"ORT_ENABLE_ALL", "ORT_DISABLE_ALL"}
    graph = sample("bert_tiny_op13", "O2")
    names = {node.name for node in graph.nodes}
    for op in record["ops"]:
        assert op["predicted_ms"] > 0 and op["measured_ms"] >= 0
        assert set(op["node"].split(" + ")) <= names
        if op["ratio"] is not None and not 0.5 <= op["ratio"] <= 2:
            assert op["miss"] and op["dominant"] in op["miss"]
    assert record["spearman"] is None or -1 <= record["spearman"] <= 1
    assert record["passes"] == []


def test_per_pass_measures_the_input_and_every_snapshot_that_changed(capsys):
    record = run_json(capsys, "profile", "teach_gelu", "--per-pass", "--target", "asic32",
                      "--repeats", "2", "--warmup", "1")
    result = PassManager("O2").run(load_model(resolve_model("teach_gelu")))
    changed = [s.pass_name for s in result.snapshots if s.changed]
    assert [p["pass"] for p in record["passes"]] == ["(input model)"] + changed
    for entry in record["passes"]:
        assert set(entry["measured_ms"]) == {"ORT_ENABLE_ALL", "ORT_DISABLE_ALL"}
        assert all(ms > 0 for ms in entry["measured_ms"].values())
        assert entry["predicted_ms"] > 0 and entry["nodes"] > 0
    nodes = [entry["nodes"] for entry in record["passes"]]
    assert nodes[-1] < nodes[0]   # the GELU was recognized into fewer nodes


def test_the_onnxruntime_export_is_profiled_with_onnxruntime_operators(capsys):
    record = run_json(capsys, "profile", "bert_tiny_op13", "-p", "O2", "--runtime",
                      "onnxruntime", "--target", "asic32", "--bind", "batch=1,seq=16",
                      "--repeats", "2", "--warmup", "1")
    lowered = lower_for_onnxruntime(sample("bert_tiny_op13", "O2")).graph
    assert any(op["op_type"] == "Attention" and any("(Attention)" in k for k in op["kernels"])
               for op in record["levels"]["ORT_DISABLE_ALL"]["ops"])
    names = {node.name for node in lowered.nodes}
    for op in record["levels"]["ORT_DISABLE_ALL"]["ops"]:
        assert op["node"] in names and not op["fused_by_onnxruntime"]


def test_compare_counts_nodes_onnxruntime_did_not_run(bert_o2, machine):
    graph, levels = bert_o2
    comparison = compare(graph, levels["all"], machine, BINDINGS)
    profiled = {i for op in levels["all"].ops for i in op.ids}
    assert len(comparison.not_run) == len(graph.nodes) - len(profiled)
    assert comparison.predicted_total_ms >= sum(op.predicted_ms for op in comparison.ops) - 1e-9


def test_report_measured_shows_each_pass_measured_beside_predicted(machine, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", "teach_gelu", "--measured", "--repeats", "2", "-o", str(out)]) == 0
    page = out.read_text()
    section = page[page.index('id="measured"'):]
    section = section[:section.index("</section>")]
    result = PassManager("O2").run(load_model(resolve_model("teach_gelu")))
    for snapshot in result.snapshots:
        if snapshot.changed:
            assert f"<td>{snapshot.pass_name}</td>" in section
    assert "measured (best), ORT_ENABLE_ALL" in section and "→" in section
    assert "The seed claims, on this machine" in section
    assert machine.display_name in section


def test_roofline_measured_adds_the_profile_beside_the_prediction(capsys):
    record = run_json(capsys, "roofline", "teach_gelu", "--measured", "--target", "asic32",
                      "--repeats", "2")
    measured = record["measured"]
    assert measured["target"] == "asic32" and measured["level"] == "ORT_ENABLE_ALL"
    roofline_nodes = {op["node"] for op in record["ops"]}
    for op in measured["ops"]:
        assert set(op["node"].split(" + ")) <= roofline_nodes
        assert op["predicted_ms"] >= op["roofline_ms"] >= 0
    assert measured["best_ms"] <= measured["total_ms"]
