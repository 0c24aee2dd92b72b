"""The clicks that change the view in a way the page can work out alone: it makes that view,
and its URL, without a round trip.  A step (Prev, Next, a row of the pass list: the view's
`step`, the highlight let go), opening a tab (its `panel`), clicking a match, near miss or
decline in a list (its `highlight`, and the patterns tab) and tapping a node in a pane (its
`node`, and the inspector unless the open tab follows the selection).  The same callback
answers the page's forwards of that view (`view_fanout`: the open tab's store, the gates, the
selected pass's mark), so what hears the view is asked at once.  The URL it writes (a new
history entry, for Back) is not heard by the navigation reducer, nor by anything else: were
the reducer asked, every panel hearing the view would wait for its answer (Dash holds a
callback while one that may change its inputs is in flight), a round trip on every click for
nothing; and a callback hearing the URL only to let the page's own go cost a round of the
renderer on every click.  The reducer hears an address the page did not write: as the page
loads, and on Back and Forward (`ids.URL_HEARD`, set by assets/graphlab.js).

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import ALL, Input, Output, State

from .. import ids
from ..services import Services
from ..view_state import URL_KEY_ORDER
from . import view_fanout
from .inspector import NAME as INSPECTOR
from .registry import follows_selection
from .stepper import NEXT, PREV, ROW

# The view with ``changes`` (view field -> [URL key, its value in the view, in the URL, and the
# URL's text the address leaves out]), and its query, written as `view_state.to_query` writes
# it: keys in their order, values percent-encoded (a step's number, the highlight's text and a
# tab's name need no other escaping); the message cleared, and the tab opened if it changed.
WITH_CHANGES = """function withChanges(view, search, changes, message) {
  var order = %s, pairs = (search || "").replace(/^\\?/, "").split("&").filter(Boolean)
    .map(function (p) { return [decodeURIComponent(p.split("=")[0]), p]; });
  var next = Object.assign({}, view);
  Object.keys(changes).forEach(function (field) {
    var key = changes[field][0], text = changes[field][2], fallback = changes[field][3];
    next[field] = changes[field][1];
    pairs = pairs.filter(function (pair) { return pair[0] !== key; });
    if (text !== fallback) { pairs.push([key, key + "=" + encodeURIComponent(text)]); }
  });
  pairs.sort(function (a, b) { return order.indexOf(a[0]) - order.indexOf(b[0]); });
  var query = pairs.map(function (pair) { return pair[1]; }).join("&");
  var skip = window.dash_clientside.no_update;
  return [next, query ? "?" + query : "", message ? "" : skip,
          next.panel !== view.panel ? next.panel : skip];
}"""

# A step to the next or previous pass the list shows (with "hide passes that changed nothing",
# one that changed the graph), or to the row clicked; the highlight is let go, as the reducer did.
STEP = """function (prevClicks, nextClicks, rowClicks, classes, rows, view, search, message) {
  %s
  var skip = window.dash_clientside.no_update, context = window.dash_clientside.callback_context;
  var trigger = context.triggered_id, click = context.triggered[0];
  if (!view || view.step === null || !trigger || !click || !click.value) {
    return [skip, skip, skip, skip];
  }
  var shown = rows.map(function (row) { return row.index; }).filter(function (index, i) {
    return !(view.hide_unchanged && / unchanged\\b/.test(classes[i] || "") && index !== view.step);
  });
  var step;
  if (typeof trigger === "object") { step = trigger.index; }
  else if (trigger === %s) { step = shown.filter(function (i) { return i > view.step; })[0]; }
  else { step = shown.filter(function (i) { return i < view.step; }).pop(); }
  if (step === undefined || step === view.step && !view.highlight) {
    return [skip, skip, skip, skip];
  }
  return withChanges(view, search, {step: ["pass", step, String(step + 1), null],
                                    highlight: ["hl", "", "", ""]}, message);
}"""

OPEN_TAB = """function (tab, view, search, message) {
  %s
  var skip = window.dash_clientside.no_update;
  if (!view || !tab || view.panel === tab) { return [skip, skip, skip, skip]; }
  return withChanges(view, search, {panel: ["panel", tab, tab, %s]}, message);
}"""

PICK_ITEM = """function (clicks, view, search, message) {
  %s
  var skip = window.dash_clientside.no_update, context = window.dash_clientside.callback_context;
  var picked = context.triggered_id, click = context.triggered[0];
  if (!view || !picked || !click || !click.value) {   // a freshly drawn item, not a click
    return [skip, skip, skip, skip];
  }
  var text = String(picked.index);
  if (view.highlight === text && view.panel === %s) { return [skip, skip, skip, skip]; }
  return withChanges(view, search, {highlight: ["hl", text, text, ""],
                                    panel: ["panel", %s, %s, %s]}, message);
}"""

# What a view made in the page sets: the view, its URL, the reducer's message about an earlier
# view cleared, and the tab it opens; from what it holds: the view, the URL and the message.
MADE = (Output(ids.VIEW, "data", allow_duplicate=True),
        Output(ids.URL, "search", allow_duplicate=True),
        Output(ids.NAV_MESSAGE, "children", allow_duplicate=True),
        Output(ids.TABS, "value", allow_duplicate=True))
HELD = (State(ids.VIEW, "data"), State(ids.URL, "search"), State(ids.NAV_MESSAGE, "children"))

# A node tapped in either pane (a group's tap opens or closes it: `panes`; an input or output
# selects nothing).
PICK_NODE = """function (tapBefore, tapAfter, view, search, message) {
  %s
  var skip = window.dash_clientside.no_update, context = window.dash_clientside.callback_context;
  var click = context.triggered[0], data = click && click.value;
  if (!view || !data || data.kind !== "node") { return [skip, skip, skip, skip]; }
  var node = parseInt(data.node_id, 10), follows = %s;
  var panel = follows.indexOf(view.panel) >= 0 ? view.panel : %s;
  if (node === view.node && panel === view.panel) { return [skip, skip, skip, skip]; }
  return withChanges(view, search, {node: ["node", node, String(node), ""],
                                    panel: ["panel", panel, panel, %s]}, message);
}"""


def register(app, services: Services, forwards: list[view_fanout.Forward]) -> None:
    """The views made in the page, each answering the page's forwards of the view too
    (`view_fanout.made_in_page`)."""
    helper = WITH_CHANGES % json.dumps(URL_KEY_ORDER)
    home = json.dumps(services.default_state.panel)   # the tab the URL leaves out
    patterns = json.dumps(ids.PATTERNS_TAB)
    inspector = json.dumps(INSPECTOR)

    def made(js: str, *heard) -> None:
        """``js`` makes a view from ``heard`` (its inputs and states) and `HELD`."""
        app.clientside_callback(view_fanout.made_in_page(js, len(heard) + len(HELD), forwards),
                                *MADE, *view_fanout.outputs(forwards), *heard, *HELD,
                                *view_fanout.states(forwards), prevent_initial_call=True)

    made(OPEN_TAB % (helper, home), Input(ids.TABS, "value"))
    made(STEP % (helper, json.dumps(NEXT)),
         Input(PREV, "n_clicks"), Input(NEXT, "n_clicks"),
         Input({"type": ROW, "index": ALL}, "n_clicks"),
         State({"type": ROW, "index": ALL}, "className"),
         State({"type": ROW, "index": ALL}, "id"))
    made(PICK_ITEM % (helper, patterns, patterns, patterns, home),
         Input({"type": ids.PATTERN_ITEM, "index": ALL}, "n_clicks"))
    made(PICK_NODE % (helper, json.dumps(sorted(follows_selection())), inspector, home),
         Input(ids.BEFORE, "tapNodeData"), Input(ids.AFTER, "tapNodeData"))
