"""The array's memory as the step-through, the CLI and the report read it: each SRAM half at a
step, the DRAM traffic over the clock, the dataflows compared, the memory swept and a model's
GEMMs summed pass by pass — each checked against the schedule's own records."""

from __future__ import annotations

import json
import re
from itertools import pairwise

import pytest

from compiler_core.hardware.node_schedule import schedule_model
from compiler_core.hardware.systolic import DATAFLOWS, schedule_gemm
from compiler_core.hardware.systolic.memory_config import OPERANDS, MemoryConfig
from compiler_core.hardware.systolic.memory_steps import dram_traffic, memory_step, \
    overlap_moved_by
from compiler_core.compilation import compile_model, sized
from compiler_core.compilation.pass_schedules import pass_schedules
from compiler_core.hardware.systolic_choices import compare_dataflows, sweep_memory, sweep_timing
from compiler_core.ir import load_model
from graphlab.app.systolic_memory_view import sram_figure
from graphlab.app.systolic_view import ArrayProblem, array_problem, typed_memory, \
    typed_problem
from graphlab.app.view_state import ViewState, from_query, to_query
from graphlab.cli import main
from graphlab.samples import resolve_model, size_hints

STARVED = MemoryConfig((1, 1, 1), (1, 1, 1))          # 1 kB, 1 word per cycle: it stalls
ROOMY = MemoryConfig((64, 64, 64), (64, 64, 64))      # everything double-buffered


def schedule(timing="overlap", dataflow="os", memory=STARVED, shape=(100, 72, 50)):
    return schedule_gemm(*shape, rows=16, cols=16, dataflow=dataflow, timing=timing,
                         memory=memory, dtype="int8")


def totals(report: dict, element_bytes: float) -> dict:
    """Each operand's DRAM traffic in the chart's unit: bytes (overlap) or words (SCALE-Sim,
    an element a word)."""
    moved = {**report["dram_reads"], **report["dram_writes"]}
    size = element_bytes if report["timing"] == "overlap" else 1
    return {o: moved[o] * size for o in OPERANDS}


@pytest.mark.parametrize("timing", ["overlap", "scalesim"])
@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("memory", [STARVED, ROOMY], ids=["starved", "roomy"])
def test_the_traffic_chart_ends_at_the_schedules_dram_totals(timing, dataflow, memory):
    sched = schedule(timing, dataflow, memory)
    report = sched.report()
    traffic = dram_traffic(sched)
    assert traffic["complete"]
    assert {o: traffic["moved"][o][-1] for o in OPERANDS} == \
        totals(report, sched.timeline.traffic.element_bytes)
    for operand in OPERANDS:
        points = traffic["moved"][operand]
        assert all(a <= b for a, b in pairwise(points)), operand
    waited = sum(stop - start for start, stop in traffic["waiting"])
    if timing == "overlap":   # the waits drawn are the schedule's stalls, fold by fold
        assert waited == report["stall_cycles"]
    assert (waited > 0) == (report["stall_cycles"] > 0)


def test_refills_past_the_reports_kept_arrivals_still_count_to_the_totals():
    sched = schedule("scalesim", shape=(256, 32, 144))     # 1,497 ifmap refills
    report = sched.report()
    memory = report["memory"]
    kept = memory["refill_arrivals"]["ifmap"]
    assert memory["refills"]["ifmap"] > len(kept)
    traffic = dram_traffic(sched)
    assert {o: traffic["moved"][o][-1] for o in OPERANDS} == totals(report, 1)
    assert traffic["clock"]["ifmap"][-1] == report["dram_cycles"]["ifmap"][1]
    for fold in (1, 2):    # within the kept arrivals: the closed form says what they say
        step = memory_step(sched, fold, 0)
        assert step["clock"] < kept[-1]
        assert step["refills"]["ifmap"]["arrived"] == sum(1 for c in kept if c <= step["clock"])
    last = memory_step(sched, sched.folds - 1, sched.timeline.fold_length(sched.folds - 1) - 1)
    assert last["exact"] and last["stalled_before"] <= sched.stall_cycles


def test_a_starved_fold_waits_with_its_tiles_arriving_then_computes_with_them_there():
    sched = schedule()
    timeline = sched.timeline
    fold = 3
    stall = timeline.stall(fold)
    assert stall > 0 and not timeline.traffic.double_buffered
    first = memory_step(sched, fold, 0)
    assert first["waiting"] and first["stall_left"] == stall
    assert first["stalled_before"] == timeline.stalls_before(fold)
    assert any(first["sram"][o]["in_use"]["ready"] < first["sram"][o]["in_use"]["bytes"]
               for o in ("ifmap", "filter"))       # the tile the fold needs is still coming
    after = memory_step(sched, fold, stall)
    assert not after["waiting"] and after["stalled_before"] == timeline.stalls_before(fold + 1)
    for operand in ("ifmap", "filter"):
        half = after["sram"][operand]["in_use"]
        assert half["ready"] == half["bytes"]           # all there when the wait is over
    assert after["clock"] == first["clock"] + stall
    assert all(after["dram"][o] >= first["dram"][o] for o in OPERANDS)


def test_a_double_buffered_layer_fills_the_other_half_while_computing():
    sched = schedule(memory=ROOMY, shape=(256, 256, 64))
    assert sched.timeline.traffic.double_buffered and sched.folds > 2
    fold = 1
    start = memory_step(sched, fold, 0)
    end = memory_step(sched, fold, sched.timeline.fold_length(fold) - 1)
    arriving = [o for o in ("ifmap", "filter") if start["sram"][o]["other"]["bytes"]]
    assert arriving
    for operand in arriving:
        assert start["sram"][operand]["other"]["done"] < end["sram"][operand]["other"]["done"] \
            == end["sram"][operand]["other"]["bytes"]
    last = sched.folds - 1
    final = sched.cycles + sched.timeline.traffic.final_store_cycles
    assert {o: overlap_moved_by(sched, o, final) for o in ("ifmap", "filter")} == \
        {o: totals(sched.report(), 1)[o] for o in ("ifmap", "filter")}
    assert memory_step(sched, last, 0)["sram"]["ifmap"]["other"]["bytes"] == 0


def test_a_scalesim_step_reads_the_replays_waits_and_refills():
    sched = schedule("scalesim")
    memory = sched.report()["memory"]
    row, cycle, stall, cause = memory["stall_rows"][5]
    fold, local = divmod(row, sched.timeline.fold_alone)
    record = memory_step(sched, fold, local)
    assert record["waiting"] and record["stall"] == stall and record["cause"] == cause
    assert record["clock"] == cycle == row + record["stalled_before"]
    arrived = record["refills"]["ifmap"]["arrived"]
    assert arrived == sum(1 for c in memory["refill_arrivals"]["ifmap"] if c <= cycle)
    assert record["refills"]["ifmap"]["total"] == memory["refills"]["ifmap"]


def test_dataflows_compare_on_the_schedules_own_figures():
    comparison = compare_dataflows(lambda d: schedule("scalesim", d).report())
    for dataflow in DATAFLOWS:
        report = schedule("scalesim", dataflow).report()
        row = comparison["dataflows"][dataflow]
        assert (row["cycles"], row["stall_cycles"], row["energy_joules"]) == \
            (report["cycles"], report["stall_cycles"], report["energy"]["total_joules"])
        assert row["dram"] == sum(report["dram_reads"].values()) + report["dram_writes"]["ofmap"]
        assert row["memory_bound"]
    rows = comparison["dataflows"]
    for figure, best in comparison["best"].items():
        assert rows[best][figure] == min(r[figure] for r in rows.values())


def test_the_sweep_shows_a_layer_leaving_the_memory_bound_as_bandwidth_grows():
    sweep = sweep_memory(lambda d, m: schedule("overlap", d, m), STARVED)
    for dataflow in DATAFLOWS:
        stalls = [s for _, s in sweep["by_bandwidth"][dataflow]]
        assert stalls == sorted(stalls, reverse=True) and stalls[0] > stalls[-1]
        assert stalls[0] * 2 >= sweep["by_bandwidth"][dataflow][0][0]   # starved: bound
        size = sweep["sram_kb"].index(8)
        wider = schedule("overlap", dataflow, MemoryConfig((8, 8, 8), (1, 1, 1)))
        assert sweep["by_sram"][dataflow][size] == [wider.cycles, wider.stall_cycles]
    assert sweep_timing(schedule("scalesim", shape=(32, 32, 32))) == "scalesim"
    assert sweep_timing(schedule("scalesim", shape=(4096, 512, 512))) == "overlap"


@pytest.fixture(scope="module")
def bert():
    compiled = compile_model(load_model(resolve_model("bert_tiny_op13")), "O2",
                             size_hints=size_hints("bert_tiny_op13"))   # as the app does
    return compiled.result, compiled.bindings


def test_merging_sibling_matmuls_reads_their_shared_input_once_on_the_array(bert):
    result, bindings = bert
    rows = pass_schedules(result, bindings)     # asic32: 128 x 128, N = 3 x 64 fits
    assert rows[0]["index"] == -1 and len(rows) == 1 + len(result.snapshots)
    merged = next(r for r in rows if r["pass"] == "fuse_sibling_matmuls")
    before = rows[rows.index(merged) - 1]
    assert merged["gemms"] < before["gemms"]
    assert merged["dram_reads"]["ifmap"] < before["dram_reads"]["ifmap"]
    final = schedule_model(sized(result.final, bindings), bindings=bindings)
    assert (rows[-1]["cycles"], rows[-1]["stall_cycles"], rows[-1]["dram_writes"]) == \
        (final["cycles"], final["stall_cycles"], final["dram_writes"])


def run_json(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_schedule_of_a_node_carries_the_dataflows_and_says_them(capsys):
    flags = ["--array", "16x16", "--sram", "ifmap=1,filter=1,ofmap=1",
             "--bandwidth", "ifmap=1,filter=1,ofmap=1"]
    node = "/block2/block2.0/Conv"
    record = run_json(capsys, "schedule", "cnn_bn", "--node", node, *flags)
    for dataflow in DATAFLOWS:
        alone = run_json(capsys, "schedule", "cnn_bn", "--node", node, *flags,
                         "--dataflow", dataflow)
        row = record["dataflows"]["dataflows"][dataflow]
        assert (row["cycles"], row["stall_cycles"]) == (alone["cycles"], alone["stall_cycles"])
    assert record["stall_cycles"] == record["dataflows"]["dataflows"]["os"]["stall_cycles"] > 0
    assert main(["schedule", "cnn_bn", "--node", node, *flags]) == 0
    text = capsys.readouterr().out
    assert "ifmap 1 kB at 1 words/cycle" in text and "memory-bound on the array" in text
    os_line = next(line for line in text.splitlines() if line.strip().startswith("os "))
    assert f"{record['cycles']:,}" in os_line and "memory-bound" in os_line


def test_schedule_all_per_pass_follows_the_pipeline(capsys):
    record = run_json(capsys, "schedule", "bert_tiny_op13", "--all", "-p", "O2", "--per-pass")
    passes = record["passes"]
    assert passes[-1]["cycles"] == record["cycles"]
    assert passes[0]["cycles"] == record["before_pipeline"]["cycles"]
    assert main(["schedule", "bert_tiny_op13", "--all", "--per-pass"]) == 2
    assert "--per-pass needs a --pipeline" in capsys.readouterr().err


def test_the_report_tells_the_busiest_gemm_on_the_array(tmp_path, capsys):
    out = tmp_path / "cnn.html"
    assert main(["report", "cnn_bn", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    section = page[page.index('<section id="systolic"'):]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section[:section.index("</section>")]))
    name = re.search(r"The busiest GEMM: (\S+)", text).group(1)
    record = run_json(capsys, "schedule", "cnn_bn", "-p", "O2", "--node", name)
    assert f"cycles {record['cycles']:,} waiting for memory {record['stall_cycles']:,}" in text
    reads = record["dram_reads"]
    assert f"DRAM reads (ifmap, filter) {reads['ifmap']:,}, {reads['filter']:,}" in text
    for dataflow, row in record["dataflows"]["dataflows"].items():
        assert re.search(rf"{dataflow.upper()} \(\S+\) {row['cycles']:,}", text), dataflow


def test_the_panels_memory_is_the_targets_with_what_was_typed():
    memory = typed_memory("ifmap=2", " ", "teach16")
    problem = array_problem(typed_problem("64,64,64"), 8, 8, "os", "overlap", "teach16", None,
                            memory.sram_kb, memory.bandwidth)
    assert problem.memory.sram("ifmap") == 2 and problem.schedule().memory == memory
    assert ArrayProblem.from_store(json.loads(json.dumps(problem.to_store()))) == problem
    state = ViewState(model="cnn_bn").with_changes(sram="ifmap=2", bandwidth="ofmap=3")
    back = from_query(to_query(state, ViewState(model="cnn_bn")), ViewState(model="cnn_bn"))
    assert (back.sram, back.bandwidth) == ("ifmap=2", "ofmap=3")


def test_the_sram_chart_clips_a_tile_bigger_than_its_half_and_says_so():
    record = memory_step(schedule(), 3, 0)
    figure = sram_figure(record)
    whole, _, half = figure["data"]
    sram = record["sram"]["filter"]
    index = whole["y"].index("filter · this tile")
    share = 100 * sram["in_use"]["bytes"] / sram["half_bytes"]
    assert share > 100 and whole["x"][index] == 100
    assert f"{share / 100:.3g}× the half" in half["text"][index]
    assert "the array waits" in figure["layout"]["title"]["text"]


def test_every_pass_row_is_its_own_graphs_schedule_though_shared_where_gemms_agree():
    compiled = compile_model(load_model(resolve_model("cnn_bn")), "O2",
                             size_hints=size_hints("cnn_bn"))
    result, bindings = compiled.result, compiled.bindings
    rows = pass_schedules(result, bindings, rows=16, cols=16, memory=STARVED)
    graphs = [result.initial] + [s.graph for s in result.snapshots]
    for row, shown in zip(rows, graphs, strict=True):
        own = schedule_model(sized(shown, bindings), bindings=bindings, rows=16, cols=16,
                             memory=STARVED)
        assert (row["cycles"], row["stall_cycles"], row["dram_reads"], row["energy_joules"]) \
            == (own["cycles"], own["stall_cycles"], own["dram_reads"],
                own["energy"]["total_joules"]), row["pass"]
