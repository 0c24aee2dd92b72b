"""A declined rewrite in the browser, found the way a person finds it: open the model, pick the
pass in the stepper, open the Patterns tab, click the decline; the node that refused the
rewrite is drawn and highlighted as the blocking consumer."""

from __future__ import annotations

from compiler_core.ir import load_model
from graphlab.app import AppConfig, create_app
from graphlab.samples import resolve_model as sample_path
from decline_models import BLOCKING, DECLINED_ROOT, write_declined_attention
from pane_helpers import pane_js, wait_for_nodes, wait_until

PASS = "fuse_attention"


def test_clicking_a_decline_highlights_the_node_that_blocked_it(dash_duo, tmp_path):
    path = write_declined_attention(tmp_path)
    app = create_app(AppConfig(cache_dir=str(tmp_path / "sessions"), extra_model_path=path))
    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1600, 1000)
    dash_duo.driver.get(dash_duo.server_url + "/?model=declined_attention.onnx")
    wait_for_nodes(dash_duo)

    rows = dash_duo.find_elements(".pass-row")
    row = next(r for r in rows if r.text.splitlines()[0].endswith(f". {PASS}"))
    number = row.text.split(".")[0]
    row.click()
    dash_duo.wait_for_contains_text("#pane-before-title", f"Before pass {number}", timeout=20)
    dash_duo.find_element("#side-tabs > div:nth-child(2)").click()   # the Patterns tab
    dash_duo.wait_for_contains_text("#patterns", f"Patterns in pass {number}: {PASS}",
                                    timeout=20)
    dash_duo.wait_for_contains_text(".judged-graph", f"({PASS}) receives", timeout=10)

    dash_duo.wait_for_element_by_css_selector(".pattern-item.decline", timeout=10)
    [decline] = dash_duo.find_elements(".pattern-item.decline")
    assert decline.text.startswith(f"✗ {DECLINED_ROOT}: Mul output has another consumer")
    assert decline.text.endswith(f"(blocked by {BLOCKING})")
    decline.click()
    dash_duo.wait_for_contains_text(".focus.decline", f"declined at {DECLINED_ROOT}", timeout=10)
    assert BLOCKING in dash_duo.find_element(".focus.decline").text
    assert "hl=decline%3A0%3A0" in dash_duo.driver.current_url

    graph = load_model(path)
    blocking = f"n{graph.node_by_name(BLOCKING).id}"
    site = f"n{graph.node_by_name(DECLINED_ROOT).id}"
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.getElementById('{blocking}').style('border-style');")
        == "dashed", message="the blocking consumer is not highlighted")
    colours = pane_js(dash_duo, f"return [before.getElementById('{blocking}').style("
                                f"'border-color'), before.getElementById('{site}').style("
                                f"'border-color')];")
    assert colours == ["rgb(194,37,92)", "rgb(232,89,12)"]
    # drawn: visible (not inside a closed group) and brought into the pane's view, though the
    # graph is taller than the pane and it sits near the bottom
    in_view = (f"var n = before.getElementById('{blocking}');"
               "var box = n.renderedBoundingBox(), c = before.container();"
               "return n.visible() && box.w > 0 && box.x2 > 0 && box.y2 > 0 &&"
               " box.x1 < c.clientWidth && box.y1 < c.clientHeight;")
    wait_until(dash_duo, lambda: pane_js(dash_duo, in_view),
               message="the blocking consumer is not drawn in view")
    assert pane_js(dash_duo, f"return before.getElementById('{blocking}').hasClass('hl-blocking');")
    wait_until(dash_duo, lambda: pane_js(dash_duo, both_in_view(blocking)),
               message="the declined site or its blocker is cut at the pane's edge")


def both_in_view(blocking: str) -> str:
    """The declined site and its blocker both wholly in the left pane when they fit in it at
    its zoom (else the blocker), not cut at its edge."""
    return (f"var c = before.container(), lit = before.nodes('.hl-failed, .hl-blocking');"
            f"var inside = function (b) {{ return b.x1 >= -1 && b.y1 >= -1 &&"
            f" b.x2 <= c.clientWidth + 1 && b.y2 <= c.clientHeight + 1; }};"
            f"var all = lit.renderedBoundingBox();"
            f"var fits = all.w <= c.clientWidth && all.h <= c.clientHeight;"
            f"return lit.length === 2 && inside(before.getElementById('{blocking}')"
            f".renderedBoundingBox()) && (!fits || inside(all));")


def test_a_teaching_samples_decline_shows_the_site_and_its_blocker_whole(dash_duo, tmp_path):
    """teach_conv_bn opens on fold_batchnorm; its decline at bn_shared, clicked, brings the
    BatchNormalization and the Relu that blocks it into view together."""
    app = create_app(AppConfig(cache_dir=str(tmp_path / "sessions")))
    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1600, 1000)
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_conv_bn")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_contains_text("#pane-before-title", "fold_batchnorm", timeout=20)
    dash_duo.find_element("#side-tabs > div:nth-child(2)").click()   # the Patterns tab
    dash_duo.wait_for_element_by_css_selector(".pattern-item.decline", timeout=10)
    dash_duo.find_elements(".pattern-item.decline")[0].click()
    dash_duo.wait_for_contains_text(".focus.decline", "declined at bn_shared", timeout=10)
    blocking = f"n{load_model(sample_path('teach_conv_bn')).node_by_name('relu_side').id}"
    wait_until(dash_duo, lambda: pane_js(dash_duo, both_in_view(blocking)),
               message="the declined site or its blocker is cut at the pane's edge")
