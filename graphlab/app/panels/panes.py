"""The two graph panes (before / after the selected pass), their legend, search and groups.

Element lists are re-sent only when what is drawn changes (pass, open groups); selection,
pattern highlights and search only change the panes' stylesheets.  Tapping a group opens or
closes it; the open groups live in the page (per browser), not in the URL.
"""

from __future__ import annotations

import dash_cytoscape as cyto
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from .. import ids
from ..messages import user_message
from ..pane_payload import UiState, build_panes, drawn_groups, regrouped
from ..services import Services
from ..styles import BASE_STYLESHEET
from ..view_state import ViewState
from . import exports, overlay

LEGEND = [
    ("removed", "removed by this pass (left)"),
    ("added", "added by this pass (right)"),
    ("modified", "modified (both)"),
    ("fused", "fused op: open its body in the inspector"),
    ("collapsed", "collapsed group: tap to open"),
    ("selected", "selected node and its counterpart"),
    ("matched", "pattern match / matched part"),
    ("failed", "near miss: failed here"),
    ("blocking", "blocking consumer"),
    ("search", "search hit"),
]


def layout() -> html.Div:
    return html.Div(className="panes-area", children=[
        html.Div(className="pane-tools", children=[
            dcc.Input(id=ids.SEARCH, type="search", debounce=True, className="search-input",
                      placeholder="search node name or op type (e.g. Conv)"),
            html.Span(id=ids.SEARCH_COUNT, className="search-count"),
            html.Button("Open all groups", id=ids.EXPAND_ALL, className="button"),
            html.Button("Close all groups", id=ids.COLLAPSE_ALL, className="button"),
            overlay.toggle(), exports.model_button(),
            html.Div(id=ids.PANE_MESSAGE),
            html.Div(id=ids.FIT_KEY, className="fit-key"),
        ]),
        html.Div(className="panes", children=[_pane(ids.BEFORE, ids.BEFORE_TITLE),
                                              _pane(ids.AFTER, ids.AFTER_TITLE)]),
        html.Div(className="legend", children=[
            html.Span([html.Span(className=f"swatch swatch-{key}"), text], className="legend-item")
            for key, text in LEGEND]),
        overlay.legend(),
    ])


def _pane(pane_id: str, title_id: str) -> html.Div:
    return html.Div(className="pane", children=[
        html.Div(className="pane-head", children=[html.H3(id=title_id, className="pane-title"),
                                                  exports.pane_buttons(pane_id)]),
        cyto.Cytoscape(id=pane_id, className="graph", elements=[], stylesheet=BASE_STYLESHEET,
                       layout={"name": "preset", "fit": False},
                       minZoom=0.02, maxZoom=3, wheelSensitivity=0.3,
                       boxSelectionEnabled=False, autounselectify=True,
                       style={"width": "100%", "height": "100%"}),
    ])


def register(app, services: Services) -> None:
    @app.callback(
        Output(ids.BEFORE, "elements"), Output(ids.AFTER, "elements"),
        Output(ids.BEFORE, "stylesheet"), Output(ids.AFTER, "stylesheet"),
        Output(ids.BEFORE_TITLE, "children"), Output(ids.AFTER_TITLE, "children"),
        Output(ids.PANE_KEY, "data"), Output(ids.SEARCH_COUNT, "children"),
        Output(ids.PANE_MESSAGE, "children"), Output(ids.FIT_KEY, "children"),
        Input(ids.VIEW, "data"), Input(ids.UI, "data"),
        State(ids.PANE_KEY, "data"), State(ids.UPLOAD_TOKEN, "data"))
    def render(view, ui, drawn_key, upload):
        if not view:
            return (no_update,) * 10
        state = ViewState.from_dict(view)
        try:
            workspace = services.workspace(state, upload)
            payload = build_panes(workspace, state, UiState.from_store(ui, workspace.key))
        except Exception as err:  # noqa: BLE001
            return (*(no_update,) * 8, html.Div(user_message(err), className="message error"),
                    no_update)
        snapshot = workspace.result.snapshots[workspace.clamp_step(state.step)]
        same = payload.key == drawn_key
        count = f"{payload.search_hits} match{'es' if payload.search_hits != 1 else ''}" \
            if state.search else ""
        return (no_update if same else payload.before, no_update if same else payload.after,
                payload.before_style, payload.after_style,
                f"Before pass {snapshot.index + 1}: {snapshot.pass_name}"
                f"  ({snapshot.nodes_before} nodes)",
                f"After pass {snapshot.index + 1}: {snapshot.pass_name}"
                f"  ({snapshot.nodes_after} nodes)",
                payload.key, count, "", workspace.key)

    @app.callback(
        Output(ids.UI, "data"),
        Input(ids.BEFORE, "tapNodeData"), Input(ids.AFTER, "tapNodeData"),
        Input(ids.EXPAND_ALL, "n_clicks"), Input(ids.COLLAPSE_ALL, "n_clicks"),
        Input({"type": ids.OPEN_BODY, "index": ALL}, "n_clicks"),
        State(ids.UI, "data"), State(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"),
        prevent_initial_call=True)
    def toggle(tap_before, tap_after, _expand, _collapse, _bodies, ui, view, upload):
        trigger = ctx.triggered_id
        if not view or not ctx.triggered[0]["value"]:
            return no_update
        state = ViewState.from_dict(view)
        try:
            workspace = services.workspace(state, upload)
        except Exception:  # noqa: BLE001 - the panes already show the message
            return no_update
        current = UiState.from_store(ui, workspace.key)
        expanded = drawn_groups(workspace, state, current)
        opened = set(current.opened)
        if trigger == ids.EXPAND_ALL:
            expanded = set(workspace.scopes.groups)
        elif trigger == ids.COLLAPSE_ALL:
            expanded = set()
        elif isinstance(trigger, dict):
            opened ^= {int(trigger["index"])}
        else:
            data = tap_before if trigger == ids.BEFORE else tap_after
            if not data or data.get("kind") != "group":
                return no_update
            expanded ^= {data["id"]}
        return regrouped(workspace, state, expanded, opened).to_store(workspace.key)
