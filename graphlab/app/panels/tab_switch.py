"""Opening a tab changes only the view's `panel`, so the page makes that view itself, and its
URL, without a round trip: the tab's panels hear the new view at once (`tab_gate`).  The
navigation reducer still hears the URL (a new history entry, for Back) and, finding the view it
already holds, leaves everything as it is.

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import Input, Output, State

from .. import ids
from ..services import Services
from ..view_state import URL_KEY_ORDER

SWITCH = """function (tab, view, search) {
  var skip = window.dash_clientside.no_update;
  if (!view || !tab || view.panel === tab) { return [skip, skip]; }
  var order = %s, fallback = %s;
  var pairs = (search || "").replace(/^\\?/, "").split("&").filter(Boolean).map(function (p) {
    return [decodeURIComponent(p.split("=")[0]), p];
  }).filter(function (pair) { return pair[0] !== "panel"; });
  if (tab !== fallback) { pairs.push(["panel", "panel=" + encodeURIComponent(tab)]); }
  pairs.sort(function (a, b) { return order.indexOf(a[0]) - order.indexOf(b[0]); });
  var query = pairs.map(function (pair) { return pair[1]; }).join("&");
  return [Object.assign({}, view, {panel: tab}), query ? "?" + query : ""];
}"""


def register(app, services: Services) -> None:
    app.clientside_callback(
        SWITCH % (json.dumps(URL_KEY_ORDER), json.dumps(services.default_state.panel)),
        Output(ids.VIEW, "data", allow_duplicate=True),
        Output(ids.URL, "search", allow_duplicate=True),
        Input(ids.TABS, "value"), State(ids.VIEW, "data"), State(ids.URL, "search"),
        prevent_initial_call=True)
