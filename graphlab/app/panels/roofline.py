"""The roofline panel: every op of the selected pass's result on the target's roofline; with
"show what the pass changed", the ops it removed hollow and arrows to what replaced them.
Clicking a point selects its node in the panes."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from .. import ids
from ...units import format_seconds
from ..graph_analyses import cost_of
from ..messages import user_message
from ..roofline_view import left_out_caption, op_points, pass_change, roofline_figure
from ..services import Services
from ..view_state import ViewState
from .chart_panel import COMPARE, GRAPH_CONFIG, compare_toggle, picked_node, \
    register_compare_toggle

GRAPH = "roofline-graph"
CAPTION = "roofline-caption"
TOGGLE = "roofline-compare"


def layout() -> html.Div:
    return html.Div(id=ids.ROOFLINE, className="wide-panel chart-panel", children=[
        compare_toggle(TOGGLE),
        dcc.Graph(id=GRAPH, config=GRAPH_CONFIG, style={"height": "600px"}),
        html.Div(id=CAPTION, className="chart-caption"),
        html.P("Each point is an op, on the roof at its arithmetic intensity (the cost model "
               "runs every op at its roofline bound); its area is its share of the estimated "
               "time. Click a point to select the node.", className="muted"),
    ])


def register(app, services: Services) -> None:
    register_compare_toggle(app, TOGGLE)

    @app.callback(Output(GRAPH, "figure"), Output(CAPTION, "children"),
                  Output(TOGGLE, "value"), Input(ids.VIEW, "data"),
                  State(ids.UPLOAD_TOKEN, "data"))
    def render(view, upload):
        if not view or view.get("panel") != "roofline":
            return no_update, no_update, no_update
        state = ViewState.from_dict(view)
        toggle = [COMPARE] if state.compare else []
        try:
            workspace = services.workspace(state, upload)
            figure, caption = roofline_view(workspace, state)
        except Exception as err:  # noqa: BLE001 - the panel shows it; the page stays usable
            return no_update, html.Div(user_message(err), className="message error"), toggle
        return figure, caption, toggle

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(GRAPH, "clickData"), prevent_initial_call=True)
    def pick(click):
        return picked_node(click)


def roofline_view(workspace, state: ViewState):
    step = workspace.clamp_step(state.step)
    snapshot = workspace.result.snapshots[step]
    before, after = workspace.graphs_of_step(step)
    after_cost = cost_of(workspace, after, state.target, state.bindings)
    found = op_points(after, after_cost)
    where = f"pass {step + 1} ({snapshot.pass_name})"
    change = None
    title = f"Roofline of {after_cost.target.name}: the ops after {where}"
    if state.compare:
        before_cost = cost_of(workspace, before, state.target, state.bindings)
        change = pass_change(before, op_points(before, before_cost), after, found,
                             snapshot.diff, before_cost.total_est_seconds,
                             after_cost.total_est_seconds)
        title = f"Roofline of {after_cost.target.name}: what {where} did"
    figure = roofline_figure(after_cost.target, found, title, state.node, change,
                             subtitle=_change_summary(change) if change else "")
    lines = [left_out_caption(found), *after_cost.notes]
    return figure, [html.Div(line) for line in lines if line]


def _change_summary(change) -> str:
    if not change.old and not change.new_ids:
        return "it changed no op"
    before, after = change.seconds_before, change.seconds_after
    speed = f" ({before / after:.2f}× faster)" if after > 0 and before != after else ""
    return (f"{len(change.old)} ops removed or changed (hollow) → {len(change.new_ids)} made "
            f"(outlined); estimated {format_seconds(before)} → {format_seconds(after)}{speed}")
