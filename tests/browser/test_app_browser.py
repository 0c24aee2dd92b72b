"""The pass debugger in a real (headless) browser."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from compiler_core.ir import load_model
from graphlab.samples import resolve_model

import bad_models
from pane_helpers import pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser


def node_id(sample: str, name: str) -> int:
    return load_model(resolve_model(sample)).node_by_name(name).id


def test_default_sample_opens_on_the_first_pass_that_changed_it(started):
    dash_duo = started
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 2", timeout=10)
    dash_duo.wait_for_contains_text("#pane-after-title", "After pass 2", timeout=10)
    counts = pane_js(dash_duo, "return [before.nodes('.op').length, after.nodes('.op').length];")
    assert counts[0] >= 15 and counts[1] >= 15
    wait_until(dash_duo, lambda: pane_js(dash_duo, "return before.nodes('.removed').length;") == 2,
               message="the first view does not show the identity pass's removed nodes")
    assert dash_duo.find_element("#bindings-input").get_attribute("value") == "batch=1"
    assert dash_duo.find_element("#bindings-source").text == "(representative)"


def test_the_page_runs_the_browsers_own_trim_and_parse_float(started):
    """Dash's Babel polyfill replaced them with versions 25-40x slower; the page loads the
    regenerator runtime in its place, so they stay the browser's own.  A fresh frame's
    Function.prototype.toString shows a polyfill's source, not native code."""
    dash_duo = started
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 2", timeout=10)
    sources = dash_duo.driver.execute_script("""
        var frame = document.createElement('iframe'); document.body.appendChild(frame);
        var show = frame.contentWindow.Function.prototype.toString;
        var out = [String.prototype.trim, window.parseFloat, window.parseInt, Number.parseFloat]
          .map(function (f) { return show.call(f); });
        frame.remove();
        return out;""")
    assert all("[native code]" in source for source in sources), sources
    assert dash_duo.driver.execute_script("return ' 2.5px '.trim() + parseFloat('2.5px');") \
        == "2.5px2.5"


def test_a_mount_resets_only_render_records_that_exist(started):
    """A freshly drawn component's reset reaches the store only when there is a record under
    its place to remove (assets/quiet_mounts.js); one that has a record still removes it."""
    dash_duo = started
    dash_duo.find_element("#pane-before-title")
    nothing, removed, records = dash_duo.driver.execute_script("""
        var store = window.store, before = store.getState().layoutHashes;
        store.dispatch({type: 'RESET_COMPONENT_STATE', payload: {itempath: ['nowhere']}});
        var nothing = store.getState().layoutHashes === before;
        var key = Object.keys(before)[0];
        store.dispatch({type: 'RESET_COMPONENT_STATE', payload: {itempath: key.split(',')}});
        return [nothing, !(key in store.getState().layoutHashes), Object.keys(before).length];
        """)
    assert records > 0   # the first render recorded updates (the panes' elements at least)
    assert nothing, "a reset with nothing to remove reached the store"
    assert removed, "a reset with a record to remove did not remove it"


def test_stepping_changes_panes_and_diff_and_back_restores(started):
    dash_duo = started
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 2", timeout=10)
    dash_duo.find_element("#step-next").click()
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 3", timeout=10)
    wait_until(dash_duo, lambda: pane_js(dash_duo, "return before.nodes('.removed').length;") == 0)
    assert "pass=3" in dash_duo.driver.current_url
    dash_duo.find_element("body").send_keys(Keys.ARROW_LEFT)
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 2", timeout=10)
    wait_until(dash_duo, lambda: pane_js(dash_duo, "return before.nodes('.removed').length;") == 2,
               message="the identity pass's removed nodes are not marked")
    assert pane_js(dash_duo, "return after.nodes('.removed').length;") == 0
    dash_duo.driver.back()
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 3", timeout=10)


def test_the_bindings_box_shows_representative_sizes_until_you_type_yours(started):
    dash_duo = started
    box = dash_duo.find_element("#bindings-input")
    wait_until(dash_duo, lambda: box.get_attribute("value") == "batch=1",
               message="the bindings box does not show the sample's sizes")
    assert dash_duo.find_element("#bindings-source").text == "(representative)"
    assert "batch: the sample's usual size" in dash_duo.find_element(
        "#bindings-field").get_attribute("title")
    dash_duo.clear_input(box)
    box.send_keys("batch=3" + Keys.ENTER)
    wait_until(dash_duo, lambda: dash_duo.find_element("#bindings-source").text == "(yours)",
               timeout=30, message="typed sizes are not shown as the user's")
    assert "bind=batch%3D3" in dash_duo.driver.current_url


def test_checking_a_pass_numerically_says_it_still_computes_the_same(started):
    dash_duo = started
    dash_duo.wait_for_contains_text("#numeric-result", "not checked yet", timeout=10)
    dash_duo.find_element("#step-next").click()
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 3", timeout=10)
    dash_duo.find_element("#numeric-check").click()
    dash_duo.wait_for_contains_text("#numeric-result", "✓ after pass 3", timeout=30)
    assert "onnxruntime on generated inputs" in dash_duo.find_element("#numeric-result").text
    assert dash_duo.find_element("#numeric-runtime").text.startswith(
        "✓ as users load it: the model loads and runs in onnxruntime at ORT_ENABLE_ALL")
    dash_duo.find_element("#step-next").click()            # a pass nobody has checked yet
    dash_duo.wait_for_contains_text("#numeric-result", "not checked yet", timeout=10)

def test_near_miss_shows_reason_and_highlights_blocking_consumer(dash_duo, graphlab_app):
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_conv_bn&panel=patterns")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_element_by_css_selector(".pattern-item.miss", timeout=10)
    misses = dash_duo.find_elements(".pattern-item.miss")
    next(m for m in misses if m.text.startswith("bn_shared")).click()
    dash_duo.wait_for_contains_text(".focus.miss", "Conv output has another consumer", timeout=10)
    focus = dash_duo.find_element(".focus.miss").text
    assert "relu_side" in focus and "conv_shared" in focus
    blocking = f"n{node_id('teach_conv_bn', 'relu_side')}"
    failed = f"n{node_id('teach_conv_bn', 'conv_shared')}"
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.getElementById('{blocking}').style('border-style');")
        == "dashed", message="the blocking consumer is not highlighted")
    colours = pane_js(dash_duo, f"return [before.getElementById('{blocking}').style('border-color'),"
                                f" before.getElementById('{failed}').style('border-color')];")
    assert colours == ["rgb(194,37,92)", "rgb(232,89,12)"]
    # the page made the view: the address names the item (a link reproduces it), and Back
    # lets it go
    search = dash_duo.driver.execute_script("return window.location.search;")
    assert "hl=miss" in search and "panel=patterns" in search
    dash_duo.driver.back()
    wait_until(dash_duo, lambda: not dash_duo.find_elements(".focus.miss"),
               message="Back did not let the near miss go")
    assert pane_js(dash_duo, f"return before.getElementById('{blocking}').hasClass('hl-blocking');") \
        is False


def test_bad_upload_shows_an_error_and_the_app_keeps_working(started, tmp_path):
    dash_duo = started
    bad = tmp_path / "not_a_model.onnx"
    bad.write_bytes(b"this is not an onnx model")
    dash_duo.driver.find_element(By.CSS_SELECTOR, "#model-upload input[type=file]").send_keys(
        str(bad))
    dash_duo.wait_for_contains_text("#upload-message", "Upload refused", timeout=15)
    dash_duo.find_element("#step-next").click()
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 3", timeout=10)
    wait_for_nodes(dash_duo)


def test_a_model_and_its_external_data_file_upload_together(started, tmp_path):
    dash_duo = started
    model, data = bad_models.saved_with_external_data(tmp_path, "two_files")
    dash_duo.driver.find_element(By.CSS_SELECTOR, "#model-upload input[type=file]").send_keys(
        f"{model}\n{data}")
    dash_duo.wait_for_contains_text("#pane-before-title", "(2 nodes)", timeout=30)
    assert dash_duo.find_element("#model-select").text == "uploaded model"
    assert dash_duo.find_element("#upload-message").text == ""
    wait_until(dash_duo, lambda: dash_duo.find_element("#bindings-input").get_attribute(
        "placeholder") == "no symbolic dims", message="the bindings box keeps another model's dims")
    assert dash_duo.driver.execute_script(   # the whole box in its field, its hint not cut
        "var box = document.querySelector('#bindings-input').getBoundingClientRect();"
        "var field = document.querySelector('#bindings-field').getBoundingClientRect();"
        "return box.right <= field.right + 0.5;")


# The model list's "uploaded model" entry as the page holds it (its props in Dash's store).
UPLOADED_ENTRY = """var s = window.store.getState(), node = s.layout;
s.paths.strs['model-select'].forEach(function (key) { node = node[key]; });
return node.props.options.filter(function (o) { return o.value === 'upload'; })[0];"""


def test_a_page_load_asks_for_nothing_the_layout_shows(dash_duo, graphlab_app):
    """What the first view would only set to what the layout shows is not asked for: the
    Compare list and choice, the inspector's hint and its edit controls with no node
    selected.  The model list is asked once (the view may open a reduced model it must list).
    The stores of this tab's uploads asked for both lists again as they mounted."""
    import flask

    asked = []

    @graphlab_app.server.before_request
    def note_callback():
        if flask.request.path.endswith("_dash-update-component"):
            asked.append(flask.request.get_json()["output"])

    dash_duo.start_server(graphlab_app)
    wait_for_nodes(dash_duo)
    dash_duo.driver.execute_script("sessionStorage.clear();")   # a tab that kept nothing
    asked.clear()
    dash_duo.driver.get(dash_duo.server_url + "/?model=cnn_bn")
    wait_for_nodes(dash_duo)
    assert any("pane-before-update" in output for output in asked), asked
    lists = [output for output in asked if ".options" in output]
    assert len(lists) == 1 and "model-select.options" in lists[0], asked
    shown = ("compare-versus.value", "inspector.children", "edit-controls.children")
    assert not [output for output in asked if any(part in output for part in shown)], asked
    assert "Click a node" in dash_duo.find_element("#inspector").text
    assert dash_duo.find_element("#latency-result").text == "not measured yet"


def test_another_model_lets_the_inspected_node_go_and_the_hint_comes_back(dash_duo,
                                                                            graphlab_app):
    """The inspector hears no view without a node until it has shown one; it hears the one
    that lets a node go (here another model chosen), so it never keeps the old node."""
    conv = node_id("teach_conv_bn", "conv_shared")
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + f"/?model=teach_conv_bn&pass=3&node={conv}")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_contains_text("#inspector", "conv_shared", timeout=20)
    dash_duo.find_element("#model-select").click()
    option = next(o for o in dash_duo.find_elements("[role=option]")
                  if o.text.split() and o.text.split()[0] == "teach_gelu")
    option.click()
    dash_duo.wait_for_contains_text("#pane-before-title", "nodes", timeout=30)
    wait_until(dash_duo, lambda: "Click a node" in dash_duo.find_element("#inspector").text,
               message="the inspector kept the node of the model before")
    assert "conv_shared" not in dash_duo.find_element("#inspector").text


def test_an_upload_is_offered_again_after_a_reload(started):
    """What this browser tab uploaded stays in the model list when the page is reloaded."""
    dash_duo = started
    assert dash_duo.driver.execute_script(UPLOADED_ENTRY)["disabled"] is True
    dash_duo.driver.find_element(By.CSS_SELECTOR, "#model-upload input[type=file]").send_keys(
        str(resolve_model("teach_gelu")))
    dash_duo.wait_for_contains_text("#model-select", "uploaded model", timeout=30)
    dash_duo.driver.refresh()
    wait_for_nodes(dash_duo)
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(UPLOADED_ENTRY)["disabled"]
               is False, message="the reloaded page forgot this tab's upload")
    assert dash_duo.driver.execute_script(UPLOADED_ENTRY)["title"] == "teach_gelu.onnx"


def test_url_with_state_restores_the_view(dash_duo, graphlab_app):
    conv = node_id("teach_conv_bn", "conv_shared")
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + f"/?model=teach_conv_bn&pass=3&node={conv}")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_contains_text("#pane-before-title", "Before pass 3", timeout=10)
    dash_duo.wait_for_contains_text("#inspector", "conv_shared", timeout=10)
    dash_duo.wait_for_contains_text("#model-select", "teach_conv_bn", timeout=10)
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return after.getElementById('n{conv}').style('overlay-opacity');") == "0.18",
        message="the selected node is not highlighted in the other pane")


def test_a_build_that_lost_its_builder_offers_to_try_again(dash_duo, tmp_path):
    from graphlab.app import AppConfig, create_app
    from graphlab.app.builds import BuildStatus
    from graphlab.app.services import Services

    config = AppConfig(cache_dir=str(tmp_path / "sessions"))
    services = Services.from_config(config)
    workbench = services.workbench
    lost = workbench.job(workbench.source("teach_gelu"), "O1", {})
    workbench.builds.publish(BuildStatus(lost.key, "teach_gelu", "failed", retry=True, message=(
        "the build lost its worker 2 times (killed, or out of memory: pid 4242 on build-2) "
        "and was not tried again")))
    dash_duo.start_server(create_app(config))
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_gelu&pipeline=O1")
    dash_duo.wait_for_contains_text("#nav-message", "teach_gelu: the build lost its worker 2 "
                                                    "times", timeout=15)
    wait_for_nodes(dash_duo)   # the view stayed usable: the default model is shown
    dash_duo.driver.save_screenshot(str(tmp_path / "try_again.png"))   # to look at
    retry = dash_duo.find_element("#nav-message button")
    assert retry.text == "Try again"
    retry.click()
    dash_duo.wait_for_contains_text("#model-select", "teach_gelu", timeout=30)
    wait_until(dash_duo, lambda: dash_duo.find_element("#nav-message").text == "",
               message="the failure stayed on the page after the view was built")
    assert "pipeline=O1" in dash_duo.driver.current_url
