"""The chart panels' data: roofline, systolic array, memory plan, intensity overlay, exports,
and the view fields they add — figure builders checked against the compiler_core records."""

from __future__ import annotations

import json
import math

import onnx
import plotly.graph_objects as go
import pytest

from compiler_core.errors import GraphLabError
from compiler_core.hardware import get_target, graph_cost, plan_memory
from compiler_core.hardware.gemm_shapes import GemmProblem, has_gemm
from compiler_core.hardware.systolic import ConvShape, schedule_gemm
from compiler_core.ir import load_model, to_bytes
from compiler_core.runtime_check import RuntimeOutcome
from compiler_core.runtime_verify import LevelCheck
from graphlab.app import ids
from graphlab.app.config import AppConfig
from graphlab.app.graph_analyses import band_classes, cost_of
from graphlab.app.intensity_bands import BANDS, NO_ARITHMETIC, node_bands
from graphlab.app.memory_view import PlanSummary, memory_figure, summary_rows
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.panels.chart_panel import picked_node
from graphlab.app.panels.exports import image_name, model_file
from graphlab.app.panels.navigation import _apply
from graphlab.app.panels.systolic import _note, chosen_gemm, chosen_problem, graph_gemms, \
    parse_choice
from graphlab.app.roofline_view import OpPoint, RooflinePoints, left_out_caption, op_points, \
    pass_change, roofline_figure
from graphlab.app.services import Services
from graphlab.app.systolic_view import ArrayProblem, advance, array_problem, array_shape, \
    heatmap_figure, operands_figure, phase_marks, retreat, timeline_figure, totals_rows, \
    typed_problem
from graphlab.app.panels.registry import tab_names
from graphlab.app.view_state import ViewState, from_query, to_query, with_patch

TARGET = get_target("asic32")


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))


@pytest.fixture(scope="module")
def cnn(services):
    return services.workspace(ViewState(model="cnn_bn"), None)


def step_named(ws, name: str) -> int:
    return next(s.index for s in ws.result.snapshots if s.pass_name == name and s.changed)


def point_traces(figure):
    return [t for t in figure["data"] if t.get("name", "").endswith(("-bound op",
                                                                     "made by the pass",
                                                                     "unchanged"))]


def trace_named(figure, test):
    return next(t for t in figure["data"] if test(t["name"]))


# ---- roofline -------------------------------------------------------------------------------

def test_roofline_draws_one_point_per_op_with_arithmetic_and_the_target_ridge(cnn):
    graph = cnn.result.snapshots[-1].graph
    cost = graph_cost(graph, TARGET)
    found = op_points(graph, cost)
    with_work = [op for op in cost.ops if op.modelled and op.flops > 0 and op.bytes > 0]
    assert len(found.points) == len(with_work) == len(graph.nodes) - 2   # two Flattens
    figure = roofline_figure(TARGET, found, "t")
    drawn = point_traces(figure)
    assert sum(len(t["x"]) for t in drawn) == len(with_work)
    for trace in drawn:
        bound = "memory" if trace["name"].startswith("memory") else "compute"
        assert all(data[4] == bound for data in trace["customdata"])
    assert {d[0] for t in drawn for d in t["customdata"]} == {p.node_id for p in found.points}
    ridge = trace_named(figure, lambda name: name == "ridge point")
    assert ridge["x"][0] == pytest.approx(TARGET.ridge_point("float32")) \
        == pytest.approx(32 / 2.4)
    assert ridge["y"][0] == TARGET.peak("float32")
    roof = trace_named(figure, lambda name: name.startswith("roof"))
    assert list(roof["y"]) == [TARGET.bandwidth_bytes_per_s * roof["x"][0],
                               TARGET.peak("float32"), TARGET.peak("float32")]
    ridge_line = figure["layout"]["shapes"][0]    # dotted, up the whole plot at the ridge
    assert (ridge_line["x0"], ridge_line["yref"]) == (ridge["x"][0], "paper")
    assert any(a["text"].startswith("<b>ridge 13.3 FLOP/byte")
               for a in figure["layout"]["annotations"])
    assert figure["layout"]["xaxis"]["type"] == figure["layout"]["yaxis"]["type"] == "log"
    assert "Flatten ×2" in left_out_caption(found)


def test_the_ridge_label_stands_on_the_side_of_the_ridge_with_room_for_it():
    """Right of the ridge when ops reach far right of it, else left: the side panel's chart
    is narrow, and a label right of a ridge near the axis's end was cut off."""
    def side(intensities):
        points = [OpPoint(i, f"op{i}", "MatMul", x, 1e9, 1e-6, "memory", "float32")
                  for i, x in enumerate(intensities)]
        label, = [a for a in roofline_figure(TARGET, RooflinePoints(points), "t")["layout"][
            "annotations"] if a["text"].startswith("<b>ridge")]
        assert (label["ax"] > 0) == (label["xanchor"] == "left")
        return label["xanchor"]
    assert side([0.01, 1.0]) == "right"    # the ridge (13.3) a decade from the axis's end
    assert side([1.0, 1e5]) == "left"      # ops far right of it leave room


def test_points_sit_on_the_roof_and_are_coloured_by_their_bound(cnn):
    graph = cnn.result.snapshots[-1].graph
    for point in op_points(graph, graph_cost(graph, TARGET)).points:
        assert point.flops_per_s == pytest.approx(min(TARGET.peak(point.dtype),
                                                      2.4e12 * point.intensity))
        assert point.bound == ("compute" if point.intensity >= 32 / 2.4 else "memory")


def test_comparing_a_fusion_draws_arrows_from_the_fused_ops_to_the_new_op(cnn):
    step = step_named(cnn, "fuse_linear_bias_act")
    before, after = cnn.graphs_of_step(step)
    diff = cnn.result.snapshots[step].diff
    before_cost, after_cost = graph_cost(before, TARGET), graph_cost(after, TARGET)
    change = pass_change(before, op_points(before, before_cost), after,
                         op_points(after, after_cost), diff, 2.0, 1.0)
    assert {p.node_id for p in change.old} == set(diff.removed)
    assert change.new_ids == set(diff.added)
    fused = {p.node_id: p for p in op_points(after, after_cost).points if p.node_id in diff.added}
    relus = [(old, new) for old, new in change.arrows if old.op_type == "Relu"]
    assert len(relus) == 3 and all(new.node_id in fused for _, new in relus)
    assert all(new.intensity > old.intensity for old, new in relus)   # fusion moves right
    figure = roofline_figure(TARGET, op_points(after, after_cost), "t", change=change)
    arrows = [a for a in figure["layout"]["annotations"] if a.get("axref") == "x"]
    assert len(arrows) == len(change.arrows)
    old, new = change.arrows[0]     # on log axes an annotation sits at the decade
    assert (arrows[0]["ax"], arrows[0]["x"]) == (pytest.approx(math.log10(old.intensity)),
                                                 pytest.approx(math.log10(new.intensity)))
    hollow = trace_named(figure, lambda name: name.startswith("removed or changed"))
    assert len(hollow["x"]) == len(change.old)


def test_a_click_on_a_point_selects_its_node():
    assert picked_node({"points": [{"customdata": [12, "conv", "Conv"]}]}) == {"node": 12}
    assert picked_node(None) is not None and picked_node({"points": []}) is not None


# ---- intensity overlay ----------------------------------------------------------------------

def test_every_node_gets_the_band_of_its_intensity_relative_to_the_ridge(cnn):
    graph = cnn.result.snapshots[-1].graph
    cost = graph_cost(graph, TARGET)
    bands = node_bands(graph, cost, TARGET)
    assert set(bands) == {n.id for n in graph.nodes}
    for node, op in zip(graph.nodes, cost.ops):
        if op.flops == 0:
            assert bands[node.id] == NO_ARITHMETIC.css_class
            continue
        ratio = op.intensity / TARGET.ridge_point(op.dtype)
        band = next(b for b in BANDS if b.css_class == bands[node.id])
        assert band.low <= ratio < band.high


def test_the_overlay_paints_the_panes_only_when_asked(services, cnn):
    state = ViewState(model="cnn_bn", step=1)
    plain = build_panes(cnn, state, UiState())
    painted = build_panes(cnn, state.with_changes(overlay="intensity"), UiState())
    assert painted.drawn != plain.drawn
    assert not any(" ai-" in e.get("classes", "") for e in plain.after)
    after = cnn.graphs_of_step(1)[1]
    expected = band_classes(cnn, after, "asic32")
    for element in painted.after:
        if element["data"].get("kind") == "node":
            assert expected[element["data"]["node_id"]] in element["classes"].split()
    assert cost_of(cnn, after, "asic32") is cost_of(cnn, after, "asic32")   # cached


# ---- systolic array -------------------------------------------------------------------------

def test_heatmap_z_is_the_simulators_pe_state_at_that_step():
    problem = array_problem(typed_problem("100,40,30"), 16, 16, "ws", "overlap", "asic32",
                            None)
    schedule = problem.schedule()
    reference = schedule_gemm(100, 40, 30, rows=16, cols=16, dataflow="ws", timing="overlap")
    for fold, cycle in ((0, 0), (2, 25), (5, reference.timeline.fold_length(5) - 1)):
        step = schedule.step(fold, cycle)
        figure = go.Figure(heatmap_figure(schedule, step))   # a dict plotly.js reads
        assert [list(row) for row in figure.data[0].z] == \
            reference.step(fold, cycle).pe_state.tolist()
        assert f"fold {fold + 1} of 6" in figure.layout.title.text
    assert ArrayProblem.from_store(problem.to_store()) == problem
    conv = array_problem(GemmProblem("c", "Conv", 1024, 16, 27, conv=ConvShape(34, 34, 3, 3,
                                                                               3, 16, 1)),
                         16, 16, "ws", "overlap", "asic32", None)
    kept = conv.to_store()   # what the page sends back compares equal: no redraw from scratch
    assert json.loads(json.dumps(kept)) == kept and ArrayProblem.from_store(kept) == conv


def test_a_128_by_128_step_is_one_small_z_matrix():
    problem = array_problem(typed_problem("4096,4096,4096"), 128, 128, "ws", "overlap",
                            "asic32", None)
    schedule = problem.schedule()
    figure = go.Figure(heatmap_figure(schedule, schedule.step(500, 300)))
    assert len(figure.data) == 1 and len(figure.data[0].z) == 128
    assert len(figure.to_json()) < 60_000


def test_stepping_walks_phases_and_folds_and_stops_at_the_end():
    schedule = schedule_gemm(5, 6, 7, 4, 4, "ws", timing="scalesim")   # 4 folds of 15 cycles
    starts = [start for _, start, _ in schedule.timeline.fold_phases(0)]
    assert list(phase_marks(schedule, 0)) == starts == [0, 4, 7, 12]
    position, seen = (0, 0), [(0, 0)]
    while True:
        fold, cycle, done = advance(schedule, *position, "phase")
        if done:
            break
        position = (fold, cycle)
        seen.append(position)
    assert seen[:5] == [(0, 0), (0, 4), (0, 7), (0, 12), (1, 0)]
    assert len(seen) == 4 * schedule.folds and position == (3, 12)
    assert advance(schedule, 0, 14, "cycle") == (1, 0, False)
    assert advance(schedule, 3, 14, "cycle") == (3, 14, True)
    assert advance(schedule, 1, 3, "fold") == (2, 0, False)


def test_operands_and_timeline_show_the_folds_tiles_and_phases():
    schedule = schedule_gemm(100, 40, 30, 16, 16, "ws", timing="overlap")
    step = schedule.step(2, 25)
    operands = go.Figure(operands_figure(schedule, step))
    tiles = [s for s in operands.layout.shapes if s.fillcolor == "#a5d8ff"]
    b_tile = tiles[1]
    assert (b_tile.y0, b_tile.y1, b_tile.x0, b_tile.x1) == (*step.tiles["B"]["rows"],
                                                          *step.tiles["B"]["cols"])
    timeline = go.Figure(timeline_figure(schedule, 2, 25))
    bars = {t.name: t for t in timeline.data}
    fold_phases = schedule.timeline.fold_phases(2)
    stream = next(p for p in fold_phases if p[0] == "stream")
    index = list(bars["stream"].y).index("fold 3")
    assert bars["stream"].base[index] == schedule.timeline.fold_begin(2) + stream[1]
    assert timeline.layout.shapes[0].x0 == schedule.timeline.fold_begin(2) + 25


def test_totals_show_both_timing_models_side_by_side():
    problem = array_problem(typed_problem("100,40,30"), 16, 16, "ws", "overlap", "asic32",
                            None)
    heads, rows = totals_rows(problem)
    assert len(heads) == 3
    cycles = dict((row[0], row[1:]) for row in rows)["cycles (SCALE-Sim's count)"]
    expected = [schedule_gemm(100, 40, 30, 16, 16, "ws", timing=t).cycles
                for t in ("scalesim", "overlap")]
    assert cycles == [f"{c:,}" for c in expected]


def test_the_selected_conv_becomes_the_problem_and_bad_input_says_why(cnn):
    graph = cnn.result.snapshots[-1].graph
    conv = next(n for n in graph.nodes if n.op_type == "FusedConv")
    state = ViewState(model="cnn_bn", step=len(cnn.result.snapshots) - 1, node=conv.id,
                      array="8x8", dataflow="os")
    gemms = graph_gemms(cnn, state)
    chosen = chosen_gemm(gemms, state, None)
    assert chosen.node.id == conv.id and chosen.value == f"{conv.id}:0"
    problem = chosen_problem(cnn, state, chosen)
    assert (problem.rows, problem.cols, problem.conv is not None) == (8, 8, True)
    assert problem.M == 32 * 32
    typed = chosen_problem(cnn, state.with_changes(gemm="64,32,16"), None)
    assert (typed.M, typed.N, typed.K) == (64, 32, 16)
    for bad, words in ((state.with_changes(gemm="64x64"), "M,N,K"),
                       (state.with_changes(array="4x9999"), "1 to 256"),
                       (state.with_changes(array="big"), "cannot read array")):
        with pytest.raises(GraphLabError, match=words):
            chosen_problem(cnn, bad, None if bad.gemm else chosen)
    assert array_shape("", "asic32") == (128, 128)


def test_the_graphs_first_gemm_is_shown_when_no_node_with_one_is_selected(cnn):
    """Opening the tab shows a GEMM at once: the graph's first, also when the selected node
    has none (a MaxPool); a node with several GEMMs lists each, and the part picked sticks."""
    step = len(cnn.result.snapshots) - 1
    graph = cnn.result.snapshots[-1].graph
    state = ViewState(model="cnn_bn", step=step)
    gemms = graph_gemms(cnn, state)
    first = next(n for n in graph.nodes if has_gemm(n))
    assert [g.node.id for g in gemms] == [n.id for n in graph.nodes if has_gemm(n)]
    assert chosen_gemm(gemms, state, None).node.id == first.id
    assert gemms[0].label.startswith(f"{first.op_type} {first.name.strip('/')}: M=")
    pool = next(n for n in graph.nodes if n.op_type == "MaxPool")
    assert chosen_gemm(gemms, state.with_changes(node=pool.id), None) is gemms[0]
    said = _note(state.with_changes(node=pool.id), cnn, gemms[0])[0].children
    assert said == (f"{pool.name} (MaxPool) has no matrix multiply or convolution to put on "
                    f"the array: showing the graph's first GEMM. ")
    assert _note(state, cnn, gemms[0]) == []   # nothing selected: nothing to explain
    assert chosen_gemm(gemms, state.with_changes(gemm="8,8,8"), None) is None
    with pytest.raises(GraphLabError, match="no MatMul, Gemm or Conv"):
        chosen_gemm([], state, None)
    assert parse_choice("12:1") == (12, 1) and parse_choice(None) is None


def test_a_node_with_several_gemms_lists_each_and_the_part_picked_sticks(services):
    ws = services.workspace(ViewState(model="bert_tiny_op13"), None)
    step = len(ws.result.snapshots) - 1
    attention = next(n for n in ws.result.snapshots[-1].graph.nodes if n.op_type == "Attention")
    state = ViewState(model="bert_tiny_op13", step=step, node=attention.id)
    gemms = graph_gemms(ws, state)
    own = [g for g in gemms if g.node.id == attention.id]
    assert len(own) > 1 and all(f"of {len(own)}: M=" in g.label for g in own)
    assert chosen_gemm(gemms, state, (attention.id, 1)) is own[1]
    assert chosen_gemm(gemms, state, (attention.id + 1000, 1)) is own[0]   # another node's


def test_stepping_back_mirrors_stepping_forward():
    schedule = schedule_gemm(5, 6, 7, 4, 4, "ws", timing="scalesim")   # 4 folds of 15 cycles
    forward, position = [(0, 0)], (0, 0)
    while True:
        fold, cycle, done = advance(schedule, *position, "phase")
        if done:
            break
        position = (fold, cycle)
        forward.append(position)
    backward, done = [position], False
    while not done:
        fold, cycle, done = retreat(schedule, *backward[-1], "phase")
        if not done:
            backward.append((fold, cycle))
    assert backward[::-1] == forward
    assert retreat(schedule, 2, 9, "phase") == (2, 7, False)     # the start of its phase
    assert retreat(schedule, 2, 9, "fold") == (2, 0, False)
    assert retreat(schedule, 2, 0, "fold") == (1, 0, False)
    assert retreat(schedule, 2, 0, "cycle") == (1, 14, False)
    assert retreat(schedule, 2, 0, "ten") == (1, 5, False)
    assert retreat(schedule, 0, 0, "cycle") == (0, 0, True)
    assert advance(schedule, 0, 0, "hundred") == (1, 0, False)


# ---- memory ---------------------------------------------------------------------------------

def test_memory_chart_draws_one_rectangle_per_buffer(cnn):
    graph = cnn.result.snapshots[-1].graph
    plan = plan_memory(graph)
    figure = memory_figure(plan, graph, "t", selected=graph.nodes[0].id)
    bars = figure["data"][0]
    assert len(bars["x"]) == len(plan.buffers) > 0
    scale = 1024   # KiB: the peak is 80 KiB
    layout = figure["layout"]
    assert "KiB" in layout["yaxis"]["title"]["text"]
    for i, b in enumerate(plan.buffers):
        assert (bars["base"][i], bars["x"][i]) == (b.first - 0.5, b.last - b.first + 1)
        assert (bars["y"][i] - bars["width"][i] / 2, bars["width"][i]) == (b.offset / scale,
                                                                           b.size / scale)
        assert bars["customdata"][i][0] == graph.nodes[b.first].id
    assert bars["marker"]["line"]["width"][0] == 4          # the selected node's tensor
    peak = layout["shapes"][0]                               # the arena's peak, across the plot
    assert (peak["y0"], peak["y1"], peak["xref"]) == (plan.peak_bytes / scale,
                                                      plan.peak_bytes / scale, "x domain")
    assert layout["annotations"][0]["text"].startswith("arena peak")
    legend = layout["legend"]                                 # under the axis, clear of the peak:
    assert legend["yref"] == "container" and legend["yanchor"] == "bottom" and legend["y"] < 0.1
    live = figure["data"][1]
    assert max(live["y"]) == plan.lower_bound_bytes / scale


def test_memory_summary_compares_the_pass(cnn):
    step = step_named(cnn, "fuse_linear_bias_act")
    before, after = (plan_memory(g) for g in cnn.graphs_of_step(step))
    rows = {row[0]: row[1:] for row in summary_rows(PlanSummary.of(before), PlanSummary.of(after))}
    assert rows["tensors in the arena"] == (str(len(before.buffers)), str(len(after.buffers)),
                                            f"−{len(before.buffers) - len(after.buffers)} (-25%)")
    assert rows["arena peak (this plan)"][2] == ("same" if before.peak_bytes == after.peak_bytes
                                                  else rows["arena peak (this plan)"][2])


# ---- exports and the view -------------------------------------------------------------------

def test_the_optimized_model_download_is_the_last_snapshot(cnn):
    final = cnn.result.snapshots[-1].graph
    data = to_bytes(final)
    assert [n.name for n in load_model(data).nodes] == [n.name for n in final.nodes]
    assert onnx.load_from_string(data).functions   # the fused bodies, as model-local functions
    data, name = model_file(final, "my model.onnx", "onnxruntime")
    model = onnx.load_from_string(data)
    assert name == "my_model.onnxruntime.onnx" and not model.functions
    assert {(n.domain, n.op_type) for n in model.graph.node} >= {("com.microsoft", "FusedConv")}
    assert image_name(ViewState(model="my model.onnx", step=2), "after") == \
        "my_model-pass3-after"


def test_panel_settings_round_trip_through_the_url_and_bad_values_fall_back():
    default = ViewState(model="cnn_bn")
    state = default.with_changes(panel="systolic", array="16x16", dataflow="ws",
                                 timing="scalesim", gemm="64,64,64", compare=True,
                                 overlay="intensity", node=4)
    assert from_query(to_query(state, default), default) == state
    query = "?panel=memory&flow=zz&timing=fast&overlay=heat&cmp=0"
    parsed = from_query(query, default)
    assert (parsed.panel, parsed.dataflow, parsed.timing, parsed.overlay, parsed.compare) == \
        ("memory", "os", "overlap", "", False)


def test_patches_change_only_what_panels_may_change():
    state = ViewState(model="cnn_bn", panel="roofline", node=3)
    assert with_patch(state, {"node": 7}) == state.with_changes(node=7)
    assert with_patch(state, {"model": "evil", "step": 9, "dataflow": "IS"}) == \
        state.with_changes(step=9, dataflow="is")
    assert with_patch(state, {"panel": "nowhere", "overlay": "x"}, tab_names()) == state
    assert with_patch(state, {"panel": "memory"}, tab_names()).panel == "memory"
    assert with_patch(state, None) == state
    reduced = with_patch(state.with_changes(step=4, overlay="error"),
                         {"model": "reduced-abc", "panel": "inspector"}, tab_names())
    assert reduced == state.with_changes(model="reduced-abc", node=None, step=None,
                                         panel="inspector")


def test_a_panels_patch_changes_the_view():
    """(A tapped node is selected in the page: tests/browser/test_payload_browser.py.)"""
    patched = _apply(ViewState(model="m"), ids.VIEW_PATCH, ids.VIEW_PATCH,
                     {"patch": {"compare": True}})
    assert patched.compare


# ---- numerical check of one pass ------------------------------------------------------------

def test_checking_a_pass_compares_it_with_the_input_model_and_is_kept(cnn):
    from graphlab.app.numeric_check import cached_check, check_step

    step = step_named(cnn, "fold_batchnorm")
    assert cached_check(cnn, step) is None
    check = check_step(cnn, step)
    assert check.report.ok and check.report.max_abs_err < 1e-4
    assert check.headline().startswith(f"✓ after pass {step + 1} (fold_batchnorm)")
    assert "image float32[1, 3, 32, 32]" in check.detail()   # at the workspace's sizes
    assert check.runtime.ok and check.runtime.report.max_abs_err < 1e-4
    assert check.runtime_line().startswith("✓ as users load it: the model loads and runs in "
                                           "onnxruntime at ORT_ENABLE_ALL; outputs match")
    assert cached_check(cnn, step) is check


def test_a_quantized_pass_is_checked_with_its_looser_tolerance(services):
    from graphlab.app.numeric_check import check_step

    ws = services.workspace(ViewState(model="digits_cnn", pipeline="O2-int8"), None)
    step = step_named(ws, "quantize_int8")
    check = check_step(ws, step)
    assert check.report.rtol == 0.05 and "quantize_int8" in check.detail()
    assert check_step(ws, step - 1).report.rtol == 1e-4


def test_a_wrong_graph_is_reported_output_by_output(cnn):
    from graphlab.app.numeric_check import StepCheck
    from compiler_core.verify import OutputCheck, VerifyReport

    report = VerifyReport([OutputCheck("logits", 3.5, 1.0, 4.0, False)])
    check = StepCheck(4, "fold_batchnorm", report, None, "image float32[2, 3, 32, 32]",
                      LevelCheck(RuntimeOutcome("all", "ran"), report))
    assert check.headline() == ("✗ after pass 5 (fold_batchnorm) 1 output differs from the "
                                "input model's: logits: max abs error 3.5")
    assert check.runtime_line() == (
        "✗ as users load it: the model loads and runs in onnxruntime at ORT_ENABLE_ALL, but 1 "
        "output differs from the input model's: logits: max abs error 3.5")


def test_a_pass_whose_model_crashes_onnxruntime_is_an_answer_on_the_page(monkeypatch):
    """The model of fold_norm_affine, written as the exporter did before canonical export,
    kills onnxruntime at its default level: the check says so, in a child process."""
    from types import SimpleNamespace

    import numpy as np
    from onnx import helper

    from compiler_core.hardware.representative_sizes import ChosenSizes
    from compiler_core.ir import exporter
    from compiler_core.passes import PassManager
    from graphlab.app.numeric_check import check_step
    from graphlab.app.panels.numerics import render
    from passes_helpers import F, build, tensor

    monkeypatch.setattr(exporter, "_empty_tail_dropped", lambda names, keep: names)
    rng = np.random.default_rng(1)
    graph = build([helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], name="ln"),
                   helper.make_node("MatMul", ["ln", "w"], ["mm"], name="mm"),
                   helper.make_node("Add", ["mm", "c"], ["y"], name="bias")],
                  [tensor("x", F, [2, 8])], [tensor("y", F, [2, 6])],
                  {"g": rng.random(8, dtype=np.float32) + 0.5, "b": np.ones(8, np.float32),
                   "w": np.ones((8, 6), np.float32), "c": np.zeros(6, np.float32)})
    workspace = SimpleNamespace(result=PassManager("fold_norm_affine").run(graph), derived={},
                                sizes=ChosenSizes())
    check = check_step(workspace, 0)
    assert check.report.ok  # onnxruntime with its optimizer off runs it fine
    assert check.runtime.outcome.stage == "crash"
    assert check.runtime_line().startswith("✗ as users load it: the model crashes onnxruntime "
                                           "at ORT_ENABLE_ALL: the process was killed by "
                                           "SIGSEGV")
    assert check.runtime_line() in str(render(check))


def test_a_model_that_fixes_its_sizes_inside_is_viewed_and_checked_at_them(services):
    """nn.MultiheadAttention's TorchScript export fixes the sequence length in a Reshape: the
    view takes that length, not a representative one, and the numerical check says why."""
    import hashlib

    import sized_models
    from graphlab.app.numeric_check import check_step
    from graphlab.app.panels.numerics import render
    from graphlab.app.workbench import ModelSource

    data = sized_models.seq_first_heads().SerializeToString()   # as an upload arrives
    source = ModelSource("heads.onnx", "sha256:" + hashlib.sha256(data).hexdigest(), data=data)
    workspace = services.workbench.workspace(source, "O2", {})
    assert workspace.sizes.bindings == {"seq": 5, "batch": 1}
    check = check_step(workspace, len(workspace.result.snapshots) - 1)
    assert check.report.ok and check.runtime.ok
    assert check.detail().startswith(
        "onnxruntime on generated inputs x float32[5, 1, 16] at seq=5,batch=1 (representative "
        "— seq: the model's structure: fixed by node 'split_heads': a Reshape to "
        "[5, 4*batch, 4]")
    assert check.detail() in str(render(check))


def test_the_bindings_box_shows_the_sizes_the_view_is_computed_at(services, cnn):
    from graphlab.app.panels.controls import sizes_source

    assert cnn.sizes.text() == "batch=1"                    # the sample's manifest
    assert sizes_source(cnn.compilation.decisions)[0] == "(representative)"
    bert = services.workspace(ViewState(model="bert_tiny_op13", bindings="seq=64"), None)
    assert bert.sizes.text() == "batch=1,seq=64"            # yours, and the rest chosen
    word, why = sizes_source(bert.compilation.decisions)
    assert word == "(representative)" and "seq: given" in why
    assert bert.result.snapshots[-1].graph.inputs[0].shape == ("batch", 64)   # yours bound
    mine = services.workspace(ViewState(model="bert_tiny_op13", bindings="batch=2,seq=16"), None)
    assert sizes_source(mine.compilation.decisions)[0] == "(yours)"
    static = services.workspace(ViewState(model="teach_gelu"), None)
    assert static.sizes.text() == "" and sizes_source(static.compilation.decisions)[0] == ""


# ---- first view, sizes and the traffic story ------------------------------------------------

def test_a_new_view_opens_on_the_first_pass_that_changed_the_graph(services, cnn):
    first = cnn.clamp_step(None)
    assert cnn.result.snapshots[first].changed
    assert not any(s.changed for s in cnn.result.snapshots[:first])
    assert from_query("", ViewState(model="cnn_bn")).step is None
    assert from_query("?pass=1", ViewState(model="cnn_bn")).step == 0
    picked = _apply(ViewState(model="cnn_bn", step=4), "model-select", "model-select",
                    {"model": "bert_tiny_op13"})
    assert picked.step is None
    assert with_patch(ViewState(model="cnn_bn", step=0), {"step": 3}).step == 3


def test_the_inspector_of_a_fused_attention_shows_what_fusion_keeps_on_chip(services):
    from graphlab.app.inspector_data import describe_node
    from graphlab.app.node_metrics import SAVED, UNFUSED

    ws = services.workspace(ViewState(model="bert_tiny_op13"), None)
    step = step_named(ws, "fuse_attention")
    attention = next(n for n in ws.result.snapshots[step].graph.nodes
                     if n.op_type == "Attention")
    info = describe_node(ws, step, attention.id, "asic32")
    moved = int(info["metrics"]["bytes moved"].replace(",", ""))
    unfused = int(info["metrics"][UNFUSED].replace(",", ""))
    assert unfused > 2 * moved
    assert info["metrics"][SAVED].startswith(f"{1 - moved / unfused:.0%}")
    body = [n for n in attention.body.nodes]
    assert "run one by one they would move" in info["metrics_note"] and len(body) > 5


def test_the_roofline_crosses_ops_priced_with_an_unknown_dim():
    from hardware_graphs import Builder
    from graphlab.app.roofline_view import ASSUMED_LABEL, assumed_caption

    b = Builder()
    x = b.input("x", ("batch", 16))
    k = b.input("k", (1,), onnx.TensorProto.INT64)
    top = b.op("TopK", [x, k], ("batch", "unk__0"))
    graph = b.outputs(b.op("Relu", [top], ("batch", "unk__0")))
    found = op_points(graph, graph_cost(graph, "asic32", {"batch": 2}))
    assert [p.op_type for p in found.points if p.assumed] == ["TopK", "Relu"]
    figure = roofline_figure(get_target("asic32"), found, "t")
    crossed = [t for t in figure["data"] if t["name"] == ASSUMED_LABEL]
    assert len(crossed) == 1 and len(crossed[0]["x"]) == 2
    assert assumed_caption(found).startswith("2 ops (crossed) are priced with a dim")


def test_the_traffic_chart_follows_the_pipeline_and_marks_the_selected_pass(services, cnn):
    from graphlab.app.graph_analyses import traffic_of
    from graphlab.app.traffic_view import fusion_caption, picked_pass, traffic_figure

    traffic = traffic_of(cnn, "asic32")
    assert traffic is traffic_of(cnn, "asic32")
    assert len(traffic.steps) == 1 + len(cnn.result.snapshots)
    figure = traffic_figure(traffic, 3)
    lines = [t for t in figure["data"] if t["mode"] == "lines+markers"]
    assert [t["name"] for t in lines] == ["bytes moved", "estimated time", "FLOPs", "arena peak"]
    first, last = traffic.steps[0], traffic.steps[-1]
    assert lines[0]["y"][0] == 1 and lines[0]["y"][-1] == pytest.approx(last.bytes / first.bytes)
    layout = figure["layout"]
    assert all(shape["x0"] == 4 for shape in layout["shapes"])   # pass 4 = index 3
    # one panel per quantity, side by side on one y scale, each titled
    assert [t["xaxis"] for t in lines] == ["x", "x2", "x3", "x4"]
    assert [s["xref"] for s in layout["shapes"]] == ["x", "x2", "x3", "x4"]
    assert all(layout[f"yaxis{i}"]["matches"] == "y" for i in (2, 3, 4))
    assert [a["text"] for a in layout["annotations"]] == [t["name"] for t in lines]
    domains = [layout[f"xaxis{i}"]["domain"] for i in ("", 2, 3, 4)]
    assert domains[0][0] == 0 and domains[-1][1] == pytest.approx(1)
    assert all(a[1] < b[0] for a, b in zip(domains, domains[1:]))
    assert picked_pass({"points": [{"customdata": [5, "", ""]}]}) == 5
    assert picked_pass({"points": [{"customdata": [-1, "", ""]}]}) is None
    assert "FusedConv ×3" in fusion_caption(traffic)


def test_the_build_brings_the_traffic_story_with_the_workspace(tmp_path):
    """Computed in the builder process and kept in the stored workspace: the server that
    loads it from the store prices no pass for the Roofline tab."""
    from compiler_core.compilation.pass_traffic import pipeline_traffic
    from compiler_core.hardware.targets import DEFAULT_TARGET

    fresh_services = Services.from_config(AppConfig(cache_dir=str(tmp_path)))
    cnn = fresh_services.workspace(ViewState(model="cnn_bn"), None)
    kept = cnn.derived.get(("traffic", DEFAULT_TARGET))
    assert kept is not None
    fresh = pipeline_traffic(cnn.result, DEFAULT_TARGET, cnn.sizes.bindings)
    assert [(s.nodes, s.bytes, s.flops) for s in kept.steps] == \
        [(s.nodes, s.bytes, s.flops) for s in fresh.steps]


# ---- every chart is a plain dict ------------------------------------------------------------

def plain_figure(figure) -> dict:
    """A chart as the app must send it: the dict plotly.js reads, never a plotly graph object
    (building those validates and deep-copies every property, most of a chart tab's answer)."""
    assert type(figure) is dict, f"a {type(figure).__name__}: build the figure as a plain dict"
    assert set(figure) == {"data", "layout"}
    json.dumps(figure)      # plain JSON all the way down: no graph object nested in it either
    go.Figure(figure)       # and every property one plotly knows (checked here, not per answer)
    return figure


def test_every_chart_the_app_draws_is_a_plain_dict(cnn):
    from graphlab.app.graph_analyses import traffic_of
    from graphlab.app.panels.memory import memory_view
    from graphlab.app.panels.roofline import roofline_view
    from graphlab.app.traffic_view import traffic_figure

    step = step_named(cnn, "fuse_linear_bias_act")
    fused = next(iter(cnn.result.snapshots[step].diff.added))
    for compare in (False, True):
        state = ViewState(model="cnn_bn", step=step, node=fused, compare=compare)
        after, before, _ = memory_view(cnn, state)
        roofline, _ = roofline_view(cnn, state)
        for figure in (after, roofline, *([before] if compare else [])):
            plain_figure(figure)
        assert (before is None) != compare
    plain_figure(traffic_figure(traffic_of(cnn, "asic32"), step))
    schedule = schedule_gemm(100, 40, 30, 16, 16, "ws", timing="overlap")
    step_shown = schedule.step(2, 25)
    for figure in (heatmap_figure(schedule, step_shown), operands_figure(schedule, step_shown),
                   timeline_figure(schedule, 2, 25)):
        plain_figure(figure)


def test_no_view_builds_plotly_graph_objects():
    """The slow path stays out: nothing the app or the report runs imports plotly's figure
    object model (tests may, to read a dict back)."""
    import ast
    import pathlib

    import graphlab

    slow = ("plotly.graph_objects", "plotly.graph_objs", "plotly.subplots", "plotly.express")
    found = []
    for path in pathlib.Path(graphlab.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if isinstance(node, ast.ImportFrom) and node.module == "plotly":
                names = [f"plotly.{a.name}" for a in node.names]
            found += [f"{path.name}: {n}" for n in names if n.startswith(slow)]
    assert not found
