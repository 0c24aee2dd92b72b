"""Where did it go wrong, in a real (headless) browser, as a person goes: a pipeline with a
planted faulty pass (a test plugin that changes one constant) typed in, its pass checked, the
check's "Find the first wrong value" pressed — the node it broke is selected, coloured as wrong
on both panes and in view, and the inspector shows its inputs' errors; a comparison bisected
from the Compare tab; a pass that raises reduced, the reduced model opened as a model of its
own, its reproduction script downloadable.  Screenshots are saved under the test's tmp folder
(GRAPHLAB_SCREENSHOTS=DIR keeps them elsewhere, to look at)."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.keys import Keys

from benchmarks.journeys import CUT_OFF
from compiler_core.ir import load_model
from compiler_core.plugins import load_plugins
from graphlab.samples import resolve_model

from pane_helpers import pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser

PLUGINS = str(Path(__file__).parent.parent / "broken_passes.py")
load_plugins([PLUGINS], entry_points_too=False)   # the server's builders load it too
BROKEN = next(module for name, module in sys.modules.items()
              if name.startswith("graphlab_plugin_broken_passes"))
MODEL = "bert_tiny_op13"
FAULTY = "eliminate_identity,test_change_one_constant,dce"
WRONG_CLASSES = ("err-3", "err-inf")   # `error_heat`: above the tolerance, incomparable


def run_pipeline(dash_duo, passes: str) -> None:
    """Type the pass list and press Enter, again if the page was still filling the box in
    (its first view arriving) and took the typing back."""
    for _ in range(3):
        box = dash_duo.find_element("#pipeline-passes")
        box.clear()
        box.send_keys(passes, Keys.ENTER)
        try:
            wait_until(dash_duo, lambda: passes.split(",")[-1] in unquote(
                dash_duo.driver.current_url) or dash_duo.find_elements("#nav-message .error"),
                       30)
            return
        except TimeoutException:
            continue
    raise AssertionError(f"the pipeline {passes} did not run")


def click_pass(dash_duo, name: str) -> None:
    """Click the pass's row once the list shows it (the list is redrawn as the run arrives)."""
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(
        "var wanted = arguments[0], row = Array.from(document.querySelectorAll('.pass-row'))"
        "  .find(function (r) { return r.textContent.indexOf(wanted) >= 0; });"
        "if (row) { row.click(); } return !!row;", name), 60, f"no pass row {name}")


def node_state(dash_duo, side: str, node: int) -> dict | None:
    """The node's error class, selection and whether it lies inside the pane's viewport."""
    return pane_js(dash_duo, f"""
        var cy = {side}, n = cy.$id('n{node}');
        if (!n.length) {{ return null; }}
        var e = cy.extent(), p = n.position();
        return {{classes: n.classes(), selected: n.style('overlay-opacity'),
                 fill: n.style('background-color'),
                 seen: p.x > e.x1 && p.x < e.x2 && p.y > e.y1 && p.y < e.y2}};""")


# The load bar's controls show a long value cut at 1280 px (a typed pass list, a long choice):
# their hover and their list show it whole.  Everything else must fit.
CONTROLS = ("#pipeline-passes", "#compare-versus-value", "#model-select-value")


def assert_sound(dash_duo) -> None:
    """No console error and no text cut off by its box (the journeys' checks)."""
    severe = [e for e in dash_duo.driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe[:2]
    cut = [c for c in dash_duo.driver.execute_script(CUT_OFF) if not c.startswith(CONTROLS)]
    assert not cut, f"text cut off: {cut}"


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_failed_check_leads_to_the_node_a_faulty_pass_broke(dash_duo, graphlab_app, shots,
                                                              size):
    broken = load_model(resolve_model(MODEL)).node_by_name(BROKEN.CHANGED_ADD).id
    dash_duo.driver.set_window_size(*size)
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + f"/?model={MODEL}")
    wait_for_nodes(dash_duo)
    run_pipeline(dash_duo, FAULTY)
    click_pass(dash_duo, "2. test_change_one_constant")
    dash_duo.wait_for_contains_text("#pane-after-title", "test_change_one_constant", 60)
    dash_duo.find_element("#numeric-check").click()
    dash_duo.wait_for_contains_text("#numeric-result", "differ from the input model", 60)
    tag = f"{size[0]}x{size[1]}"
    dash_duo.driver.save_screenshot(str(shots / f"wrong-value-{tag}-check.png"))

    dash_duo.find_element("#numeric-result .find-wrong-value").click()
    wait_until(dash_duo, lambda: f"node={broken}" in dash_duo.driver.current_url, 60,
               "the first wrong value's node is not selected")
    assert "overlay=error" in dash_duo.driver.current_url
    for side in ("before", "after"):   # coloured as wrong, selected and in view on both panes
        wait_until(dash_duo, lambda: (node_state(dash_duo, side, broken) or {}).get("seen"), 15,
                   f"the broken node is not in view in the {side} pane")
        shown = node_state(dash_duo, side, broken)
        assert any(c in shown["classes"] for c in WRONG_CLASSES), shown
        assert shown["selected"] == "0.18", shown
    # every node before it in the graph agrees: the pale end of the scale
    painted = pane_js(dash_duo, "return before.nodes('.err-0').length;")
    assert painted > 10
    wait_until(dash_duo, lambda: "first wrong value" in dash_duo.find_element(
        "#inspector").text.lower(), 20, "the inspector says nothing of the first wrong value")
    inspector = dash_duo.find_element("#inspector").text
    assert "constant, changed" in inspector          # the input the pass broke, named
    rows = dash_duo.find_elements("#inspector .input-errors tr")
    computed = next(r.text for r in rows if "MatMul_output_0" in r.text)
    assert " 0 " in f" {computed} "                  # the computed input still agrees
    legend = dash_duo.find_element("#overlay-legend")
    assert legend.is_displayed() and "wrong: above the tolerance" in legend.text
    assert "First wrong value" in dash_duo.find_element("#wrong-value-status").text
    dash_duo.driver.save_screenshot(str(shots / f"wrong-value-{tag}-found.png"))
    assert_sound(dash_duo)

    dash_duo.find_element("#wrong-value-status button").click()   # colours off again
    wait_until(dash_duo, lambda: "overlay=error" not in dash_duo.driver.current_url, 15)
    wait_until(dash_duo, lambda: pane_js(dash_duo, "return before.nodes('.err-0').length;")
               == 0, 15, "the error colours stayed")


def test_the_compare_tab_bisects_two_models(dash_duo, graphlab_app, shots):
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=cnn_bn")
    wait_for_nodes(dash_duo)
    dash_duo.select_dcc_dropdown("#compare-versus", value="onnxruntime extended (its optimized model)")
    dash_duo.wait_for_contains_text("#pane-after-title", "B: onnxruntime extended", 60)
    dash_duo.find_element("#compare-body .find-wrong-value").click()
    dash_duo.wait_for_contains_text("#wrong-value-status", "agrees within", 60)
    assert "overlay=error" in dash_duo.driver.current_url
    counts = pane_js(dash_duo, "return [before.nodes('.err-0, .err-1, .err-2').length, "
                               "before.nodes('.err-3, .err-inf').length, "
                               "after.nodes('.err-0, .err-1, .err-2').length];")
    assert counts[0] > 0 and counts[1] == 0 and counts[2] > 0, counts
    dash_duo.driver.save_screenshot(str(shots / "wrong-value-compare.png"))
    assert_sound(dash_duo)


def test_a_pass_that_raises_is_reduced_and_opens_as_its_own_model(dash_duo, graphlab_app, shots,
                                                                    tmp_path):
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + f"/?model={MODEL}")
    wait_for_nodes(dash_duo)
    run_pipeline(dash_duo, "test_raise_on_erf_after_div")
    dash_duo.wait_for_contains_text("#nav-message", "an Erf after a Div is not handled", 60)
    dash_duo.driver.save_screenshot(str(shots / "reduce-raised.png"))
    dash_duo.find_element("#nav-message .reduce-failure").click()
    wait_until(dash_duo, lambda: "model=reduced-" in dash_duo.driver.current_url, 90,
               "the reduced model did not open")
    dash_duo.wait_for_contains_text("#reduced-model-info", "A reduced model: 286 → 2 nodes", 30)
    dash_duo.wait_for_contains_text("#pane-before-title", "(2 nodes)", 60)
    ops = pane_js(dash_duo, "return before.nodes('.op').map(function (n) {"
                            " return n.data('label').split('\\n')[0]; }).sort();")
    assert ops == ["Div", "Erf"], ops
    # in the model list, and its own URL opens it again
    dash_duo.find_element("#model-select").click()
    wait_until(dash_duo, lambda: dash_duo.driver.find_elements(
        By.XPATH, "//*[contains(text(), '→ 2 nodes')]"), 10,
        "the reduced model is not in the model list")
    ActionChains(dash_duo.driver).send_keys(Keys.ESCAPE).perform()
    url = dash_duo.driver.current_url
    dash_duo.driver.get(dash_duo.server_url + f"/?model={MODEL}")
    wait_for_nodes(dash_duo)
    dash_duo.driver.get(url)
    dash_duo.wait_for_contains_text("#pane-before-title", "(2 nodes)", 60)
    dash_duo.driver.save_screenshot(str(shots / "reduce-opened.png"))

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    dash_duo.driver.execute_cdp_cmd("Page.setDownloadBehavior",
                                    {"behavior": "allow", "downloadPath": str(downloads)})
    dash_duo.find_element("#reduced-model-info button").click()
    script = downloads / "reproduce.py"
    wait_until(dash_duo, script.exists, 20, "the reproduction script was not downloaded")
    text = script.read_text()
    assert "import onnx" in text and "'Erf'" in text and "'Div'" in text
    assert_sound(dash_duo)


def test_a_pass_model_onnxruntime_refuses_is_reduced_from_the_check(dash_duo, graphlab_app,
                                                                     shots):
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + f"/?model={MODEL}")
    wait_for_nodes(dash_duo)
    run_pipeline(dash_duo, f"dce,{BROKEN.Float64ReluClip.name}")
    click_pass(dash_duo, f"2. {BROKEN.Float64ReluClip.name}")
    dash_duo.wait_for_contains_text("#pane-after-title", BROKEN.Float64ReluClip.name, 60)
    dash_duo.find_element("#numeric-check").click()
    dash_duo.wait_for_contains_text("#numeric-runtime", "fails to load at ORT_ENABLE_ALL", 60)
    dash_duo.find_element("#numeric-runtime .reduce-failure").click()
    dash_duo.wait_for_contains_text("#reduce-status", "Reducing", 10)
    wait_until(dash_duo, lambda: "model=reduced-" in dash_duo.driver.current_url, 240,
               "the reduced model did not open")
    dash_duo.wait_for_contains_text("#reduced-model-info", "It still fails: fails to load at "
                                                           "ORT_ENABLE_ALL", 30)
    wait_until(dash_duo, lambda: {"Relu", "Clip"} <= set(pane_js(
        dash_duo, "return before.nodes('.op').map(function (n) {"
                  " return n.data('label').split('\\n')[0]; });") or []), 60,
        "the reduced model's panes do not draw the Relu and the Clip")
    dash_duo.driver.save_screenshot(str(shots / "reduce-onnxruntime.png"))
    assert_sound(dash_duo)
