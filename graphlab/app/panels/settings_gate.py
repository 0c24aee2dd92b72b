"""A step changes nothing some panels show: the model's sizes, the comparison chosen.  They
hear the view through a store (`ids.VIEW_SETTINGS`) that a clientside callback fills only when
the view changed in something other than where the user stands in it (the pass, the node, the
highlight, the search, the open tab) or the page's uploads changed, so a step sends them no
request at all.  Likewise, a click on a node, a match or a near miss changes nothing the pass
list and the numeric check show: they hear the view through `ids.VIEW_PASS`, filled only when
more than what the view points at (node, highlight, search, open tab) changed.  And opening a
tab changes nothing the panes show: the panels outside the tabs hear the view through
`ids.VIEW_SHOWN`, filled only when the view changed in more than the open tab.

One clientside callback fills the three stores (every callback the page runs costs the
renderer a round of its bookkeeping).  It is not a panel (it draws nothing): the factory
registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import Input, Output, State

from .. import ids

WHERE = ("step", "node", "highlight", "search", "panel")   # where the user stands
POINTED = ("node", "highlight", "search", "panel")         # what the view points at
OPEN_TAB = ("panel",)

GATES = ((WHERE, ids.VIEW_SETTINGS, ids.SETTINGS_KEY),
         (POINTED, ids.VIEW_PASS, ids.PASS_KEY),
         (OPEN_TAB, ids.VIEW_SHOWN, ids.SHOWN_KEY))

FORWARD = """function (view, upload, uploadB) {
  var skip = window.dash_clientside.no_update, gates = %s, lasts = [].slice.call(arguments, 3);
  var out = [];
  gates.forEach(function (ignored, i) {
    if (!view) { out.push(skip, skip); return; }
    var kept = {};
    Object.keys(view).sort().forEach(function (k) { if (ignored.indexOf(k) < 0) { kept[k] = view[k]; } });
    var key = JSON.stringify([kept, upload && upload.token, uploadB && uploadB.token]);
    if (key === lasts[i]) { out.push(skip, skip); } else { out.push(view, key); }
  });
  return out;
}"""


def register(app) -> None:
    outputs = [o for _, store, key in GATES for o in (Output(store, "data"), Output(key, "data"))]
    app.clientside_callback(FORWARD % json.dumps([list(ignored) for ignored, _, _ in GATES]),
                            outputs, Input(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"),
                            State(ids.COMPARE_UPLOAD, "data"),
                            *[State(key, "data") for _, _, key in GATES])
