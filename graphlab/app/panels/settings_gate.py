"""A step changes nothing some panels show: the model's sizes, the comparison chosen.  They
hear the view through a store (`ids.VIEW_SETTINGS`) that a clientside callback fills only when
the view changed in something other than where the user stands in it (the pass, the node, the
highlight, the search, the open tab) or the page's uploads changed, so a step sends them no
request at all.

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import Input, Output, State

from .. import ids

WHERE = ("step", "node", "highlight", "search", "panel")   # where the user stands

FORWARD = """function (view, upload, uploadB, last) {
  var skip = window.dash_clientside.no_update;
  if (!view) { return [skip, skip]; }
  var where = %s, kept = {};
  Object.keys(view).sort().forEach(function (k) { if (where.indexOf(k) < 0) { kept[k] = view[k]; } });
  var key = JSON.stringify([kept, upload && upload.token, uploadB && uploadB.token]);
  return key === last ? [skip, skip] : [view, key];
}"""


def register(app) -> None:
    app.clientside_callback(FORWARD % json.dumps(WHERE),
                            Output(ids.VIEW_SETTINGS, "data"), Output(ids.SETTINGS_KEY, "data"),
                            Input(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"),
                            State(ids.COMPARE_UPLOAD, "data"), State(ids.SETTINGS_KEY, "data"))
