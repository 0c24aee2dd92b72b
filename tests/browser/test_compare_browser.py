"""Compare with…: a second model beside the loaded one, in a real (headless) browser."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from compiler_core.ir import load_model, save_model
from compiler_core.model_diff import diff_models
from compiler_core.passes import PassManager
from graphlab.samples import resolve_model

from pane_helpers import pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser

QUERY = "/bert/encoder/layer.0/attention/self/query/MatMul"


def open_all_groups(dash_duo) -> None:
    dash_duo.find_element("#groups-expand").click()


def test_choosing_a_sample_draws_both_models_with_their_marks_and_linked_selection(
        dash_duo, graphlab_app):
    a, b = load_model(resolve_model("bert_tiny_op13")), load_model(resolve_model("bert_tiny_dynamo"))
    diff = diff_models(a, b)
    query = a.node_by_name(QUERY).id
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=bert_tiny_op13")
    wait_for_nodes(dash_duo)
    dash_duo.select_dcc_dropdown("#compare-versus", value="bert_tiny_dynamo")
    dash_duo.wait_for_contains_text("#pane-before-title", "A: bert_tiny_op13 (286 nodes)", 30)
    dash_duo.wait_for_contains_text("#pane-after-title", "B: bert_tiny_dynamo (120 nodes)", 10)
    assert "vs=bert_tiny_dynamo" in dash_duo.driver.current_url
    summary = diff.summary()
    dash_duo.wait_for_contains_text(
        "#compare-body", f"{summary['matched']} matched ({summary['identical']} identical", 10)
    open_all_groups(dash_duo)
    wait_until(dash_duo, lambda: pane_js(dash_duo, "return [before.nodes('.removed').length,"
                                                   " after.nodes('.added').length];")
               == [len(diff.only_a), len(diff.only_b)],
               message="the panes do not mark every node found on one side only")
    assert pane_js(dash_duo, "return before.nodes('.added').length + "
                             "after.nodes('.removed').length;") == 0

    # B's node is drawn in A's numbering: a tap on it selects the pair in both panes.
    pane_js(dash_duo, f"after.$id('n{query}').emit('tap');")
    wait_until(dash_duo, lambda: f"node={query}" in dash_duo.driver.current_url)
    dash_duo.wait_for_contains_text("#compare-body", "B: MatMul 'node_MatMul_59'", 10)
    assert f"A: MatMul '{QUERY}'" in dash_duo.find_element("#compare-body").text
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.$id('n{query}').style('overlay-opacity');") == "0.18",
        message="the partner in A is not selected")
    positions = pane_js(dash_duo, f"var a = before.$id('n{query}').position(),"
                                  f" b = after.$id('n{query}').position(); return [a, b];")
    assert positions[0] == positions[1]   # one layout for both models

    dash_duo.find_element("#compare-versus .dash-dropdown-clear").click()   # back to the passes
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 1", 20)
    assert "vs=" not in dash_duo.driver.current_url


def test_a_second_upload_is_compared_with_the_loaded_model(dash_duo, graphlab_app, tmp_path):
    graph = load_model(resolve_model("cnn_bn"))
    optimized = PassManager("O2").run(graph).final
    path = tmp_path / "cnn_bn_O2.onnx"
    save_model(optimized, str(path))
    summary = diff_models(graph, load_model(str(path))).summary()
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=cnn_bn")
    wait_for_nodes(dash_duo)
    dash_duo.driver.find_element(By.CSS_SELECTOR, "#compare-upload input[type=file]").send_keys(
        str(path))
    dash_duo.wait_for_contains_text("#pane-after-title", "B: cnn_bn_O2.onnx", 30)
    dash_duo.wait_for_contains_text("#compare-versus", "uploaded: cnn_bn_O2.onnx", 10)
    dash_duo.wait_for_contains_text(
        "#compare-body", f"{summary['only_a']} only in A (left, red), {summary['only_b']} "
                         f"only in B", 10)
    assert "graphlab.FusedConv" in dash_duo.find_element("#compare-body").text


def test_graphlab_output_beside_onnxruntime_from_the_url(dash_duo, graphlab_app):
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url
                        + "/?model=cnn_bn&vs=onnxruntime%3Aextended&vsout=1&panel=compare")
    wait_for_nodes(dash_duo, timeout=60)
    dash_duo.wait_for_contains_text("#pane-before-title", "A: cnn_bn after O2", 30)
    dash_duo.wait_for_contains_text("#pane-after-title", "B: onnxruntime extended", 10)
    body = dash_duo.find_element("#compare-body").text
    assert "com.microsoft.FusedConv" in body and "graphlab.FusedConv" in body
    assert dash_duo.find_element("#compare-after input").is_selected()
    assert "passes" not in dash_duo.find_element("#pipeline-passes").get_attribute("value")
