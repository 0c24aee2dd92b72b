"""Regenerate the screenshots of docs/app.md:  python tests/browser/screenshots.py docs/img

Starts the app in-process, drives headless Chromium through the main views and saves PNGs.
A large model (e.g. the BERT-base export of make_samples.py --large) may be given with --large.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import threading
import time
from urllib.parse import quote_plus

from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait
from werkzeug.serving import make_server

from compiler_core.ir import load_model
from compiler_core.patterns.text import example_text
from graphlab.app import AppConfig, create_app
from graphlab.samples import resolve_model, size_hints

from pane_helpers import chart_js

DRAWN = ("var p = window.graphlabPanes; return !!p && p.before.nodes().length > 0 "
         "&& p.after.nodes().length > 0;")
# Zoomed out on the open group with the most collapsed children (BERT's encoder), from its top.
STACK_OVERVIEW = """
var cy = window.graphlabPanes.before, zoom = 0.28;
var inside = function (g) { return cy.nodes('.collapsed').filter(function (c) {
  return c.data('within') === g.id(); }).length; };
var stack = cy.nodes('.group').max(inside).ele;
var box = stack.boundingBox();
cy.viewport({zoom: zoom, pan: {x: cy.width() / 2 - zoom * (box.x1 + box.x2) / 2,
                               y: 12 - zoom * box.y1}});
"""


def node_id(model: str, name: str) -> int:
    return load_model(resolve_model(model)).node_by_name(name).id


def first_pass(model: str, wanted) -> tuple[int, object]:
    """(1-based pass number, snapshot) of the first pass of the default pipeline that ``wanted``
    accepts, compiled as the app compiles it: presets change as passes are added, so views
    are found by what they show."""
    from compiler_core.compilation import compile_model

    result = compile_model(load_model(resolve_model(model)), "O2", size_hints=size_hints(model))
    snapshot = next(s for s in result.snapshots if wanted(s))
    return snapshot.index + 1, snapshot


def fused_added(snapshot) -> int:
    return next(i for i in snapshot.diff.added if snapshot.graph.node_by_id(i).body is not None)


class Browser:
    def __init__(self, base_url: str, out_dir: str):
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--window-size=1600,900",
                     "--hide-scrollbars"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(options=options)
        self.base_url = base_url
        self.out_dir = out_dir

    def show(self, query: str) -> None:
        self.driver.get(self.base_url + query)
        WebDriverWait(self.driver, 120).until(lambda d: d.execute_script(DRAWN))
        time.sleep(1.5)

    def run(self, script: str) -> None:
        self.driver.execute_script(script)
        time.sleep(1.5)

    def wait_for_plot(self, graph_id: str) -> None:
        WebDriverWait(self.driver, 60).until(
            lambda d: chart_js(d, graph_id, "return gd.data.length > 0;"))
        time.sleep(1.5)

    def save(self, name: str, element: str | None = None) -> None:
        path = os.path.join(self.out_dir, name)
        if element:
            self.driver.find_element("css selector", element).screenshot(path)
        else:
            self.driver.save_screenshot(path)
        print("wrote", path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--large", help="a large .onnx model for the grouping screenshot")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.makedirs(args.out_dir, exist_ok=True)
    config = AppConfig(cache_dir=tempfile.mkdtemp(prefix="graphlab-shots-"),
                       extra_model_path=os.path.abspath(args.large) if args.large else None)
    server = make_server("127.0.0.1", 0, create_app(config).server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = Browser(f"http://127.0.0.1:{server.server_port}/", args.out_dir)
    try:
        identity = node_id("cnn_bn", "Identity_1")   # the first view: the first changed pass
        browser.show(f"?model=cnn_bn&node={identity}")
        browser.run("document.getElementById('numeric-check').click()")
        WebDriverWait(browser.driver, 60).until(lambda d: d.execute_script(
            "return document.getElementById('numeric-result').textContent.includes('after')"))
        browser.save("overview.png")

        browser.show("?model=teach_conv_bn&panel=patterns")
        browser.run("Array.from(document.querySelectorAll('.pattern-item.miss'))"
                    ".find(b => b.textContent.startsWith('bn_shared')).click()")
        browser.save("near_miss.png")

        step, snapshot = first_pass("bert_tiny_op13", lambda s: s.pass_name == "fuse_attention")
        attention = fused_added(snapshot)
        browser.show(f"?model=bert_tiny_op13&pass={step}&node={attention}")
        browser.save("fusion.png")
        browser.run("document.querySelector('[id*=open-body]').click()")
        browser.run(f"var p = window.graphlabPanes; p.after.fit(p.after.$('#n{attention}'), 20)")
        browser.save("fused_body.png")

        chart_panels(browser)
        pattern_editor(browser)

        query = node_id("bert_tiny_op13", "/bert/encoder/layer.0/attention/self/query/MatMul")
        browser.show(f"?model=bert_tiny_op13&vs=bert_tiny_dynamo&panel=compare&node={query}")
        browser.save("compare.png")

        if args.large:
            step, _ = first_pass(args.large, lambda s: s.pass_name == "fuse_attention")
            browser.show(f"?pass={step}")
            browser.run(STACK_OVERVIEW)
            browser.save("large_model.png")
    finally:
        browser.driver.quit()
        server.shutdown()


def chart_panels(browser: Browser) -> None:
    """roofline.png, memory.png, systolic.png: each chart panel beside the panes it explains."""
    browser.driver.set_window_size(1600, 1050)
    step, snapshot = first_pass("bert_tiny_op13", lambda s: s.pass_name == "fuse_attention")
    browser.show(f"?model=bert_tiny_op13&pass={step}"
                 f"&node={fused_added(snapshot)}&panel=roofline&cmp=1&overlay=intensity")
    browser.wait_for_plot("roofline-graph")
    browser.save("roofline.png")
    browser.driver.set_window_size(1600, 1500)   # the traffic story under the roofline
    browser.wait_for_plot("roofline-traffic")
    browser.save("traffic.png", element="#roofline")
    browser.driver.set_window_size(1600, 1050)

    step, _ = first_pass("cnn_bn", lambda s: s.pass_name == "fold_batchnorm" and s.changed)
    browser.show(f"?model=cnn_bn&pass={step}&panel=memory&cmp=1")
    browser.wait_for_plot("memory-before-graph")
    browser.save("memory.png")

    step, snapshot = first_pass("cnn_bn", lambda s: s.pass_name == "fuse_linear_bias_act")
    browser.driver.set_window_size(1600, 1720)   # the whole panel, saved on its own
    browser.show(f"?model=cnn_bn&pass={step}&node={fused_added(snapshot)}&panel=systolic"
                 "&array=16x16&flow=ws")
    browser.wait_for_plot("systolic-heatmap")
    browser.run("dash_clientside.set_props('systolic-fold', {value: 2})")
    browser.run("dash_clientside.set_props('systolic-cycle', {value: 24})")
    browser.save("systolic.png", element="aside.side")
    browser.driver.set_window_size(1600, 900)
    systolic_memory(browser)


def systolic_memory(browser: Browser) -> None:
    """systolic_memory.png: cnn_bn's second convolution starved of memory (1 kB SRAMs, one
    word per cycle), fold 2 waiting for its tiles: the array, its SRAM halves, the DRAM
    traffic."""
    step, snapshot = first_pass("cnn_bn", lambda s: s.pass_name == "fuse_linear_bias_act")
    node = snapshot.graph.node_by_name("/block2/block2.2/FusedConv").id
    small = quote_plus("ifmap=1,filter=1,ofmap=1")
    browser.driver.set_window_size(1600, 1250)
    browser.show(f"?model=cnn_bn&pass={step}&node={node}&panel=systolic&array=16x16"
                 f"&sram={small}&bw={small}")
    browser.wait_for_plot("systolic-heatmap")
    browser.run("dash_clientside.set_props('systolic-fold', {value: 2})")
    browser.wait_for_plot("systolic-dram")
    browser.run("document.getElementById('systolic-heatmap').scrollIntoView()")
    browser.save("systolic_memory.png", element="aside.side")
    browser.driver.set_window_size(1600, 900)


def pattern_editor(browser: Browser) -> None:
    """pattern_editor.png: the LayerNorm example on teach_layernorm, its near miss clicked."""
    browser.driver.set_window_size(1600, 1000)
    text = quote_plus(example_text("LayerNorm"))
    browser.show(f"?model=teach_layernorm&pass=1&panel=editor&pat={text}&hl=edit-miss:0:0")
    WebDriverWait(browser.driver, 60).until(lambda d: d.execute_script(
        "var f = document.querySelector('.focus.miss'); return !!f;"))
    browser.run("var p = window.graphlabPanes; p.before.fit(undefined, 20); "
                "p.after.fit(undefined, 20);")
    browser.save("pattern_editor.png")
    browser.driver.set_window_size(1600, 900)


if __name__ == "__main__":
    main()
