"""The page: the load bar on top, what the page is busy with under it, then the passes, the two
panes and the tabs on the right — each part filled with the panels the registry puts there.
The page's own stores hold the parsed view, the open groups and the upload token."""

from __future__ import annotations

from dash import dcc, html

from . import ids
from .panels.panel import MAIN, STATUS, TAB, TOP
from .panels.registry import placed
from .services import Services


def page(services: Services) -> html.Div:
    def layouts(place: str) -> list:
        return [panel.layout(services) for panel in placed(place)]

    tabs = placed(TAB)
    return html.Div(className="app", children=[
        dcc.Location(id=ids.URL, refresh=False),
        dcc.Store(id=ids.VIEW, storage_type="memory"),
        dcc.Store(id=ids.VIEW_REDUCED, storage_type="memory"),
        dcc.Store(id=ids.URL_HEARD, storage_type="memory"),
        dcc.Store(id=ids.UI, storage_type="memory"),
        # What this browser tab uploaded and reduced, kept while it lives.  Empty is written
        # as None: a store with no data at all "restores" its empty storage as it mounts,
        # which set off every callback listening to it on each page load.
        *[dcc.Store(id=kept, storage_type="session", data=None)
          for kept in (ids.UPLOAD_TOKEN, ids.COMPARE_UPLOAD, ids.REDUCED_MODELS)],
        dcc.Store(id=ids.VIEW_PATCH, storage_type="memory"),
        *[dcc.Store(id=ids.tab_view(panel.name), storage_type="memory") for panel in placed(TAB)],
        dcc.Store(id=ids.VIEW_SETTINGS, storage_type="memory"),
        dcc.Store(id=ids.SETTINGS_KEY, storage_type="memory"),
        dcc.Store(id=ids.VIEW_SHOWN, storage_type="memory"),
        dcc.Store(id=ids.SHOWN_KEY, storage_type="memory"),
        html.Header(className="top", children=[
            html.H1(["GraphLab ", html.Span("pass debugger", className="muted")]),
            *layouts(TOP),
        ]),
        html.Div(id=ids.NAV_MESSAGE, className="messages"),
        *layouts(STATUS),
        html.Div(id=ids.UPLOAD_MESSAGE, className="messages"),
        html.Div(id=ids.MODEL_NOTES, className="messages"),
        html.Main(className="main", children=[
            *layouts(MAIN),
            html.Aside(className="side", children=[
                dcc.Tabs(id=ids.TABS, value=tabs[0].name, className="tabs", children=[
                    dcc.Tab(label=panel.tab, value=panel.name, children=panel.layout(services))
                    for panel in tabs]),
            ]),
        ]),
    ])
