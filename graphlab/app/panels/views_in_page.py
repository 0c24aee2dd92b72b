"""Two clicks change the view in a way the page can work out alone, so it makes that view, and
its URL, without a round trip: opening a tab (the view's `panel`) and clicking a match, near
miss or decline in a list (its `highlight`, and the patterns tab).  What hears the view is
asked at once (`tab_gate`, `settings_gate`); the navigation reducer still hears the URL (a new
history entry, for Back) and, finding the view it already holds, leaves everything as it is.

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import ALL, Input, Output, State

from .. import ids
from ..services import Services
from ..view_state import URL_KEY_ORDER

# The view with ``changes`` (view field -> [URL key, value, the default the URL leaves out]),
# and its query, written as `view_state.to_query` writes it: keys in their order, values
# percent-encoded (the highlight's text and a tab's name need no other escaping).
WITH_CHANGES = """function withChanges(view, search, changes) {
  var order = %s, pairs = (search || "").replace(/^\\?/, "").split("&").filter(Boolean)
    .map(function (p) { return [decodeURIComponent(p.split("=")[0]), p]; });
  var next = Object.assign({}, view);
  Object.keys(changes).forEach(function (field) {
    var key = changes[field][0], value = changes[field][1], fallback = changes[field][2];
    next[field] = value;
    pairs = pairs.filter(function (pair) { return pair[0] !== key; });
    if (value !== fallback) { pairs.push([key, key + "=" + encodeURIComponent(value)]); }
  });
  pairs.sort(function (a, b) { return order.indexOf(a[0]) - order.indexOf(b[0]); });
  var query = pairs.map(function (pair) { return pair[1]; }).join("&");
  return [next, query ? "?" + query : ""];
}"""

OPEN_TAB = """function (tab, view, search) {
  %s
  if (!view || !tab || view.panel === tab) { return [window.dash_clientside.no_update,
                                                      window.dash_clientside.no_update]; }
  return withChanges(view, search, {panel: ["panel", tab, %s]});
}"""

PICK_ITEM = """function (clicks, view, search) {
  %s
  var skip = window.dash_clientside.no_update, context = window.dash_clientside.callback_context;
  var picked = context.triggered_id, click = context.triggered[0];
  if (!view || !picked || !click || !click.value) { return [skip, skip]; }   // a fresh button
  var text = String(picked.index);
  if (view.highlight === text && view.panel === %s) { return [skip, skip]; }
  return withChanges(view, search, {highlight: ["hl", text, ""],
                                    panel: ["panel", %s, %s]});
}"""


def register(app, services: Services) -> None:
    helper = WITH_CHANGES % json.dumps(URL_KEY_ORDER)
    home = json.dumps(services.default_state.panel)   # the tab the URL leaves out
    patterns = json.dumps(ids.PATTERNS_TAB)
    view_and_url = (Output(ids.VIEW, "data", allow_duplicate=True),
                    Output(ids.URL, "search", allow_duplicate=True))
    app.clientside_callback(OPEN_TAB % (helper, home), *view_and_url,
                            Input(ids.TABS, "value"), State(ids.VIEW, "data"),
                            State(ids.URL, "search"), prevent_initial_call=True)
    app.clientside_callback(PICK_ITEM % (helper, patterns, patterns, home), *view_and_url,
                            Input({"type": ids.PATTERN_ITEM, "index": ALL}, "n_clicks"),
                            State(ids.VIEW, "data"), State(ids.URL, "search"),
                            prevent_initial_call=True)
