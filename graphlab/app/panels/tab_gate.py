"""A closed tab gets nothing: each tab's panels hear the view through a store of their own
(`ids.tab_view`), which a clientside callback fills from the view only while that tab is open.
So a step through the passes sends no request for the closed tabs, and opening a tab (which
changes the view's `panel`) draws it at once.

One forward of the view fills every tab's store (`view_fanout`).  A tab about a node (the
inspector) hears no view while no node is selected and none was since the page loaded: its
layout shows the hint it would show (a step, another model, even the first view ask it
nothing); it hears the view that lets a node go, and shows the hint again.
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
  function showsTheHint(last) {   // no node now, nor in the last view it heard (or none heard)
    return view.node === null && (!last || last.node === null);
  }
  return tabs.map(function (tab, i) {
    if (!view || view.panel !== tab) { return skip; }
    return aboutANode[i] && showsTheHint(lasts[i]) ? skip : view;
  });
}"""


def forward() -> Forward:
    panels = placed(TAB)
    tabs = [panel.name for panel in panels]
    return Forward(tuple(Output(ids.tab_view(tab), "data") for tab in tabs),
                   tuple(State(ids.tab_view(tab), "data") for tab in tabs),
                   FORWARD % (json.dumps(tabs),
                              json.dumps([panel.about_a_node for panel in panels])))
