"""A step changes nothing some panels show: the model's sizes, the comparison chosen.  They
hear the view through a store (`ids.VIEW_SETTINGS`) that a clientside callback fills only when
the view changed in something other than where the user stands in it (the pass, the node, the
highlight, the search, the open tab) or the page's uploads changed, so a step sends them no
request at all.  Likewise, opening a tab changes nothing the panes, the pass list or the
numeric check show: the panels outside the tabs hear the view through `ids.VIEW_SHOWN`,
filled only when the view changed in more than the open tab.

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import Input, Output, State

from .. import ids

WHERE = ("step", "node", "highlight", "search", "panel")   # where the user stands

OPEN_TAB = ("panel",)

FORWARD = """function (view, upload, uploadB, last) {
  var skip = window.dash_clientside.no_update;
  if (!view) { return [skip, skip]; }
  var where = %s, kept = {};
  Object.keys(view).sort().forEach(function (k) { if (where.indexOf(k) < 0) { kept[k] = view[k]; } });
  var key = JSON.stringify([kept, upload && upload.token, uploadB && uploadB.token]);
  return key === last ? [skip, skip] : [view, key];
}"""


def register(app) -> None:
    for ignored, store, key in ((WHERE, ids.VIEW_SETTINGS, ids.SETTINGS_KEY),
                                (OPEN_TAB, ids.VIEW_SHOWN, ids.SHOWN_KEY)):
        app.clientside_callback(FORWARD % json.dumps(ignored),
                                Output(store, "data"), Output(key, "data"),
                                Input(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"),
                                State(ids.COMPARE_UPLOAD, "data"), State(key, "data"))
