"""The patterns tab's onnxscript rules in a real (headless) browser: refused by a shared server,
judged by onnxscript and lit on the graph with ``serve --allow-code``."""

from __future__ import annotations

import pytest

from compiler_core.ir import load_model
from graphlab.app import AppConfig, create_app
from graphlab.samples import resolve_model

from pane_helpers import pane_js, wait_for_nodes, wait_until
from passes_helpers import o2_position

pytestmark = pytest.mark.browser
pytest.importorskip("onnxscript")

GELU_RULES = "onnxscript.rewriter.ort_fusions.gelu"


def test_a_shared_server_refuses_module_names(dash_duo, graphlab_app):
    dash_duo.start_server(graphlab_app)
    # recognize_gelu: the pass whose own patterns stay shown
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_gelu&panel=patterns&pass="
                        f"{o2_position('recognize_gelu')}")
    wait_for_nodes(dash_duo)
    field = dash_duo.wait_for_element("#onnxscript-rules-field", timeout=10)
    field.send_keys(GELU_RULES + "\n")
    dash_duo.wait_for_contains_text("#onnxscript-rules-body",
                                    "this server does not load Python modules", timeout=10)
    assert "graphlab serve --allow-code" in dash_duo.find_element("#onnxscript-rules-body").text
    assert "rules=" in dash_duo.driver.current_url            # the view says what was asked
    assert dash_duo.find_elements(".pattern-item.match")      # the pass's patterns still shown


def test_with_allow_code_the_verdicts_show_and_a_site_lights_the_graph(dash_duo, tmp_path):
    app = create_app(AppConfig(cache_dir=str(tmp_path / "sessions"), allow_code=True))
    dash_duo.start_server(app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_gelu&panel=patterns&pass=1")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_element("#onnxscript-rules-field", timeout=10).send_keys(GELU_RULES)
    dash_duo.find_element("#onnxscript-rules-run").click()
    dash_duo.wait_for_contains_text("#onnxscript-rules-body", "GeluErfFusion", timeout=60)
    body = dash_duo.find_element("#onnxscript-rules-body").text
    assert "1 matched" in body
    graph = load_model(resolve_model("teach_gelu"))
    [match] = dash_duo.find_elements("#onnxscript-rules-body .pattern-item.match")
    root = match.text.split()[1]                     # "✓ gelu_good_mul2  (5 nodes)"
    match.click()
    dash_duo.wait_for_contains_text("#onnxscript-rules-body .focus.match", "GeluErfFusion: match",
                                    timeout=10)
    assert "highlight=rule-match" in dash_duo.driver.current_url.replace("hl=", "highlight=")
    lit = f"n{graph.node_by_name(root).id}"
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return after.getElementById('{lit}').style('border-color');")
        == "rgb(28,126,214)", message="the matched node is not lit in the panes")
