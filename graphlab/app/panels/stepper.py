"""The pass stepper: every pass with its node counts, rewrites and "changed nothing" marks.

Rows are buttons (pattern-matching ids) read by the navigation reducer; ← and → step too
(assets/graphlab.js presses the Prev/Next buttons).
"""

from __future__ import annotations

from dash import Output, dcc, html

from ..services import Services
from . import compare_bar, numerics
from .on_view import on_view
from .panel import MAIN, Panel

ROWS = "pass-list"
ROW = "pass-row"             # pattern-matching type, index = pass index
PREV = "step-prev"
NEXT = "step-next"
HIDE_UNCHANGED = "hide-unchanged"


def layout(services: Services) -> html.Div:
    return html.Div(className="stepper", children=[
        compare_bar.layout(services),
        html.Div(className="stepper-head", children=[
            html.H3("Passes"),
            html.Div(className="step-buttons", children=[
                html.Button("◀ Prev", id=PREV, className="button", title="previous pass (←)"),
                html.Button("Next ▶", id=NEXT, className="button", title="next pass (→)"),
            ]),
            dcc.Checklist(id=HIDE_UNCHANGED, className="hide-unchanged",
                          options=[{"label": " hide passes that changed nothing",
                                    "value": "hide"}], value=[]),
            numerics.layout(),
        ]),
        html.Ol(id=ROWS, className="pass-list"),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {"rows": Output(ROWS, "children")}, idle={"rows": []},
             message="rows")
    def render(state, workspace):
        if workspace.comparison is not None:   # one step, from model A to model B
            summary = workspace.comparison.diff.summary()
            detail = (f"{summary['matched']} matched, {summary['changed']} changed, "
                      f"{summary['only_a']} only in A, {summary['only_b']} only in B")
            return {"rows": [pass_row(workspace.result.snapshots[0], True, detail)]}
        return {"rows": [pass_row(s, s.index == state.step) for s in workspace.result.snapshots
                         if s.changed or not state.hide_unchanged or s.index == state.step]}


def pass_row(snapshot, selected: bool, detail: str = "") -> html.Li:
    counts = f"{snapshot.nodes_before} → {snapshot.nodes_after} nodes"
    detail = detail or (f"{snapshot.rewrites} rewrite{'s' if snapshot.rewrites != 1 else ''}"
                        if snapshot.changed else "changed nothing")
    classes = "pass-row" + (" selected" if selected else "") + ("" if snapshot.changed
                                                                 else " unchanged")
    return html.Li(html.Button(
        id={"type": ROW, "index": snapshot.index}, className=classes,
        title=snapshot.description, children=[
            html.Span(f"{snapshot.index + 1}. {snapshot.pass_name}", className="pass-name"),
            html.Span(counts, className="pass-counts"),
            html.Span(detail, className="pass-detail"),
        ]))


PANEL = Panel("stepper", MAIN, register, layout)
