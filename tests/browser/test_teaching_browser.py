"""Teaching samples in a real browser: picked from the list they open on the pass they teach;
a modified node says in the inspector what changed; the marks of a modified node and of a
near miss differ by more than a hue; collapsed groups take the intensity overlay."""

from __future__ import annotations

import os

import pytest

from compiler_core.ir import load_model
from graphlab import samples
from graphlab.app import AppConfig, create_app

from pane_helpers import pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "sample_models")


@pytest.fixture
def teaching_app(tmp_path, monkeypatch):
    """The app reading this checkout's manifest (which names each teaching sample's pass)."""
    monkeypatch.setattr(samples, "samples_dir", lambda: SAMPLES)
    samples.list_samples.cache_clear()
    yield create_app(AppConfig(cache_dir=str(tmp_path / "sessions")))
    samples.list_samples.cache_clear()


def node_id(sample: str, name: str) -> int:
    return load_model(os.path.join(SAMPLES, f"{sample}.onnx")).node_by_name(name).id


def test_a_teaching_sample_picked_from_the_list_opens_on_its_pass(dash_duo, teaching_app):
    dash_duo.start_server(teaching_app)
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_contains_text("#pane-after-title", "eliminate_identity", timeout=30)
    dash_duo.select_dcc_dropdown("#model-select", value="teach_layernorm")
    dash_duo.wait_for_contains_text("#model-select", "teach_layernorm", timeout=10)
    dash_duo.wait_for_contains_text("#pane-after-title", "recognize_layernorm", timeout=60)
    assert "recognize_layernorm" in dash_duo.find_element("#pane-before-title").text
    marks = "return [before.nodes('.removed').length, after.nodes('.added').length];"
    wait_until(dash_duo, lambda: pane_js(dash_duo, marks) == [9, 1], 30,
               "the LayerNorm's nodes are not marked removed and its fused op added")
    selected = dash_duo.find_element(".pass-row.selected").text
    assert "recognize_layernorm" in selected and "18 → 10 nodes" in selected


def test_a_modified_node_says_what_changed_and_looks_unlike_a_near_miss(dash_duo,
                                                                        teaching_app):
    dash_duo.start_server(teaching_app)
    pow_id = node_id("teach_layernorm", "ln_wrongaxis_pow")
    dash_duo.driver.get(dash_duo.server_url + f"/?model=teach_layernorm&pass=13&node={pow_id}")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_contains_text("#pane-after-title", "cse", timeout=30)
    dash_duo.wait_for_element_by_css_selector("#inspector .node-changes", timeout=15)
    assert "modified by this pass (cse): input 1 (Y) changed" in \
        dash_duo.find_element("#inspector").text
    assert dash_duo.find_element("#inspector .node-changes").text == (
        "input 1 (Y) 'ln_wrongaxis_two' (weight float32[]) → 'ln_good_two' (weight float32[])")
    other = node_id("teach_layernorm", "ln_wrongaxis_add_eps")   # modified, not selected
    modified = pane_js(dash_duo, f"var n = after.getElementById('n{other}');"
                                 "return [n.hasClass('modified'), n.style('border-color')];")
    assert modified == [True, "rgb(12,133,153)"]          # teal, not the near miss's orange

    # the near miss of recognize_layernorm: its failing node is orange and chamfered
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_layernorm&panel=patterns")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_element_by_css_selector(".pattern-item.miss", timeout=15)
    dash_duo.find_elements(".pattern-item.miss")[0].click()
    dash_duo.wait_for_element_by_css_selector(".focus.miss", timeout=10)
    failed = wait_until(dash_duo, lambda: pane_js(
        dash_duo, "var n = before.nodes().filter(function (x) {"
                  " return x.style('shape') === 'cut-rectangle'; });"
                  "return n.length ? [n[0].style('border-color'), n[0].hasClass('modified')]"
                  " : null;"), message="no node drawn as a near miss's failing node")
    assert failed == ["rgb(232,89,12)", False]


def test_collapsed_groups_take_the_intensity_overlay(dash_duo, teaching_app):
    dash_duo.start_server(teaching_app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=bert_tiny_op13&overlay=intensity")
    wait_for_nodes(dash_duo, timeout=60)
    dash_duo.find_element("#groups-collapse").click()
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, "return before.nodes('.collapsed').length;") > 0, 20,
        "closing all groups drew no collapsed group")
    banded = pane_js(dash_duo, "return before.nodes('.collapsed').map(function (n) {"
                               " return n.classes().filter(function (c) {"
                               "  return c.indexOf('ai-') === 0; }).length; });")
    assert banded and all(count == 1 for count in banded)
    fills = pane_js(dash_duo, "return before.nodes('.collapsed').map(function (n) {"
                              " return n.style('background-color'); });")
    assert "rgb(228,231,235)" not in fills      # the plain group grey is gone
