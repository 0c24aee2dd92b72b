"""The pass stepper: every pass with its node counts, rewrites and "changed nothing" marks.

Rows are buttons (pattern-matching ids) read by the navigation reducer; ← and → step too
(assets/graphlab.js presses the Prev/Next buttons).
"""

from __future__ import annotations

from dash import Input, Output, State, dcc, html

from .. import ids
from ..messages import user_message
from ..services import Services
from ..view_state import ViewState
from . import numerics


def layout() -> html.Div:
    return html.Div(className="stepper", children=[
        html.Div(className="stepper-head", children=[
            html.H3("Passes"),
            html.Div(className="step-buttons", children=[
                html.Button("◀ Prev", id=ids.PREV, className="button", title="previous pass (←)"),
                html.Button("Next ▶", id=ids.NEXT, className="button", title="next pass (→)"),
            ]),
            dcc.Checklist(id=ids.HIDE_UNCHANGED, className="hide-unchanged",
                          options=[{"label": " hide passes that changed nothing",
                                    "value": "hide"}], value=[]),
            numerics.layout(),
        ]),
        html.Ol(id=ids.STEPPER, className="pass-list"),
    ])


def register(app, services: Services) -> None:
    @app.callback(Output(ids.STEPPER, "children"), Input(ids.VIEW, "data"),
                  State(ids.UPLOAD_TOKEN, "data"))
    def render(view, upload):
        if not view:
            return []
        state = ViewState.from_dict(view)
        try:
            workspace = services.workspace(state, upload)
        except Exception as err:  # noqa: BLE001
            return [html.Li(user_message(err), className="message error")]
        return [pass_row(s, s.index == state.step) for s in workspace.result.snapshots
                if s.changed or not state.hide_unchanged or s.index == state.step]


def pass_row(snapshot, selected: bool) -> html.Li:
    counts = f"{snapshot.nodes_before} → {snapshot.nodes_after} nodes"
    detail = (f"{snapshot.rewrites} rewrite{'s' if snapshot.rewrites != 1 else ''}"
              if snapshot.changed else "changed nothing")
    classes = "pass-row" + (" selected" if selected else "") + ("" if snapshot.changed
                                                                 else " unchanged")
    return html.Li(html.Button(
        id={"type": ids.PASS_ROW, "index": snapshot.index}, className=classes,
        title=snapshot.description, children=[
            html.Span(f"{snapshot.index + 1}. {snapshot.pass_name}", className="pass-name"),
            html.Span(counts, className="pass-counts"),
            html.Span(detail, className="pass-detail"),
        ]))
