"""The page: load bar on top, passes on the left, the two panes in the middle, inspector and
patterns on the right.  Stores hold the parsed view, the open groups and the upload token."""

from __future__ import annotations

from dash import dcc, html

from . import ids
from .panels import controls, memory, panes, roofline, stepper, systolic
from .panels import build_progress, report_download
from .services import Services


def page(services: Services) -> html.Div:
    return html.Div(className="app", children=[
        dcc.Location(id=ids.URL, refresh=False),
        dcc.Store(id=ids.VIEW, storage_type="memory"),
        dcc.Store(id=ids.UI, storage_type="memory"),
        dcc.Store(id=ids.PANE_KEY, storage_type="memory"),
        dcc.Store(id=ids.UPLOAD_TOKEN, storage_type="session"),
        dcc.Store(id=ids.VIEW_PATCH, storage_type="memory"),
        html.Header(className="top", children=[
            html.H1(["GraphLab ", html.Span("pass debugger", className="muted")]),
            controls.layout(services),
            report_download.layout(),
        ]),
        html.Div(id=ids.NAV_MESSAGE, className="messages"),
        build_progress.layout(),
        html.Div(id=ids.UPLOAD_MESSAGE, className="messages"),
        html.Main(className="main", children=[
            stepper.layout(),
            panes.layout(),
            html.Aside(className="side", children=[
                dcc.Tabs(id=ids.TABS, value="inspector", className="tabs", children=[
                    dcc.Tab(label="Inspector", value="inspector",
                            children=html.Div(id=ids.INSPECTOR, className="side-body")),
                    dcc.Tab(label="Patterns", value="patterns",
                            children=html.Div(id=ids.PATTERNS, className="side-body")),
                    dcc.Tab(label="Roofline", value="roofline", children=roofline.layout()),
                    dcc.Tab(label="Systolic", value="systolic", children=systolic.layout()),
                    dcc.Tab(label="Memory", value="memory", children=memory.layout()),
                ]),
            ]),
        ]),
    ])
