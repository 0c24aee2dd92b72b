"""A closed tab gets nothing: each tab's panels hear the view through a store of their own
(`ids.tab_view`), which a clientside callback fills from the view only while that tab is open.
So a step through the passes sends no request for the closed tabs, and opening a tab (which
changes the view's `panel`) draws it at once.

One callback fills every tab's store: each callback the page runs costs the renderer a round
of its bookkeeping, whatever it returns, and a view changes on every click.

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import Input, Output

from .. import ids
from .panel import TAB
from .registry import placed

FORWARD = """function (view) {
  var tabs = %s;
  return tabs.map(function (tab) {
    return view && view.panel === tab ? view : window.dash_clientside.no_update;
  });
}"""


def register(app) -> None:
    tabs = [panel.name for panel in placed(TAB)]
    app.clientside_callback(FORWARD % json.dumps(tabs),
                            [Output(ids.tab_view(tab), "data") for tab in tabs],
                            Input(ids.VIEW, "data"))
