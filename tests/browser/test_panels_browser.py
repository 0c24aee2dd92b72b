"""The chart panels, the intensity overlay and the downloads in a real (headless) browser."""

from __future__ import annotations

import json
import os
import re
import time
import xml.etree.ElementTree as ElementTree

import pytest

from benchmarks.journeys import CUT_OFF
from benchmarks.load import free_port
from selenium.webdriver.common.action_chains import ActionChains

from compiler_core.compilation import compile_model
from compiler_core.hardware import gemm_problems, get_target, graph_cost, plan_memory
from compiler_core.hardware.cost import compute_dtype
from compiler_core.hardware.gemm_shapes import has_gemm
from compiler_core.hardware.node_schedule import schedule_problem
from compiler_core.hardware.systolic import IDLE, LOADING
from compiler_core.ir import load_model
from graphlab.app.roofline_view import op_points
from graphlab.app.styles import COLORS
from graphlab.app.systolic_view import array_problem
from graphlab.cli import main
from graphlab.samples import resolve_model, size_hints

from pane_helpers import chart_js, pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser


def app_pipeline(sample: str):
    """The app's default compilation of ``sample`` (the compile entry, as the app's build),
    and the sizes it prices at."""
    compiled = compile_model(load_model(resolve_model(sample)), "O2",
                             size_hints=size_hints(sample))
    return compiled, compiled.bindings


def final_graph(sample: str):
    """The last graph of the app's default pipeline."""
    return app_pipeline(sample)[0].snapshots[-1].graph


@pytest.fixture(autouse=True)
def wide_window(dash_duo):
    """The chart panels widen the side column: give the page the room of a laptop screen."""
    dash_duo.driver.set_window_size(1600, 1000)




def open_view(dash_duo, app, query: str) -> None:
    dash_duo.start_server(app, port=free_port())
    dash_duo.driver.get(dash_duo.server_url + "/" + query)
    wait_for_nodes(dash_duo)


def plot_js(dash_duo, graph_id: str, script: str):
    """Run ``script`` with ``gd`` bound to the plotly graph inside the dcc.Graph ``graph_id``."""
    return chart_js(dash_duo.driver, graph_id, script)


def wait_for_plot(dash_duo, graph_id: str, condition: str = "gd.data.length > 0"):
    wait_until(dash_duo, lambda: plot_js(dash_duo, graph_id, f"return {condition};"), 20,
               f"{graph_id} drew nothing")


def downloaded(dash_duo, suffix: str, timeout: float = 15) -> str:
    folder = dash_duo.download_path
    wait_until(dash_duo, lambda: any(f.endswith(suffix) for f in os.listdir(folder)), timeout,
               f"no {suffix} file was downloaded")
    return os.path.join(folder, next(f for f in os.listdir(folder) if f.endswith(suffix)))


def test_roofline_draws_every_op_and_the_ridge_and_a_click_selects(dash_duo, graphlab_app):
    result, bindings = app_pipeline("cnn_bn")
    graph = result.snapshots[-1].graph
    expected = op_points(graph, graph_cost(result.sized(graph), "asic32", bindings)).points
    open_view(dash_duo, graphlab_app, f"?model=cnn_bn&pass={len(result.snapshots)}&panel=roofline")
    wait_for_plot(dash_duo, "roofline-graph")
    drawn = plot_js(dash_duo, "roofline-graph",
                    "return gd.data.filter(t => / op/.test(t.name))"
                    ".map(t => t.customdata.map(d => d[0])).flat();")
    assert sorted(drawn) == sorted(p.node_id for p in expected)
    ridge = plot_js(dash_duo, "roofline-graph",
                    "return gd.data.find(t => t.name === 'ridge point').x[0];")
    assert ridge == pytest.approx(get_target("asic32").ridge_point("float32"))
    assert plot_js(dash_duo, "roofline-graph",
                   "return gd.layout.annotations.some(a => /ridge 13.3/.test(a.text));")
    points = dash_duo.driver.find_elements("css selector", "#roofline-graph .scatterlayer "
                                                           ".trace:nth-child(3) .point")
    ActionChains(dash_duo.driver).move_to_element(points[0]).pause(0.3).click().perform()
    wait_until(dash_duo, lambda: "node=" in dash_duo.driver.current_url,
               message="clicking a point selected no node")
    assert "panel=roofline" in dash_duo.driver.current_url


def test_the_roofline_compared_at_1280_keeps_its_text_inside_the_chart(dash_duo, graphlab_app):
    """At a projector's 1280x800, comparing fuse_attention's before and after: the titles,
    the summary of what the pass did and the axes' titles all lie inside the chart."""
    dash_duo.driver.set_window_size(1280, 800)
    result, _ = app_pipeline("bert_tiny_op13")
    fused_at = next(s.index for s in result.snapshots if s.pass_name == "fuse_attention")
    open_view(dash_duo, graphlab_app, f"?model=bert_tiny_op13&pass={fused_at + 1}"
                                      f"&panel=roofline&cmp=1")
    wait_for_plot(dash_duo, "roofline-graph", "gd.layout.title.subtitle.text.includes('faster')")
    cut = [text for text in dash_duo.driver.execute_script(CUT_OFF)
           if text.startswith("chart roofline-graph")]
    assert not cut, cut


def test_the_charts_library_is_the_cartesian_bundle_loaded_once(dash_duo, graphlab_app):
    """The charts' library is the app's own plotly.js cartesian bundle (a third of the full
    one), not Dash's full bundle, and is loaded once even when the page's early load and the
    first chart both ask for it."""
    open_view(dash_duo, graphlab_app, "?model=cnn_bn")
    for tab in ("Roofline", "Memory"):   # the pointer on the tabs starts the page's own load
        dash_duo.driver.find_element("xpath", f"//*[contains(@class, 'tab')][.='{tab}']").click()
    wait_for_plot(dash_duo, "memory-after-graph")
    loaded = dash_duo.driver.execute_script(
        "return Array.from(document.scripts).map(s => s.src).filter(s => /plotly/.test(s));")
    assert len(loaded) == 1 and "/assets/vendor/plotly-cartesian-" in loaded[0], loaded
    assert dash_duo.driver.execute_script("return typeof window.Plotly.react;") == "function"
    assert dash_duo.get_logs() == []


def test_the_page_loads_the_regenerator_runtime_instead_of_the_polyfill(dash_duo, graphlab_app):
    """Dash's Babel polyfill is replaced by the regenerator runtime its libraries call: the
    page loads no polyfill, the runtime is there, and the components Dash loads lazily (the
    model dropdown's options, a chart) still work without a console error."""
    open_view(dash_duo, graphlab_app, "?model=cnn_bn")
    scripts = dash_duo.driver.execute_script("return Array.from(document.scripts).map(s => s.src);")
    assert not [src for src in scripts if "polyfill" in src], scripts
    assert [src for src in scripts if "/assets/vendor/regenerator-runtime-" in src], scripts
    assert dash_duo.driver.execute_script("return typeof regeneratorRuntime.mark;") == "function"
    dash_duo.find_element("#model-select").click()
    dash_duo.wait_for_element("[role=option]", timeout=10)
    options = [option.text for option in dash_duo.find_elements("[role=option]")]
    assert any(text.startswith("teach_layernorm") for text in options), options
    dash_duo.find_element("body").click()
    dash_duo.driver.find_element("xpath", "//*[contains(@class, 'tab')][.='Memory']").click()
    wait_for_plot(dash_duo, "memory-after-graph")
    assert dash_duo.get_logs() == []


def test_selecting_a_matmul_and_stepping_changes_the_array(dash_duo, graphlab_app):
    graph = load_model(resolve_model("teach_matmul_bias"))
    first_gemm, matmul = (graph.node_by_name(n) for n in ("matmul_good", "matmul_inputbias"))
    open_view(dash_duo, graphlab_app, "?model=teach_matmul_bias&pass=1&panel=systolic&array=4x4")
    dash_duo.wait_for_contains_text("#systolic-gemm-select", first_gemm.name, timeout=10)
    wait_for_plot(dash_duo, "systolic-heatmap")   # the graph's first GEMM, nothing selected
    pane_js(dash_duo, f"after.$id('n{matmul.id}').emit('tap');")   # the second one
    dash_duo.wait_for_contains_text("#systolic-gemm-select", matmul.name, timeout=10)
    assert f"node={matmul.id}" in dash_duo.driver.current_url
    wait_until(dash_duo, lambda: heatmap_position(dash_duo) == (1, 0, 0))
    first = plot_js(dash_duo, "systolic-heatmap", "return gd.data[0].z;")
    dash_duo.find_element("#systolic-play").click()
    wait_until(dash_duo, lambda: plot_js(dash_duo, "systolic-heatmap", "return gd.data[0].z;")
               != first, message="playing did not change the array")
    dash_duo.find_element("#systolic-play").click()   # pause
    time.sleep(1)
    title, z = plot_js(dash_duo, "systolic-heatmap",
                       "return [gd.layout.title.text, gd.data[0].z];")
    fold, cycle = map(int, re.match(r"fold (\d+) of \d+, cycle (\d+)", title).groups())
    problem = gemm_problems(matmul)[0]
    schedule = array_problem(problem, 4, 4, "os", "overlap", "asic32", "float32").schedule()
    assert z == schedule.step(fold - 1, cycle).pe_state.tolist()


def test_memory_chart_draws_a_rectangle_per_tensor(dash_duo, graphlab_app):
    result, _ = app_pipeline("cnn_bn")
    plan = plan_memory(result.sized(result.final), result.bindings)
    open_view(dash_duo, graphlab_app, f"?model=cnn_bn&pass={len(result.snapshots)}&panel=memory")
    wait_for_plot(dash_duo, "memory-after-graph")
    bars = plot_js(dash_duo, "memory-after-graph", "return gd.data[0].x.length;")
    assert bars == len(plan.buffers)
    assert dash_duo.driver.find_elements("css selector", "#memory-after-graph .bars .point")
    dash_duo.wait_for_contains_text("#memory-summary", "arena peak", timeout=10)


def test_the_traffic_story_follows_the_pipeline_and_a_click_selects_a_pass(dash_duo,
                                                                          graphlab_app):
    result, _ = app_pipeline("bert_tiny_op13")
    fused_at = next(s.index for s in result.snapshots if s.pass_name == "fuse_attention")
    open_view(dash_duo, graphlab_app, f"?model=bert_tiny_op13&pass={fused_at + 1}"
                                      f"&panel=roofline")
    wait_for_plot(dash_duo, "roofline-traffic")
    lines = plot_js(dash_duo, "roofline-traffic",
                    "return gd.data.map(t => [t.name, t.x.length, t.y[t.y.length - 1]]);")
    assert [name for name, _, _ in lines] == ["bytes moved", "estimated time", "FLOPs",
                                              "arena peak"]
    assert all(count == 1 + len(result.snapshots) for _, count, _ in lines)
    assert lines[0][2] < 0.5 and lines[2][2] == pytest.approx(1.0, abs=0.01)  # bytes fell, FLOPs not
    assert plot_js(dash_duo, "roofline-traffic",
                   f"return gd.layout.shapes.every(s => s.x0 === {fused_at + 1});")
    dash_duo.wait_for_contains_text("#roofline-traffic-caption", "Attention ×2", timeout=10)
    assert re.search(r"Attention ×2 [\d.]+ \w+ instead of [\d.]+ \w+ \(\d+% less\)",
                     dash_duo.find_element("#roofline-traffic-caption").text)
    points = dash_duo.driver.find_elements("css selector", "#roofline-traffic .scatterlayer "
                                                           ".trace:first-child .point")
    hover = ActionChains(dash_duo.driver).move_to_element(points[3]).pause(0.3)
    hover.perform()   # 29 points share the chart: the one under the mouse is the one clicked
    hovered = plot_js(dash_duo, "roofline-traffic", "return gd._hoverdata[0].pointNumber;")
    assert hovered in (2, 3, 4)
    hover.click().perform()
    wait_until(dash_duo, lambda: f"pass={hovered}&" in dash_duo.driver.current_url,
               message="clicking a pass on the traffic chart did not select it")
    dash_duo.wait_for_contains_text("#pane-before-title", f"Before pass {hovered}", timeout=10)


def test_the_intensity_overlay_colours_every_node_and_shows_a_legend(started):
    dash_duo = started
    dash_duo.find_element("#overlay-toggle input").click()
    wait_until(dash_duo, lambda: pane_js(dash_duo, "return after.nodes('.op').length > 0 && "
                                                   "after.nodes('.op').every(n => /ai-/.test("
                                                   "n.classes().join(' ')));"),
               message="the overlay did not colour every node")
    assert "overlay=intensity" in dash_duo.driver.current_url
    dash_duo.wait_for_contains_text("#overlay-legend", "ridge 13.3", timeout=10)


def test_a_pane_downloads_as_a_valid_svg(started):
    dash_duo = started
    button = next(b for b in dash_duo.driver.find_elements("css selector", ".pane-exports button")
                  if b.text == "SVG" and "after" in b.get_attribute("id"))
    button.click()
    path = downloaded(dash_duo, ".svg")
    assert os.path.basename(path) == "cnn_bn-pass2-after.svg"   # the first view: pass 2
    root = ElementTree.parse(path).getroot()   # raises unless the file is well-formed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert float(root.get("width")) > 100 and float(root.get("height")) > 100
    labels = {" ".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"MaxPool", "block1", "image"} <= labels   # node, group and input labels drawn
    modified = "rgb({},{},{})".format(*bytes.fromhex(COLORS["modified"][1:]))
    assert any(shape.get("stroke") == modified for shape in root.iter()), \
        "the pass's modified node is not drawn with its mark"


def test_the_optimized_model_downloads_as_onnx(started):
    dash_duo = started
    dash_duo.find_element("#export-model").click()
    graph = load_model(downloaded(dash_duo, ".optimized.onnx"))
    assert len(graph.nodes) == len(final_graph("cnn_bn").nodes)
    dash_duo.find_element("#export-model-onnxruntime").click()
    path = downloaded(dash_duo, ".onnxruntime.onnx")
    assert os.path.basename(path) == "cnn_bn.onnxruntime.onnx"
    lowered = load_model(path)
    assert [(n.domain, n.op_type) for n in lowered.nodes if "Conv" in n.op_type] == \
        [("com.microsoft", "FusedConv")] * 3


def heatmap_position(dash_duo) -> tuple[int, int, int]:
    """(fold, local cycle, clock cycle) the array's title says it shows; fold from 1."""
    title = plot_js(dash_duo, "systolic-heatmap", "return gd.layout.title.text;") or ""
    found = re.match(r"fold (\d+) of \d+, cycle (\d+) of \d+ \(clock ([\d,]+)\)", title)
    return tuple(int(g.replace(",", "")) for g in found.groups()) if found else None


def test_a_chart_below_the_fold_is_drawn_when_a_person_scrolls_to_it(dash_duo, graphlab_app):
    """Opening the Systolic tab draws none of the charts stacked below its controls, not even
    blank, once its answer has come; scrolled to, the timeline (the lowest) is drawn once, with
    its figure, not first blank (as it was when the chart mounted before the answer came)."""
    open_view(dash_duo, graphlab_app, "?model=cnn_bn")
    dash_duo.driver.find_element(
        "xpath", "//*[@id='side-tabs']//*[normalize-space(text())='Systolic']").click()
    wait_until(dash_duo, lambda: "GEMM (" in dash_duo.find_element("#systolic-source").text,
               20, "the Systolic tab never answered")
    drawn = "return Array.from(document.querySelectorAll('.side .dash-graph'))" \
        ".filter(function (g) { return g.querySelector('.js-plotly-plot'); }).length;"
    assert dash_duo.driver.execute_script(drawn) == 0   # none drawn, not even blank
    dash_duo.driver.execute_script(   # the traces the timeline holds at each change of its box
        "var gd = document.querySelector('#systolic-timeline > div:last-child');"
        "window.timelineTraces = []; new MutationObserver(function () {"
        "  window.timelineTraces.push(gd.data ? gd.data.length : null);"
        "}).observe(gd, {childList: true, subtree: true});")
    assert chart_js(dash_duo.driver, "systolic-timeline", "return gd.data.length;") > 0
    traces = dash_duo.driver.execute_script("return window.timelineTraces;")
    assert traces and 0 not in traces, traces            # never drawn blank
    lowest = "var gd = document.querySelector('#systolic-timeline > div:last-child');"
    assert dash_duo.driver.execute_script(
        lowest + "var r = gd.getBoundingClientRect(); return r.top < innerHeight;")


def test_a_chart_out_of_sight_while_play_runs_draws_only_the_newest_step_when_seen(
        dash_duo, graphlab_app):
    """A person presses Play and scrolls down to the timeline.  The array's chart, out of
    sight, draws nothing meanwhile; scrolled back to after a pause, it draws the step the
    sliders show, once, not every step it missed (each tick's figure used to wait its turn)."""
    open_view(dash_duo, graphlab_app, "?model=cnn_bn&panel=systolic")
    wait_for_plot(dash_duo, "systolic-heatmap")
    draws = ("var gd = document.querySelector('#systolic-heatmap > div:last-child');"
             "if (gd.drawnTimes === undefined) { gd.drawnTimes = 0;"
             "  gd.on('plotly_afterplot', function () { gd.drawnTimes += 1; }); }"
             "return gd.drawnTimes;")
    cycle = "return +document.querySelector('#systolic-cycle [role=slider]')" \
        ".getAttribute('aria-valuenow');"
    dash_duo.find_element("#systolic-play").click()
    dash_duo.driver.execute_script("document.getElementById('systolic-passes')"
                                   ".scrollIntoView();")
    away = dash_duo.driver.execute_script(draws), dash_duo.driver.execute_script(cycle)
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(cycle) >= away[1] + 50, 20,
               "Play did not move the cycle slider")
    dash_duo.driver.execute_script("document.getElementById('systolic-play').click();")
    assert dash_duo.driver.execute_script(draws) == away[0]   # out of sight: nothing drawn
    shown = [None, dash_duo.driver.execute_script(cycle)]
    while shown[-1] != shown[-2]:                         # the last tick's answer landed
        time.sleep(0.5)
        shown.append(dash_duo.driver.execute_script(cycle))
    wait_until(dash_duo, lambda: (heatmap_position(dash_duo) or (0, -1))[1] == shown[-1], 10,
               "scrolled back to, the array does not show the sliders' step")
    time.sleep(0.5)                                       # room for any later draw to show
    assert dash_duo.driver.execute_script(draws) - away[0] <= 2   # the newest and its fit


def test_the_systolic_tab_opened_by_a_click_shows_the_first_gemm_loading_and_steps(
        dash_duo, graphlab_app, capsys):
    """A person opens the Systolic tab with nothing selected: the dropdown shows the graph's
    first GEMM, cycle 0 shows that fold's cells loading, and the step buttons land on the
    phase and fold boundaries of compiler_core's schedule, forwards and back."""
    result, bindings = app_pipeline("cnn_bn")
    graph = result.sized(result.final)
    node = next(n for n in graph.nodes if has_gemm(n))
    problem = gemm_problems(node, bindings)[0]
    target = get_target("asic32")
    scalesim, schedule = (schedule_problem(problem, rows=target.array_rows,
                                           cols=target.array_cols, dataflow="os", timing=timing,
                                           target=target, dtype=compute_dtype(node))
                          for timing in ("scalesim", "overlap"))   # the tab's defaults
    timeline = schedule.timeline
    open_view(dash_duo, graphlab_app, f"?model=cnn_bn&pass={len(result.snapshots)}")
    tab = dash_duo.driver.find_element(
        "xpath", "//*[@id='side-tabs']//*[normalize-space(text())='Systolic']")
    tab.click()
    wait_for_plot(dash_duo, "systolic-heatmap")
    wait_until(dash_duo, lambda: heatmap_position(dash_duo) is not None)
    shown = dash_duo.find_element("#systolic-gemm-select").text
    assert node.name.strip("/") in shown and f"M={problem.M}, N={problem.N}, K={problem.K}" \
        in shown, shown
    assert "node=" not in dash_duo.driver.current_url    # shown, not selected for the person

    assert heatmap_position(dash_duo) == (1, 0, 0)
    z = plot_js(dash_duo, "systolic-heatmap", "return gd.data[0].z;")
    first = schedule.step(0, 0)
    assert z == first.pe_state.tolist()
    assert sum(row.count(LOADING) for row in z) == first.loading > 0
    assert sum(row.count(IDLE) for row in z) == 0       # no grey cell in the used region

    def press(button: str, expected: tuple[int, int, int]) -> None:
        dash_duo.find_element(f"#systolic-{button}").click()
        wait_until(dash_duo, lambda: heatmap_position(dash_duo) == expected, 10,
                   f"{button}: the array shows {heatmap_position(dash_duo)}, not {expected}")

    second, third = [start for _, start, _ in timeline.fold_phases(0)][1:3]
    press("next-phase", (1, second, timeline.fold_begin(0) + second))
    press("next-phase", (1, third, timeline.fold_begin(0) + third))
    press("next-fold", (2, 0, timeline.fold_begin(1)))
    press("next-cycle", (2, 1, timeline.fold_begin(1) + 1))
    press("prev-fold", (2, 0, timeline.fold_begin(1)))
    press("prev-phase", (1, third, timeline.fold_begin(0) + third))
    press("prev-cycle", (1, third - 1, timeline.fold_begin(0) + third - 1))
    assert dash_duo.find_element("#systolic-gemm-select").text == shown
    here = heatmap_position(dash_duo)
    dash_duo.find_element("#step-prev").click()   # the pass before: the same GEMM is kept
    wait_until(dash_duo, lambda: f"pass={len(result.snapshots) - 1}" in
               dash_duo.driver.current_url)
    time.sleep(1.5)
    assert heatmap_position(dash_duo) == here and \
        dash_duo.find_element("#systolic-gemm-select").text == shown

    # `graphlab schedule` says the same: the cycles in the totals, the fold period, the fill
    capsys.readouterr()   # the test server's own lines
    assert main(["schedule", "cnn_bn", "--node", problem.source, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    totals = dash_duo.find_element("#systolic-totals").text
    assert record["cycles"] == schedule.cycles
    assert f"cycles (SCALE-Sim's count) {scalesim.cycles:,} {schedule.cycles:,}" in totals
    assert record["fold_grid"]["period"] == timeline.fold_begin(1)
    assert record["phases"]["fill"] == record["folds"] * second   # OS: fill, then stream


def test_choosing_a_gemm_in_the_dropdown_selects_its_node_and_shows_that_gemm(
        dash_duo, graphlab_app):
    """A fused attention holds three GEMMs: choosing the second layer's second GEMM selects
    that node (as a click in the panes would) and shows that GEMM; its third GEMM is then one
    more choice away, the node staying selected."""
    result, bindings = app_pipeline("bert_tiny_op13")
    graph = result.sized(result.final)
    second = [n for n in graph.nodes if n.op_type == "Attention"][1]
    gemms = gemm_problems(second, bindings)
    name = second.name.strip("/")
    open_view(dash_duo, graphlab_app,
              f"?model=bert_tiny_op13&pass={len(result.snapshots)}&panel=systolic")
    wait_for_plot(dash_duo, "systolic-heatmap")

    def choose(part: int) -> None:
        p = gemms[part]
        label = f"{name} · GEMM {part + 1} of {len(gemms)}: M={p.M}, N={p.N}, K={p.K}"
        dash_duo.find_element("#systolic-gemm-select").click()
        option = dash_duo.driver.find_element(
            "xpath", f"//*[@role='option']//*[contains(text(), '{label}')] | "
                     f"//*[@role='option'][contains(., '{label}')]")
        option.click()
        dash_duo.wait_for_contains_text("#systolic-gemm-select", label, timeout=10)
        dash_duo.wait_for_contains_text(
            "#systolic-source", f"({p.M} × {p.K}) · ({p.K} × {p.N})", timeout=10)

    choose(1)
    assert f"node={second.id}" in dash_duo.driver.current_url
    wait_until(dash_duo, lambda: heatmap_position(dash_duo) == (1, 0, 0))
    choose(2)
    assert f"node={second.id}" in dash_duo.driver.current_url
