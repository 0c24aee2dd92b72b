"""A closed tab gets nothing: each tab's panels hear the view through a store of their own
(`ids.tab_view`), which a clientside callback fills from the view only while that tab is open.
So a step through the passes sends no request for the closed tabs, and opening a tab (which
changes the view's `panel`) draws it at once.

One forward of the view fills every tab's store (`view_fanout`).  A tab about a node (the
inspector) hears no step while no node is selected: it has nothing else to show.
"""

from __future__ import annotations

import json

from dash import Output, State

from .. import ids
from .panel import TAB
from .registry import placed
from .view_fanout import Forward

FORWARD = """function (view, lasts) {
  var tabs = %s, aboutANode = %s;
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


def forward() -> Forward:
    panels = placed(TAB)
    tabs = [panel.name for panel in panels]
    return Forward(tuple(Output(ids.tab_view(tab), "data") for tab in tabs),
                   tuple(State(ids.tab_view(tab), "data") for tab in tabs),
                   FORWARD % (json.dumps(tabs),
                              json.dumps([panel.about_a_node for panel in panels])))
