"""The memory panel: the arena plan of the selected pass's result (offset × time, a rectangle
per tensor), its peak beside the naive total and the lower bound, and what the pass did to
them; "compare" draws the plan before the pass above the plan after it."""

from __future__ import annotations

from dash import Input, Output, State, ctx, html

from .. import ids
from ..graph_analyses import memory_plan_of
from ..memory_view import PlanSummary, memory_figure, summary_rows
from ..services import Services
from ..view_state import ViewState
from .chart_panel import GRAPH_CONFIG, chart, compare_toggle, compare_value, picked_node, \
    register_compare_toggle
from .on_view import on_view
from .panel import TAB, Panel

NAME = "memory"
BEFORE_GRAPH = "memory-before-graph"
BEFORE_BOX = "memory-before-graph-box"
AFTER_GRAPH = "memory-after-graph"
SUMMARY = "memory-summary"
TOGGLE = "memory-compare"
ALONE = {"height": "min(560px, 62vh)"}
COMPARED = {"height": "330px"}   # both charts of a comparison: one height, one scale


def layout(_: Services) -> html.Div:
    return html.Div(id=NAME, className="wide-panel chart-panel", children=[
        compare_toggle(TOGGLE),
        html.Div(chart(BEFORE_GRAPH, GRAPH_CONFIG, COMPARED),
                 id=BEFORE_BOX, hidden=True),
        chart(AFTER_GRAPH, GRAPH_CONFIG, ALONE),
        html.Div(id=SUMMARY, className="chart-caption"),
        html.P("Each rectangle is an intermediate tensor: across, the steps it is live; up, "
               "the bytes it reserves in the arena. Graph inputs, outputs and weights live "
               "outside the arena. Click a rectangle to select the node that made it.",
               className="muted"),
    ])


def register(app, services: Services) -> None:
    register_compare_toggle(app, TOGGLE)

    @on_view(app, services, {"after": Output(AFTER_GRAPH, "figure"),
                             "before": Output(BEFORE_GRAPH, "figure"),
                             "before_hidden": Output(BEFORE_BOX, "hidden"),
                             "after_style": Output(AFTER_GRAPH, "style"),
                             "summary": Output(SUMMARY, "children"),
                             "toggle": Output(TOGGLE, "value")},
             state={"toggle_shown": State(TOGGLE, "value")}, tab=NAME, message="summary",
             failed=lambda state: {"before_hidden": True, "toggle": compare_value(state)})
    def render(state, workspace, toggle_shown):
        after, before, summary = memory_view(workspace, state)
        shown = {"after": after, "before_hidden": before is None,
                 "after_style": ALONE if before is None else COMPARED, "summary": summary,
                 "toggle": compare_value(state, toggle_shown)}
        return shown if before is None else {**shown, "before": before}

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
    after_plan = memory_plan_of(workspace, after)
    before_plan = memory_plan_of(workspace, before)
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


PANEL = Panel(NAME, TAB, register, layout, tab="Memory", follows_selection=True)
