"""A closed tab gets nothing: each tab's panels hear the view through a store of their own
(`ids.tab_view`), which a clientside callback fills from the view only while that tab is open.
So a step through the passes sends no request for the closed tabs, and opening a tab (which
changes the view's `panel`) draws it at once.

One callback fills every tab's store: each callback the page runs costs the renderer a round
of its bookkeeping, whatever it returns, and a view changes on every click.  A tab about a
node (the inspector) hears no step while no node is selected: it has nothing else to show.

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json

from dash import Input, Output, State

from .. import ids
from .panel import TAB
from .registry import placed

FORWARD = """function (view) {
  var tabs = %s, aboutANode = %s, lasts = [].slice.call(arguments, 1);
  var skip = window.dash_clientside.no_update;
  function onlyStepped(last) {
    if (!last || view.node !== null || last.node !== null) { return false; }
    return Object.keys(view).every(function (k) {
      return k === "step" || JSON.stringify(view[k]) === JSON.stringify(last[k]); });
  }
  return tabs.map(function (tab, i) {
    if (!view || view.panel !== tab) { return skip; }
    return aboutANode[i] && onlyStepped(lasts[i]) ? skip : view;
  });
}"""


def register(app) -> None:
    panels = placed(TAB)
    tabs = [panel.name for panel in panels]
    app.clientside_callback(FORWARD % (json.dumps(tabs),
                                       json.dumps([panel.about_a_node for panel in panels])),
                            [Output(ids.tab_view(tab), "data") for tab in tabs],
                            Input(ids.VIEW, "data"),
                            *[State(ids.tab_view(tab), "data") for tab in tabs])
