"""The memory panel: the arena plan of the selected pass's result (offset × time, a rectangle
per tensor), its peak beside the naive total and the lower bound, and what the pass did to
them; "compare" draws the plan before the pass above the plan after it."""

from __future__ import annotations

from dash import Input, Output, State, ctx, dcc, html, no_update

from .. import ids
from ..graph_analyses import memory_plan_of
from ..memory_view import PlanSummary, memory_figure, summary_rows
from ..messages import user_message
from ..services import Services
from ..view_state import ViewState
from .chart_panel import COMPARE, GRAPH_CONFIG, compare_toggle, picked_node, \
    register_compare_toggle

BEFORE_GRAPH = "memory-before-graph"
AFTER_GRAPH = "memory-after-graph"
SUMMARY = "memory-summary"
TOGGLE = "memory-compare"
ALONE = {"height": "min(560px, 62vh)"}
COMPARED = {"height": "330px"}   # both charts of a comparison: one height, one scale


def layout() -> html.Div:
    return html.Div(id=ids.MEMORY, className="wide-panel chart-panel", children=[
        compare_toggle(TOGGLE),
        html.Div(dcc.Graph(id=BEFORE_GRAPH, config=GRAPH_CONFIG, style=COMPARED),
                 id=f"{BEFORE_GRAPH}-box", hidden=True),
        dcc.Graph(id=AFTER_GRAPH, config=GRAPH_CONFIG, style=ALONE),
        html.Div(id=SUMMARY, className="chart-caption"),
        html.P("Each rectangle is an intermediate tensor: across, the steps it is live; up, "
               "the bytes it reserves in the arena. Graph inputs, outputs and weights live "
               "outside the arena. Click a rectangle to select the node that made it.",
               className="muted"),
    ])


def register(app, services: Services) -> None:
    register_compare_toggle(app, TOGGLE)

    @app.callback(Output(AFTER_GRAPH, "figure"), Output(BEFORE_GRAPH, "figure"),
                  Output(f"{BEFORE_GRAPH}-box", "hidden"), Output(AFTER_GRAPH, "style"),
                  Output(SUMMARY, "children"), Output(TOGGLE, "value"), Input(ids.VIEW, "data"),
                  State(ids.UPLOAD_TOKEN, "data"))
    def render(view, upload):
        if not view or view.get("panel") != "memory":
            return (no_update,) * 6
        state = ViewState.from_dict(view)
        toggle = [COMPARE] if state.compare else []
        try:
            workspace = services.workspace(state, upload)
            after, before, summary = memory_view(workspace, state)
        except Exception as err:  # noqa: BLE001 - the panel shows it; the page stays usable
            return (no_update, no_update, True, no_update,
                    html.Div(user_message(err), className="message error"), toggle)
        return (after, no_update if before is None else before, before is None,
                ALONE if before is None else COMPARED, summary, toggle)

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(AFTER_GRAPH, "clickData"), Input(BEFORE_GRAPH, "clickData"),
                  prevent_initial_call=True)
    def pick(after_click, before_click):
        return picked_node(after_click if ctx.triggered_id == AFTER_GRAPH else before_click)


def memory_view(workspace, state: ViewState):
    """(after figure, before figure or None, summary table) for the selected pass."""
    step = workspace.clamp_step(state.step)
    snapshot = workspace.result.snapshots[step]
    before, after = workspace.graphs_of_step(step)
    after_plan = memory_plan_of(workspace, after, state.bindings)
    before_plan = memory_plan_of(workspace, before, state.bindings)
    where = f"pass {step + 1} ({snapshot.pass_name})"
    if not state.compare:
        after_figure = memory_figure(after_plan, after, f"Arena after {where}", state.node)
        before_figure = None
    else:   # one scale for both, so the heights compare
        top = max(before_plan.peak_bytes, after_plan.peak_bytes)
        before_figure = memory_figure(before_plan, before, f"Arena before {where}", state.node,
                                      top)
        after_figure = memory_figure(after_plan, after, f"Arena after {where}", state.node, top)
    rows = summary_rows(PlanSummary.of(before_plan), PlanSummary.of(after_plan))
    table = html.Table(className="kv summary-table", children=[
        html.Tr([html.Th(""), html.Th(f"before {where}"), html.Th("after"), html.Th("change")]),
        *(html.Tr([html.Td(label, className="key"), html.Td(old), html.Td(new),
                   html.Td(change, className="change")]) for label, old, new, change in rows)])
    notes = [html.Div(note, className="muted") for note in after_plan.notes[1:]]
    return after_figure, before_figure, [table, *notes]
