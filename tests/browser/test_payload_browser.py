"""What a step sends, watched in a real browser: a closed tab gets nothing until it is opened
(nor does what a step cannot change: the sizes word, the comparison chosen),
a pass that changed nothing re-sends no graph, a step sends only the elements that changed
and draws what a fresh page draws, and a graph without name scopes opens grouped."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import onnx
import pytest

from benchmarks.app import generated_model
from benchmarks.browser_timing import IDLE
from graphlab.app import AppConfig, create_app, ids
from graphlab.app.panels import registry
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState

from pane_helpers import pane_js, wait_for_nodes, wait_until
from passes_helpers import o2_position

pytestmark = pytest.mark.browser

# Every answer of the server from now on: the callback's outputs, the response's props and
# its size.  Dash's renderer posts callbacks with fetch.
RECORD_ANSWERS = """
window.answers = [];
if (!window.fetchRecorded) {
  window.fetchRecorded = true;
  var original = window.fetch;
  window.fetch = function (url, options) {
    var sent = original.apply(this, arguments);
    if (String(url).indexOf('_dash-update-component') >= 0) {
      var asked = JSON.parse(options.body).output;
      sent.then(function (reply) {
        reply.clone().text().then(function (text) {
          var body = text ? JSON.parse(text).response : {};
          window.answers.push({output: asked, bytes: text.length, response: body});
        });
      });
    }
    return sent;
  };
}
"""
ELEMENTS = """
return [before, after].map(function (cy) {
  return cy.elements().map(function (e) {
    var p = e.isNode() ? e.position() : {x: 0, y: 0};
    return [e.id(), e.classes().sort().join(' '), Math.round(p.x), Math.round(p.y)].join('|');
  }).sort();
});
"""


def answers(dash_duo) -> list[dict]:
    return dash_duo.driver.execute_script("return window.answers;")


def settled(dash_duo, title: str) -> None:
    """Until the panes show ``title`` and no callback is in flight."""
    dash_duo.wait_for_contains_text("#pane-after-title", title, timeout=20)
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(IDLE), 20,
               "callbacks still in flight")


def unchanged_pair(model: str, tmp_path) -> int:
    """A pass that changed nothing right after another that changed nothing (its index)."""
    services = Services.from_config(AppConfig(cache_dir=str(tmp_path / "probe")))
    snapshots = services.workspace(ViewState(model=model), None).result.snapshots
    return next(s.index for s in snapshots[1:]
                if not s.changed and not snapshots[s.index - 1].changed)


def callbacks_of(app, store: str) -> set[str]:
    """The outputs of every callback that hears the view through ``store``."""
    return {output for output, spec in app.callback_map.items()
            if any(i["id"] == store for i in spec["inputs"])}


def test_a_step_asks_nothing_of_closed_tabs_nor_of_what_a_step_cannot_change(started,
                                                                         graphlab_app):
    dash_duo = started
    settled(dash_duo, "After pass 2")
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    dash_duo.find_element("#step-next").click()
    settled(dash_duo, "After pass 3")
    asked = {a["output"] for a in answers(dash_duo)}
    # one request: the panes, which bring the pass's kept answers (`pass_figures`) along
    assert len(answers(dash_duo)) == 1 and "pane-before-update" in next(iter(asked)), asked
    closed = {tab: callbacks_of(graphlab_app, ids.tab_view(tab)) for tab in registry.tab_names()
              if tab != "inspector"}   # the tab open at first
    assert all(closed.values()), closed   # every tab's panels hear the view through its store
    assert not asked & set().union(*closed.values()), asked
    settled_only = callbacks_of(graphlab_app, ids.VIEW_SETTINGS)   # the sizes word, the
    assert len(settled_only) >= 2 and not asked & settled_only, asked  # comparison chosen

    dash_duo.find_element("#side-tabs > div:nth-child(2)").click()   # the Patterns tab
    dash_duo.wait_for_contains_text("#patterns", "Patterns in pass 3", timeout=20)
    assert any("patterns.children" in a["output"] for a in answers(dash_duo))


def test_a_step_is_made_in_the_page_and_skips_hidden_passes(started, graphlab_app, tmp_path):
    """Next is answered in the page (the reducer is not asked: the page wrote the URL) and, with
    "hide passes that changed nothing", lands on each pass that changed the graph in turn;
    Prev comes back the same way."""
    dash_duo = started
    settled(dash_duo, "After pass")
    services = Services.from_config(AppConfig(cache_dir=str(tmp_path / "probe")))
    snapshots = services.workspace(services.default_state, None).result.snapshots
    changed = [s.index for s in snapshots if s.changed]
    dash_duo.find_element("#hide-unchanged input").click()
    wait_until(dash_duo, lambda: len(dash_duo.find_elements(".pass-row")) == len(changed), 20,
               "the list still shows the passes that changed nothing")
    selected = "return document.querySelector('.pass-row.selected').id;"
    at = lambda: json.loads(dash_duo.driver.execute_script(selected))["index"]  # noqa: E731
    start = at()
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    walked, ahead = [start], changed[changed.index(start) + 1:]
    assert ahead, changed
    for _ in ahead:
        dash_duo.find_element("#step-next").click()
        wait_until(dash_duo, lambda: at() != walked[-1], 20, "Next did not move")
        settled(dash_duo, f"After pass {at() + 1}:")
        walked.append(at())
    assert walked == [start, *ahead]
    search = dash_duo.driver.execute_script("return window.location.search;")
    assert f"pass={walked[-1] + 1}" in search
    navigation = [a for a in answers(dash_duo) if "view-state.data" in a["output"]]
    assert navigation == [], navigation   # no round trip for the panels to wait on
    dash_duo.find_element("#step-prev").click()
    wait_until(dash_duo, lambda: at() == walked[-2], 20, "Prev did not come back")


def test_a_tapped_node_is_selected_in_the_page_and_opens_the_inspector(started):
    """A node tapped in a pane: the view with the node (and the inspector) is made in the page,
    its URL names the node, the reducer is not asked, and the inspector shows the node."""
    dash_duo = started
    settled(dash_duo, "After pass")
    tab = next(t for t in dash_duo.find_elements(".tab") if t.text.strip() == "Patterns")
    tab.click()
    dash_duo.wait_for_contains_text("#patterns", "Patterns in pass", timeout=20)
    node, label = pane_js(dash_duo, "var n = before.nodes('.op')[0];"
                                    "return [n.data('node_id'), n.data('label')];")
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    pane_js(dash_duo, f"before.$id(before.nodes('.op')[0].id()).emit('tap');")
    dash_duo.wait_for_contains_text("#inspector", label.split()[0], timeout=20)
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(IDLE), 20, "still busy")
    search = dash_duo.driver.execute_script("return window.location.search;")
    assert f"node={node}" in search and "panel=" not in search   # the inspector: the default
    navigation = [a for a in answers(dash_duo) if "view-state.data" in a["output"]]
    assert navigation == [], navigation   # no round trip for the panels to wait on
    # a chart tab follows the selection: tapping another node keeps it open
    tab = next(t for t in dash_duo.find_elements(".tab") if t.text.strip() == "Roofline")
    tab.click()
    wait_until(dash_duo, lambda: "panel=roofline" in dash_duo.driver.execute_script(
        "return window.location.search;"), 20, "the Roofline tab did not open")
    other = pane_js(dash_duo, "return before.nodes('.op')[1].data('node_id');")
    pane_js(dash_duo, "before.$id(before.nodes('.op')[1].id()).emit('tap');")
    wait_until(dash_duo, lambda: f"node={other}" in dash_duo.driver.execute_script(
        "return window.location.search;"), 20, "the second node was not selected")
    selected = "return document.querySelector('#side-tabs .tab--selected').textContent;"
    assert dash_duo.driver.execute_script(selected) == "Roofline"


def test_a_step_made_in_the_page_clears_the_message_about_an_earlier_view(started):
    dash_duo = started
    settled(dash_duo, "After pass")
    dash_duo.driver.get(f"{dash_duo.server_url}/?pipeline=no_such_pass")
    dash_duo.wait_for_contains_text("#nav-message", "no_such_pass", timeout=20)
    dash_duo.find_element("#step-next").click()
    wait_until(dash_duo, lambda: dash_duo.find_element("#nav-message").text == "", 20,
               "the message about the refused view stayed after a step")


def test_opening_a_tab_asks_the_server_only_for_the_tab_and_back_reopens_the_last(started):
    """The page makes the view with the tab itself: its URL names the tab (a new history
    entry), the navigation reducer is not asked, the tab's parts that have
    nothing to show are not asked, and Back reopens the tab that was open before."""
    dash_duo = started
    settled(dash_duo, "After pass")
    before = dash_duo.driver.execute_script("return window.location.search;")
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    dash_duo.find_element("#side-tabs > div:nth-child(2)").click()   # the Patterns tab
    dash_duo.wait_for_contains_text("#patterns", "Patterns in pass", timeout=20)
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(IDLE), 20, "still busy")
    search = dash_duo.driver.execute_script("return window.location.search;")
    assert parse_qs(search.lstrip("?")) == {**parse_qs(before.lstrip("?")), "panel": ["patterns"]}
    asked = answers(dash_duo)
    assert any("patterns.children" in a["output"] for a in asked), asked
    assert not any("onnxscript-rules-body" in a["output"] for a in asked), \
        "the rules section, with no rules named, was asked to draw itself empty again"
    assert not any("view-state.data" in a["output"] for a in asked), asked

    dash_duo.driver.back()
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(
        "return document.querySelector('#side-tabs .tab--selected').textContent;")
        == "Inspector", 20, "Back did not reopen the inspector")
    assert dash_duo.driver.execute_script("return window.location.search;") == before


def test_opening_the_systolic_tab_asks_nothing_of_what_waits_for_a_click(started):
    """The dataflow comparison and the whole model are drawn on request, the Play label and a
    GEMM chosen in the list are answered in the page: opening the tab asks the server for
    none of them; asking for the comparison does."""
    dash_duo = started
    settled(dash_duo, "After pass")
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    tab = next(t for t in dash_duo.find_elements(".tab") if t.text.strip() == "Systolic")
    tab.click()
    dash_duo.wait_for_contains_text("#systolic-source", "GEMM", timeout=30)
    wait_until(dash_duo, lambda: dash_duo.driver.execute_script(IDLE), 20, "still busy")
    asked = [a["output"] for a in answers(dash_duo)]
    assert any("systolic-problem.data" in o for o in asked), asked
    waiting = ("systolic-choices.children", "systolic-passes.children", "systolic-play",
               "view-patch")
    assert not [o for o in asked if any(w in o for w in waiting)], asked
    dash_duo.find_element("#systolic-choices-button").click()
    dash_duo.wait_for_contains_text("#systolic-choices", "Memory-bound", timeout=30)


def sent_ids(dash_duo) -> set[str]:
    return {key for a in answers(dash_duo) for key in a["response"]}


def test_a_pass_that_changed_nothing_resends_no_graph(dash_duo, graphlab_app, tmp_path):
    step = unchanged_pair("cnn_bn", tmp_path)
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(f"{dash_duo.server_url}/?model=cnn_bn&pass={step}")   # 1-based
    wait_for_nodes(dash_duo)
    settled(dash_duo, f"After pass {step}:")
    drawn = pane_js(dash_duo, ELEMENTS)
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    dash_duo.find_element("#step-next").click()
    settled(dash_duo, f"After pass {step + 1}:")
    sent = {prop for a in answers(dash_duo) for key, props in a["response"].items()
            for prop in (f"{key}.{p}" for p in props)}
    assert not sent & {"pane-before.stylesheet", "pane-after.stylesheet"}
    updates = [a["response"][pane]["data"] for a in answers(dash_duo)
               for pane in ("pane-before-update", "pane-after-update") if pane in a["response"]]
    assert updates, "the view drawn was not named"   # both panes told which view they show
    assert not [u for u in updates if {"full", "upsert", "remove"} & set(u)], updates
    assert "pass-list" not in sent_ids(dash_duo)   # the page moved the mark: no row sent
    selected = dash_duo.find_element(".pass-row.selected").text
    assert selected.startswith(f"{step + 1}. ") and len(dash_duo.find_elements(".selected")) == 1
    assert pane_js(dash_duo, ELEMENTS) == drawn


def test_a_step_sends_only_what_changed_and_draws_what_a_fresh_page_draws(dash_duo,
                                                                          graphlab_app):
    dash_duo.start_server(graphlab_app)
    first, last = o2_position("fold_batchnorm") - 1, o2_position("fuse_linear_bias_act") + 1
    dash_duo.driver.get(f"{dash_duo.server_url}/?model=cnn_bn&pass={first}")
    wait_for_nodes(dash_duo)
    settled(dash_duo, f"After pass {first}:")
    assert "Groups found" not in dash_duo.find_element(".legend").text   # its own scopes
    dash_duo.driver.execute_script(RECORD_ANSWERS)
    for step in range(first + 1, last + 1):   # through fold_batchnorm and fuse_linear_bias_act
        dash_duo.find_element("#step-next").click()
        settled(dash_duo, f"After pass {step}:")
    updates = [props["data"] for a in answers(dash_duo) for key, props in a["response"].items()
               if key.endswith("-update")]
    changes = [u for u in updates if {"upsert", "remove"} & set(u)]
    assert changes and all(u["upsert"] or u["remove"] for u in changes), updates
    drawn = [u for u in updates if {"full", "upsert", "remove"} & set(u)]
    assert len(drawn) < 2 * (last - first), "a pane that stayed the same was sent"
    stepped = pane_js(dash_duo, ELEMENTS)
    dash_duo.driver.get(f"{dash_duo.server_url}/?model=cnn_bn&pass={last}")
    wait_for_nodes(dash_duo)
    settled(dash_duo, f"After pass {last}:")
    assert pane_js(dash_duo, ELEMENTS) == stepped


@pytest.fixture
def unscoped_app(tmp_path):
    path = tmp_path / "unscoped.onnx"
    onnx.save(generated_model(layers=30, branches=2, depth=6, scoped=False), str(path))  # 420
    return create_app(AppConfig(cache_dir=str(tmp_path / "sessions"), extra_model_path=str(path)))


def test_a_graph_without_name_scopes_opens_grouped_by_its_repeated_blocks(dash_duo,
                                                                         unscoped_app):
    dash_duo.start_server(unscoped_app)
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, "return before.nodes('.collapsed').length > 0;"), 90, "nothing was grouped")
    labels = pane_js(dash_duo, "return before.nodes('.collapsed').map(function (g) {"
                               "  return g.data('label').split('\\n')[0]; });")
    runs = [f"blocks {k}–{k + 4}" for k in range(0, 30, 5)]
    layers = [f"block {k}" for k in range(30)]
    assert sorted(labels) in (sorted(runs), sorted(layers)), labels   # how many levels open
    # at first depends on the room they take: runs of five layers, or the layers in them
    assert pane_js(dash_duo, "return before.nodes('.op').length;") == 0
    dash_duo.wait_for_contains_text(".legend", "Groups found from the structure", timeout=10)
    height = pane_js(dash_duo, "var b = before.elements().boundingBox(); return b.h;")
    assert height < 6000, height    # the 420 nodes one under the other: ~38,000 px

    first = pane_js(dash_duo, "return before.nodes('.collapsed')[0].id();")
    pane_js(dash_duo, "before.getElementById(arguments[0]).emit('tap');", first)
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, "return before.getElementById(arguments[0]).hasClass('group');", first), 20,
        "the group did not open")
    inside = pane_js(dash_duo, "var group = arguments[0];"
                               "return before.nodes().filter(function (n) {"
                               "  return n.data('within') === group; })"
                               ".map(function (n) { return n.data('label').split('\\n')[0]; });",
                     first)
    assert inside == layers[:5] or sorted(inside) == sorted(
        ["MatMul", "Sigmoid", "Tanh"] * 4 + ["Add"] * 2), inside   # a run, or one layer
