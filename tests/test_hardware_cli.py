"""The hardware commands, run for real: `graphlab targets`, `roofline`, `schedule`, `memory`."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler_core.compilation import compile_model, sized
from compiler_core.hardware.cost import graph_cost
from compiler_core.hardware.memory import plan_memory
from compiler_core.hardware.targets import list_targets, measured_targets
from compiler_core.records import to_json
from graphlab.cli import main
import bad_models
from hardware_graphs import load_sample

ROOFLINE_TARGET_KEYS = {"name", "peak_ops_per_s", "bandwidth_bytes_per_s", "ridge_point"}
ROOFLINE_OP_KEYS = {"node", "op_type", "flops", "bytes", "intensity", "bound",
                    "attainable_ops_per_s", "est_seconds"}
SCHEDULE_KEYS = {"cycles", "folds", "cycles_per_fold", "mapping_efficiency", "utilization",
                 "stall_cycles", "dataflow", "array"}
MEMORY_KEYS = {"peak_bytes", "naive_bytes", "lower_bound_bytes", "buffers"}
BUFFER_KEYS = {"tensor", "offset", "size", "first", "last"}


def run_json(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def run_text(capsys, *argv) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def run_failing(capsys, *argv) -> str:
    """The one-line error a user sees (exit status 2)."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("graphlab: error: ") and err.count("\n") == 1
    return err


def scalesim_cycles(M, N, K, R, C, dataflow):
    """SCALE-Sim's closed forms (see compiler_core/hardware/systolic/timing.py)."""
    if dataflow == "os":
        return math.ceil(M / R) * math.ceil(N / C) * (R + C + K - 2) - 1
    if dataflow == "ws":
        return math.ceil(K / R) * math.ceil(N / C) * (2 * R + C + M - 2) - 1
    return math.ceil(K / R) * math.ceil(M / C) * (2 * R + C + N - 2) - 1


# ---------------------------------------------------------------- targets
def test_targets_lists_every_target_with_its_derived_figures(capsys):
    data = run_json(capsys, "targets")
    by_name = {t["name"]: t for t in data["targets"]}
    assert sorted(by_name) == sorted(list_targets() + measured_targets())
    asic = by_name["asic32"]
    assert asic["ridge_point"]["float32"] == pytest.approx(13.33, abs=0.005)
    assert asic["ridge_point"]["int8"] == pytest.approx(40 / 3)
    assert asic["peak_ops_per_s"]["int8"] == 32e12
    assert asic["bandwidth_bytes_per_s"] == 2.4e12
    assert asic["array"] == "128x128" and asic["sram_bytes"] == 16 * 2 ** 20
    for target in data["targets"]:
        assert target["display_name"] and target["sources"]
    text = run_text(capsys, "targets")
    assert "13.33 ops/byte" in text and "128x128" in text and "2.4 TB/s" in text


# ---------------------------------------------------------------- roofline
def test_roofline_record_has_the_documented_keys_and_hand_checked_values(capsys):
    data = run_json(capsys, "roofline", "teach_matmul_bias")
    assert set(data["target"]) == ROOFLINE_TARGET_KEYS
    assert data["target"]["ridge_point"] == pytest.approx(13.33, abs=0.005)
    for op in data["ops"]:
        assert set(op) >= ROOFLINE_OP_KEYS
    first = data["ops"][0]
    # x [2,8] . W [8,16]: 2 * 32 * 8 = 512 FLOPs; (16 + 128 + 32) * 4 = 704 bytes
    assert (first["node"], first["flops"], first["bytes"]) == ("matmul_good", 512, 704)
    assert first["bound"] == "memory"
    assert first["attainable_ops_per_s"] == pytest.approx(2.4e12 * 512 / 704)
    assert first["est_seconds"] == pytest.approx(704 / 2.4e12)
    assert data["total_est_seconds"] == pytest.approx(sum(op["est_seconds"]
                                                          for op in data["ops"]))


def test_roofline_on_another_target(capsys):
    data = run_json(capsys, "roofline", "teach_matmul_bias", "--target", "teach16")
    assert data["target"]["name"] == "teach16" and data["target"]["ridge_point"] == 32


def test_roofline_with_a_pipeline_reports_the_speedup(capsys):
    data = run_json(capsys, "roofline", "teach_gelu", "--pipeline", "O2")
    assert data["pipeline"] == "O2"
    assert data["speedup"] == pytest.approx(data["initial_total_est_seconds"]
                                            / data["total_est_seconds"])
    assert data["speedup"] > 1
    assert data["initial"]["total_flops"] == data["total_flops"]
    text = run_text(capsys, "roofline", "teach_gelu", "--pipeline", "O2")
    assert "speed-up" in text and "ridge 13.33 ops/byte" in text


def test_roofline_with_no_flags_prices_bert_at_representative_sizes(capsys):
    text = run_text(capsys, "roofline", "bert_tiny_op13", "--top", "0")
    lines = text.splitlines()
    assert lines[0].startswith("sizes: batch=1,seq=128 (representative")
    assert "--bind" in lines[0]
    data = run_json(capsys, "roofline", "bert_tiny_op13")
    assert data["sizes"]["bindings"] == {"batch": 1, "seq": 128}
    assert data["ops_with_assumed_dims"] == 0
    ridge = data["target"]["ridge_point"]
    ffn = [op for op in data["ops"] if op["node"].endswith("/intermediate/dense/MatMul")]
    assert len(ffn) == 2 and all(op["intensity"] > ridge for op in ffn)
    priced = [op for op in data["ops"] if op["flops"] > 0 and op["bound"] != "none"]
    right = sum(1 for op in priced if op["intensity"] >= ridge)
    assert f"ridge: {len(priced) - right} ops left of it (memory-bound), {right} right of" in text
    assert "priced with a dim nobody could size" not in text


def test_an_op_graphlab_cannot_price_is_not_said_to_do_no_arithmetic(capsys, tmp_path):
    """A custom op may well compute, and so may the Relu after it, whose input it leaves
    unsized: the ridge line counts them apart (they were counted among the ops that do no
    arithmetic)."""
    path = tmp_path / "custom.onnx"
    path.write_bytes(bad_models.custom_op().SerializeToString())
    text = run_text(capsys, "roofline", str(path))
    assert "; 0 ops do no arithmetic, 2 not priced" in text
    assert "not priced (counted as 0): Relu, com.example.FancyOp" in text


def test_bind_overrides_the_representative_sizes(capsys):
    data = run_json(capsys, "roofline", "bert_tiny_op13", "--bind", "batch=2,seq=32")
    assert data["sizes"]["all_given"] and data["sizes"]["bindings"] == {"batch": 2, "seq": 32}
    ffn = next(op for op in data["ops"] if op["node"].endswith("0/intermediate/dense/MatMul"))
    assert ffn["flops"] == 2 * (2 * 32) * 64 * 256
    text = run_text(capsys, "roofline", "bert_tiny_op13", "--bind", "batch=2,seq=32")
    assert text.splitlines()[0] == "sizes: batch=2,seq=32 (as given)"


def test_an_op_priced_with_an_unknown_dim_is_starred(capsys, tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top"),
                               helper.make_node("Relu", ["v"], ["y"], name="relu")],
                              "topk", [x, k], [y])
    path = tmp_path / "topk.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    text = run_text(capsys, "roofline", str(path))
    assert "Relu*" in text and "ops are priced with a dim nobody could size" in text
    data = run_json(capsys, "roofline", str(path))
    relu = next(op for op in data["ops"] if op["node"] == "relu")
    assert relu["assumed_dims"] and data["ops_with_assumed_dims"] >= 1


def test_roofline_per_pass_tells_the_traffic_story(capsys):
    bindings = {"batch": 1, "seq": 128}
    data = run_json(capsys, "roofline", "bert_tiny_op13", "--per-pass")
    assert data["pipeline"] == "O2" and data["sizes"]["bindings"] == bindings
    steps = data["passes"]
    result = compile_model(load_sample("bert_tiny_op13"), "O2").result   # binds nothing
    assert steps[0]["pass"] == "(input model)" and len(steps) == 1 + len(result.snapshots)
    for step, snapshot in zip(steps[1:], result.snapshots):
        assert step["pass"] == snapshot.pass_name and step["nodes"] == len(snapshot.graph)
        assert step["changed"] == snapshot.changed
    final = sized(result.final, bindings)   # priced at the decided sizes
    last = graph_cost(final, "asic32", bindings)
    assert steps[-1]["bytes"] == last.total_bytes and steps[-1]["flops"] == last.total_flops
    assert steps[-1]["arena_peak_bytes"] == plan_memory(final, bindings).peak_bytes
    assert steps[-1]["bytes"] < 0.5 * steps[0]["bytes"]       # fusion cut the traffic ...
    assert steps[-1]["flops"] == pytest.approx(steps[0]["flops"], rel=0.01)   # ... not the work
    attention = data["fused_by_op"]["graphlab.Attention"]
    assert attention["count"] == 2 and attention["unfused_bytes"] > attention["bytes"]
    assert attention["saving"] == pytest.approx(1 - attention["bytes"] / attention["unfused_bytes"])
    text = run_text(capsys, "roofline", "bert_tiny_op13", "--per-pass")
    assert "fuse_attention" in text and "graphlab.Attention x2" in text
    assert f"({attention['saving']:.0%} less)" in text


def test_memory_and_schedule_print_the_sizes_first(capsys):
    assert run_text(capsys, "memory", "gpt2_tiny").startswith("sizes: batch=1,seq=128")
    text = run_text(capsys, "schedule", "bert_tiny_op13", "--node",
                    "/bert/encoder/layer.0/intermediate/dense/MatMul")
    assert text.startswith("sizes: batch=1,seq=128") and "(128 x 64) . (64 x 256)" in text


# ---------------------------------------------------------------- schedule
@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize("M, N, K, R, C", [(5, 6, 7, 4, 4), (64, 64, 64, 32, 32),
                                           (100, 30, 70, 16, 8)])
def test_gemm_schedule_matches_the_closed_form(capsys, M, N, K, R, C, dataflow):
    data = run_json(capsys, "schedule", "--gemm", f"{M},{N},{K}", "--array", f"{R}x{C}",
                    "--dataflow", dataflow, "--timing", "scalesim")
    assert set(data) >= SCHEDULE_KEYS
    assert data["cycles"] == scalesim_cycles(M, N, K, R, C, dataflow)
    assert (data["dataflow"], data["array"], data["stall_cycles"]) == (dataflow, f"{R}x{C}", 0)


def test_schedule_takes_the_array_and_clock_from_the_target(capsys):
    # teach16: 16x16 at 1 GHz; (64 x 64) . (64 x 64) os: 16 folds of 16 + 16 + 64 - 2 = 94
    data = run_json(capsys, "schedule", "--gemm", "64,64,64", "--target", "teach16",
                    "--timing", "scalesim")
    assert (data["array"], data["target"]) == ("16x16", "teach16")
    assert data["cycles"] == scalesim_cycles(64, 64, 64, 16, 16, "os") == 16 * 94 - 1
    assert data["seconds"] == pytest.approx((data["cycles"] + 1) / 1e9)


def test_conv_schedule_is_its_im2col_gemm(capsys):
    # 7x7x2 input, five 3x3 filters, stride 2: M = 9, K = 18, N = 5; 6 folds of 24: 143
    data = run_json(capsys, "schedule", "--conv", "7,7,3,3,2,5,2", "--array", "4x4",
                    "--timing", "scalesim")
    assert data["cycles"] == 143 and data["gemm"] == {"M": 9, "N": 5, "K": 18}


def test_node_schedule_of_a_sample_conv(capsys):
    # cnn_bn's first conv, batch 1: 3x32x32 -> 16x32x32, 3x3, pad 1: M = 1024, K = 27, N = 16;
    # os on 128x128: 8 folds of 128 + 128 + 27 - 2 = 281 cycles: 2247
    data = run_json(capsys, "schedule", "cnn_bn", "--node", "/block1/block1.0/Conv",
                    "--bind", "batch=1", "--timing", "scalesim")
    assert data["gemm"] == {"M": 1024, "N": 16, "K": 27}
    assert data["conv"]["H"] == 34 and data["conv"]["OH"] == 32
    assert data["cycles"] == scalesim_cycles(1024, 16, 27, 128, 128, "os") == 2247
    assert (data["node"], data["op_type"]) == ("/block1/block1.0/Conv", "Conv")


def save_depthwise_model(path) -> str:
    """x [1,4,8,8] -> depthwise 3x3 conv (group 4, pad 1) -> Relu."""
    weight = numpy_helper.from_array(np.ones((4, 1, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="dw", group=4,
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "depthwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    target = path / "depthwise.onnx"
    target.write_bytes(model.SerializeToString())
    return str(target)


def test_depthwise_conv_runs_one_gemm_per_group_back_to_back(capsys, tmp_path):
    # each of the 4 groups: M = 64 pixels, N = 1 filter, K = 9; os on 4x4:
    # 16 folds of 4 + 4 + 9 - 2 = 15 -> 239 cycles; four of them: 4 * 240 - 1 = 959
    model = save_depthwise_model(tmp_path)
    data = run_json(capsys, "schedule", model, "--node", "dw", "--array", "4x4",
                    "--timing", "scalesim")
    assert data["cycles"] == 4 * (scalesim_cycles(64, 1, 9, 4, 4, "os") + 1) - 1 == 959
    assert data["folds"] == 64 and data["instances"] == 4
    assert data["mapping_efficiency"] == pytest.approx(1 / 4)  # one of 4 columns used
    assert data["utilization"] == pytest.approx(4 * 64 * 9 / (960 * 16))
    assert data["cycles_per_fold"] == [[15, 64]]
    assert [(p["M"], p["N"], p["K"], p["instances"]) for p in data["parts"]] == [(64, 1, 9, 4)]


def test_schedule_of_a_node_without_a_gemm_names_it_and_lists_nodes_that_have_one(capsys,
                                                                                  tmp_path):
    err = run_failing(capsys, "schedule", save_depthwise_model(tmp_path), "--node", "relu")
    assert "'relu' (Relu) has no matrix multiply or convolution" in err
    assert "nodes with a GEMM: dw" in err
    err = run_failing(capsys, "schedule", "cnn_bn", "--node", "/block1/block1.1/Relu")
    assert "/block1/block1.0/Conv" in err


@pytest.mark.parametrize("argv, message", [
    (["schedule", "--gemm", "4,4"], "cannot read '4,4' as M,N,K"),
    (["schedule", "--gemm", "4,4,4", "--array", "4by4"], "cannot read array '4by4'"),
    (["schedule", "--gemm", "4,4,0"], "K must be positive"),
    (["schedule", "cnn_bn", "--gemm", "4,4,4"], "MODEL is only read with --node"),
    (["schedule", "cnn_bn", "--node", "nope"], "no node named 'nope'"),
    (["roofline", "cnn_bn", "--bind", "batch"], "cannot read binding 'batch'"),
    (["roofline", "cnn_bn", "--target", "tpu_v9"], "unknown target 'tpu_v9'"),
    (["memory", "cnn_bn", "--align", "0"], "alignment must be at least 1"),
    (["memory", "cnn_bn", "--pipeline", "O9"], "unknown pass or preset 'O9'"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    assert message in run_failing(capsys, *argv)


def test_schedule_text_output_reads(capsys):
    text = run_text(capsys, "schedule", "--gemm", "64,64,64", "--array", "32x32")
    assert "GEMM (64 x 64) . (64 x 64) on a 32x32 array, output-stationary" in text
    assert "folds         4" in text and "utilization" in text


# ---------------------------------------------------------------- memory
def assert_no_live_overlap(buffers):
    """No two tensors live at a common step share a byte, except an in-place hand-over."""
    for a, b in itertools.combinations(buffers, 2):
        live_together = a["first"] <= b["last"] and b["first"] <= a["last"]
        share_bytes = (a["offset"] < b["offset"] + b["size"]
                       and b["offset"] < a["offset"] + a["size"])
        if live_together and share_bytes:
            assert b["reuses"] == a["tensor"] or a["reuses"] == b["tensor"], (a, b)


@pytest.mark.parametrize("name, argv", [
    ("cnn_bn", []), ("gpt2_tiny", ["--bind", "batch=1,seq=16"]),
    ("bert_tiny_op13", ["--pipeline", "O2", "--bind", "batch=1,seq=16"]),
])
def test_memory_record_and_invariants(capsys, name, argv):
    data = run_json(capsys, "memory", name, *argv)
    assert set(data) >= MEMORY_KEYS
    assert data["buffers"] and all(set(b) >= BUFFER_KEYS for b in data["buffers"])
    assert data["lower_bound_bytes"] <= data["peak_bytes"] <= 1.05 * data["lower_bound_bytes"]
    assert data["peak_bytes"] < data["naive_bytes"]
    assert max(b["offset"] + b["size"] for b in data["buffers"]) == data["peak_bytes"]
    assert_no_live_overlap(data["buffers"])


def test_memory_json_is_the_library_record(capsys):
    data = run_json(capsys, "memory", "gpt2_tiny", "--bind", "batch=1,seq=16")
    assert data.pop("sizes")["bindings"] == {"batch": 1, "seq": 16}
    assert data == json.loads(json.dumps(
        to_json(plan_memory(sized(load_sample("gpt2_tiny"), {"batch": 1, "seq": 16}),
                            {"batch": 1, "seq": 16}))))


def test_memory_text_output_reads(capsys):
    text = run_text(capsys, "memory", "teach_conv_bn")
    assert "arena peak   16 KiB" in text and "naive        40 KiB" in text
    assert "lower bound  16 KiB" in text and "outside the arena" in text


def test_the_installed_entry_point_reports_errors_on_stderr():
    result = subprocess.run([sys.executable, "-m", "graphlab", "schedule", "--gemm", "1,x,3"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("graphlab: error: cannot read '1,x,3' as M,N,K")


def test_schedule_memory_flags_reach_the_report(capsys):
    report = run_json(capsys, "schedule", "--gemm", "100,72,50", "--array", "16x16",
                      "--timing", "scalesim", "--sram", "ifmap=1,filter=1,ofmap=1",
                      "--bandwidth", "ifmap=1,filter=1,ofmap=1")
    assert report["memory"]["sram_kb"] == {"ifmap": 1, "filter": 1, "ofmap": 1}
    assert report["stall_cycles"] > report["cycles"] // 2      # memory-bound: mostly waiting
    wider = run_json(capsys, "schedule", "--gemm", "100,72,50", "--array", "16x16",
                     "--timing", "scalesim", "--sram", "ifmap=64,filter=64,ofmap=64",
                     "--bandwidth", "ifmap=16,filter=16,ofmap=16")
    assert wider["stall_cycles"] == 0 and wider["cycles"] < report["cycles"]
    assert wider["dram_reads"]["ifmap"] < report["dram_reads"]["ifmap"]


def test_schedule_memory_flag_typos_are_clear(capsys):
    assert main(["schedule", "--gemm", "4,4,4", "--sram", "ifmap=one"]) == 2
    assert "cannot read --sram 'ifmap=one'" in capsys.readouterr().err


def test_schedule_all_sums_every_gemm_of_a_model(capsys):
    record = run_json(capsys, "schedule", "bert_tiny_op13", "--all", "-p", "O2")
    nodes = record["nodes"]
    assert len(nodes) > 1
    assert record["cycles"] + 1 == sum(n["cycles"] + 1 for n in nodes)
    assert record["dram_writes"]["ofmap"] == sum(n["dram_writes"]["ofmap"] for n in nodes)
    # the optimized graph moves less between DRAM and the array than the input graph
    def moved(figures):
        return sum(figures["dram_reads"].values()) + sum(figures["dram_writes"].values())
    assert moved(record) < moved(record["before_pipeline"])
