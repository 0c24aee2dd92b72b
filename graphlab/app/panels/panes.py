"""The two graph panes (before / after the selected pass), their legend, search and groups.

Each answer sends only what changed (`pane_updates`): the page keeps what the panes were drawn
from, a pane whose elements are the same (a pass that changed nothing) gets nothing, a pane
where a few changed gets those, merged in the page by `graphlab.applyPanes`; the selection,
pattern highlights and search hits are classes on the elements they name, so they travel with
them and the stylesheet never changes.  Tapping a group opens or closes it; the open groups
live in the page (per browser), not in the URL.
"""

from __future__ import annotations

import dash_cytoscape as cyto
from dash import ALL, ClientsideFunction, Input, Output, State, ctx, dcc, html

from .. import ids
from ..page_ids import local_id
from ..pane_payload import UiState, build_panes, drawn_groups, regrouped
from ..pane_updates import pane_changes
from ..scopes import structure_note
from ..services import Services
from ..styles import PANE_STYLESHEET
from . import exports, overlay, pass_figures, wrong_value
from .inspector import OPEN_BODY
from .on_view import on_view
from .panel import MAIN, Panel

DRAWN_KEY = "pane-key"       # what the panes' element lists were drawn from
UPDATES = {ids.BEFORE: "pane-before-update", ids.AFTER: "pane-after-update"}
BEFORE_TITLE = "pane-before-title"
AFTER_TITLE = "pane-after-title"
MESSAGE = "pane-message"
NOTE = "pane-note"           # "this pass changed nothing", over the panes
FIT_CHANGE = "fit-change"    # buttons handled in the page (assets/graphlab.js)
FIT_ALL = "fit-all"
FOLD_SIDE = "fold-side"
LEGEND_SHOWN = 4             # legend entries always in view; the rest fold under "more"
SEARCH = "node-search"
SEARCH_COUNT = "node-search-count"
EXPAND_ALL = "groups-expand"
COLLAPSE_ALL = "groups-collapse"
LEGEND_ID = "pane-legend"

# The marks of a comparison (see `comparison`): the same styles, the two models' words.
COMPARE_MARKS = [
    ("removed", "only in A (left)"),
    ("added", "only in B (right)"),
    ("modified", "in both, changed"),
]
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

def layout(_: Services) -> html.Div:
    return html.Div(className="panes-area", children=[
        dcc.Store(id=DRAWN_KEY, storage_type="memory"),
        *[dcc.Store(id=store, storage_type="memory") for store in UPDATES.values()],
        html.Div(className="pane-tools", children=[
            dcc.Input(id=SEARCH, type="search", debounce=True, className="search-input",
                      placeholder="search node or op type"),
            html.Span(id=SEARCH_COUNT, className="search-count"),
            html.Button("Fit to change", id=FIT_CHANGE, className="button",
                        title="zoom both panes to what this pass changed"),
            html.Button("Fit all", id=FIT_ALL, className="button",
                        title="the whole graph, or its top at a readable zoom"),
            html.Button("Open all groups", id=EXPAND_ALL, className="button"),
            html.Button("Close all groups", id=COLLAPSE_ALL, className="button"),
            overlay.toggle(), exports.model_button(),
            html.Button("Side panel ⇥", id=FOLD_SIDE, className="button fold-side",
                        title="fold the tabs away so the panes take the width (again: back)"),
            html.Div(id=MESSAGE, className="pane-message"),
        ]),
        html.Div(className="panes", children=[_pane(ids.BEFORE, BEFORE_TITLE),
                                              _pane(ids.AFTER, AFTER_TITLE),
                                              html.Div(id=NOTE, className="pane-note")]),
        html.Details(id=LEGEND_ID, className="legend", children=legend_items(comparing=False)),
        overlay.legend(),
    ])


def legend_items(comparing: bool, structure: str = "") -> list:
    """The legend's children: the diff marks and fused ops in one line, the rest under it;
    ``structure``: the note on groups found from structure (why, and how to read them), in
    sight, since the groups on screen are read by it."""
    entries = COMPARE_MARKS + LEGEND[len(COMPARE_MARKS):] if comparing else LEGEND
    items = [html.Span(text, className=f"legend-item mark mark-{key}")   # one component each
             for key, text in entries]
    note = [html.Span(structure, className="legend-item legend-note")] if structure else []
    return [html.Summary([*items[:LEGEND_SHOWN], html.Span("more…", className="legend-more"),
                          *note]),
            html.Div(items[LEGEND_SHOWN:], className="legend-rest")]


def _pane(pane_id: str, title_id: str) -> html.Div:
    return html.Div(className="pane", children=[
        html.Div(className="pane-head", children=[html.H3(id=title_id, className="pane-title"),
                                                  exports.pane_buttons(pane_id)]),
        cyto.Cytoscape(id=pane_id, className="graph", elements=[], stylesheet=PANE_STYLESHEET,
                       layout={"name": "preset", "fit": False},
                       minZoom=0.02, maxZoom=3, wheelSensitivity=0.3,
                       boxSelectionEnabled=False, autounselectify=True,
                       autoungrabify=True,   # nodes stay where both panes place them
                       style={"width": "100%", "height": "100%"}),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {
        "before": Output(UPDATES[ids.BEFORE], "data"), "after": Output(UPDATES[ids.AFTER], "data"),
        "before_title": Output(BEFORE_TITLE, "children"),
        "after_title": Output(AFTER_TITLE, "children"),
        "drawn_key": Output(DRAWN_KEY, "data"), "count": Output(SEARCH_COUNT, "children"),
        "message": Output(MESSAGE, "children"), "note": Output(NOTE, "children"),
        "legend": Output(LEGEND_ID, "children"), **overlay.OUTPUTS, **pass_figures.OUTPUTS},
        inputs={"ui": Input(ids.UI, "data")},
        state={"drawn": State(DRAWN_KEY, "data"), **overlay.STATES, **pass_figures.STATES},
        message="message", failed=lambda state: {**overlay.off(state), **pass_figures.off()})
    def render(state, workspace, ui, drawn, check_shown, latency_shown, **overlay_states):
        if state.overlay == wrong_value.ERROR:   # its errors, if found, kept for the payload
            wrong_value.fetch(services, workspace, workspace.clamp_step(state.step))
        payload = build_panes(workspace, state, UiState.from_store(ui, workspace.key))
        snapshot = workspace.result.snapshots[workspace.clamp_step(state.step)]
        hits = payload.search_hits
        comparison = workspace.comparison
        structure = structure_note(workspace.scopes.cut) if workspace.scopes.structured else ""
        legend = [comparison is not None, structure]
        shown = {"before_title": (f"A: {comparison.a_label}" if comparison else
                                  f"Before pass {snapshot.index + 1}: {snapshot.pass_name}")
                 + f"  ({snapshot.nodes_before} nodes)",
                 "after_title": (f"B: {comparison.b_label}" if comparison else
                                 f"After pass {snapshot.index + 1}: {snapshot.pass_name}")
                 + f"  ({snapshot.nodes_after} nodes)",
                 "note": _unchanged_note(snapshot, comparison is not None),
                 "message": "",
                 "count": f"{hits} match{'es' if hits != 1 else ''}" if state.search else ""}
        if not drawn or drawn.get("legend") != legend:   # sent when it changes, not each step
            shown["legend"] = legend_items(*legend)
        return {**shown, **pane_changes(workspace, payload, drawn, legend=legend),
                **overlay.shown(state, workspace, **overlay_states),
                **pass_figures.shown(state, workspace, check_shown, latency_shown)}

    app.clientside_callback(   # the page merges the updates into what the panes hold
        ClientsideFunction("graphlab", "applyPanes"),
        [Output(pane, "elements") for pane in UPDATES],
        [Input(store, "data") for store in UPDATES.values()],
        [State(pane, "elements") for pane in UPDATES], prevent_initial_call=True)

    @on_view(app, services, {"ui": Output(ids.UI, "data")},
             inputs={"tap_before": Input(ids.BEFORE, "tapNodeData"),
                     "tap_after": Input(ids.AFTER, "tapNodeData"),
                     "_expand": Input(EXPAND_ALL, "n_clicks"),
                     "_collapse": Input(COLLAPSE_ALL, "n_clicks"),
                     "_bodies": Input({"type": OPEN_BODY, "index": ALL}, "n_clicks")},
             state={"ui": State(ids.UI, "data")}, view_triggers=False,
             prevent_initial_call=True)   # errors: the panes already show the message
    def toggle(state, workspace, tap_before, tap_after, _expand, _collapse, _bodies, ui):
        trigger = ctx.triggered_id
        if not ctx.triggered[0]["value"]:
            return {}   # a freshly drawn button, not a click
        current = UiState.from_store(ui, workspace.key)
        expanded = drawn_groups(workspace, state, current)
        opened = set(current.opened)
        if trigger == EXPAND_ALL:
            expanded = set(workspace.scopes.groups)
        elif trigger == COLLAPSE_ALL:
            expanded = set()
        elif isinstance(trigger, dict):
            opened ^= {int(trigger["index"])}
        else:
            data = tap_before if trigger == ids.BEFORE else tap_after
            if not data or data.get("kind") != "group":
                return {}
            expanded ^= {local_id(data["id"])}
        return {"ui": regrouped(workspace, state, expanded, opened).to_store(workspace.key)}


def _unchanged_note(snapshot, comparing: bool) -> str:
    """Said over the panes when the pass left the graph as it was (both panes alike)."""
    if comparing or snapshot.changed:
        return ""
    return f"{snapshot.pass_name} changed nothing: both panes show the same graph"


PANEL = Panel("panes", MAIN, register, layout)
