"""Groups in a real browser: on a large graph a collapsed group opens in place, pushing its
neighbours aside, and closes again, both panes keeping every box at the same place; an opened
fused body pushes its neighbours aside too; the group holding the selection can be closed."""

from __future__ import annotations

import time

import onnx
import pytest

from benchmarks.app import generated_model
from compiler_core.ir import load_model
from compiler_core.passes import PassManager
from graphlab.app import AppConfig, create_app
from graphlab.samples import resolve_model

from pane_helpers import pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser

STACK = "g:/model/layers"
LAYER = f"{STACK}/layer.3"
OVERLAPS = """
var cy = %s, item = cy.getElementById('%s');
var mine = item.boundingBox({includeLabels: false});
function inside(node) {   // drawn in the item's frame, at any depth
  for (var w = node.data('within'); w; w = cy.getElementById(w).data('within')) {
    if (w === item.id()) { return true; }
  }
  return false;
}
return cy.nodes().difference(item)
  .filter(function (other) { return !other.hasClass('badge') && !other.hasClass('group') &&
                                    !other.hasClass('opened') && !inside(other); })
  .filter(function (other) {
    var b = other.boundingBox({includeLabels: false});
    return b.x1 < mine.x2 && mine.x1 < b.x2 && b.y1 < mine.y2 && mine.y1 < b.y2;
  }).map(function (other) { return other.id(); });
"""


@pytest.fixture
def large_app(tmp_path):
    path = tmp_path / "stack.onnx"
    onnx.save(generated_model(layers=40, branches=4, depth=12), str(path))   # 2,080 nodes
    return create_app(AppConfig(cache_dir=str(tmp_path / "sessions"), extra_model_path=str(path)))


def collapsed_in(dash_duo, group: str) -> int:
    """How many collapsed groups the open ``group``'s frame holds."""
    return pane_js(dash_duo, "var frame = before.getElementById(arguments[0]).id();"
                             "return before.nodes('.collapsed').filter(function (n) {"
                             "  return n.data('within') === frame; }).length;", group)


def tap(dash_duo, element_id: str) -> None:
    pane_js(dash_duo, f"before.getElementById('{element_id}').emit('tap');")


def is_open(dash_duo, group: str) -> bool:
    return bool(pane_js(dash_duo, f"return before.getElementById('{group}').hasClass('group');"))


def test_a_group_of_a_large_graph_opens_in_place_and_closes(dash_duo, large_app):
    dash_duo.start_server(large_app)
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.getElementById('{STACK}').length > 0;"), 90,
        "the large graph was not drawn")
    assert pane_js(dash_duo, "return before.nodes('.op').length;") == 0, "it starts collapsed"

    tap(dash_duo, STACK)
    wait_until(dash_duo, lambda: is_open(dash_duo, STACK), 20, "the stack did not open")
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.getElementById('{LAYER}').hasClass('collapsed');"), 20)
    assert collapsed_in(dash_duo, STACK) == 40

    tap(dash_duo, LAYER)
    wait_until(dash_duo, lambda: is_open(dash_duo, LAYER), 20, "the layer did not open")
    assert collapsed_in(dash_duo, LAYER) >= 5, "its four branches and merge, collapsed"
    assert pane_js(dash_duo, OVERLAPS % ("before", LAYER)) == [], "the layer covers others"
    neighbour = f"{STACK}/layer.4"
    assert pane_js(dash_duo, f"var a = before.getElementById('{neighbour}').position(),"
                             f" b = after.getElementById('{neighbour}').position();"
                             " return a.x === b.x && a.y === b.y;"), "the panes disagree"

    tap(dash_duo, LAYER)
    wait_until(dash_duo, lambda: not is_open(dash_duo, LAYER), 20, "the layer did not close")
    assert pane_js(dash_duo, f"return before.getElementById('{LAYER}').hasClass('collapsed');")


def test_an_opened_fused_body_pushes_its_neighbours_aside(dash_duo, graphlab_app):
    result = PassManager("O2").run(load_model(resolve_model("bert_tiny_op13")))
    snapshot = next(s for s in result.snapshots if s.pass_name == "fuse_attention")
    fused = next(i for i in snapshot.diff.added if snapshot.graph.node_by_id(i).body is not None)
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url +
                        f"/?model=bert_tiny_op13&pass={snapshot.index + 1}&node={fused}")
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_element_by_css_selector("[id*=open-body]", timeout=10).click()
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return after.getElementById('n{fused}').hasClass('opened');"), 20,
        "the body did not open")
    assert pane_js(dash_duo, OVERLAPS % ("after", f"n{fused}")) == [], \
        "the opened body covers other nodes"


def test_closing_the_group_that_holds_the_selection_keeps_it_closed(dash_duo, graphlab_app):
    graph = load_model(resolve_model("bert_tiny_op13"))
    node = next(n for n in graph.nodes if n.name.startswith("/bert/encoder/layer.0/attention/"))
    group = "g:" + node.name.rsplit("/", 1)[0]
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + f"/?model=bert_tiny_op13&node={node.id}")
    wait_for_nodes(dash_duo)
    wait_until(dash_duo, lambda: is_open(dash_duo, group), 20, "the selection's group is closed")
    tap(dash_duo, group)
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.getElementById('{group}').hasClass('collapsed');"), 20,
        "the group did not close")
    time.sleep(1.5)   # long enough for a reopening render to arrive
    assert not is_open(dash_duo, group), "the group reopened by itself"
    assert pane_js(dash_duo, f"return before.getElementById('{group}')"
                             ".style('overlay-opacity');") == "0.18", "the selection is not shown"
