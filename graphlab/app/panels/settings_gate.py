"""A step changes nothing some panels show: the model's sizes, the comparison chosen.  They
hear the view through a store (`ids.VIEW_SETTINGS`) that a clientside callback fills only when
the view changed in something other than where the user stands in it (the pass, the node, the
highlight, the search, the open tab) or the page's uploads changed, so a step sends them no
request at all.  And opening a tab changes nothing the panes show: the panels outside the
tabs hear the view through `ids.VIEW_SHOWN`, filled only when the view changed in more than the
open tab.

One forward of the view fills both stores (`view_fanout`).
"""

from __future__ import annotations

import json

from dash import Output, State

from .. import ids
from .view_fanout import Forward

WHERE = ("step", "node", "highlight", "search", "panel")   # where the user stands
OPEN_TAB = ("panel",)

GATES = ((WHERE, ids.VIEW_SETTINGS, ids.SETTINGS_KEY),
         (OPEN_TAB, ids.VIEW_SHOWN, ids.SHOWN_KEY))

FORWARD = """function (view, states) {
  var skip = window.dash_clientside.no_update, gates = %s;
  var upload = states[0], uploadB = states[1], lasts = states.slice(2);
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


def forward() -> Forward:
    return Forward(
        tuple(o for _, store, key in GATES for o in (Output(store, "data"), Output(key, "data"))),
        (State(ids.UPLOAD_TOKEN, "data"), State(ids.COMPARE_UPLOAD, "data"),
         *[State(key, "data") for _, _, key in GATES]),
        FORWARD % json.dumps([list(ignored) for ignored, _, _ in GATES]))
