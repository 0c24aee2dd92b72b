"""The roofline panel: every op of the selected pass's result on the target's roofline; with
"show what the pass changed", the ops it removed hollow and arrows to what replaced them.
Clicking a point selects its node in the panes.  Under it, the traffic story across the
pipeline (`traffic_view`): bytes, time, FLOPs and arena peak after every pass; clicking a pass
selects it.  Once the pass was measured ("Measure this pass" in the pass list), a table of
the slowest ops after it, measured beside predicted on this machine, with the ratio and why a
prediction misses."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from .. import ids
from ...units import format_seconds
from ..graph_analyses import cost_of, traffic_of
from ..traffic_view import fusion_caption, picked_pass, traffic_figure
from ..roofline_view import assumed_caption, left_out_caption, op_points, pass_change, \
    roofline_figure
from ..services import Services
from ..step_latency import cached_latency
from ..view_state import ViewState
from .chart_panel import GRAPH_CONFIG, chart, compare_toggle, compare_value, picked_node, \
    register_compare_toggle
from . import latency
from .on_view import on_view
from .panel import TAB, Panel

NAME = "roofline"
GRAPH = "roofline-graph"
CAPTION = "roofline-caption"
TOGGLE = "roofline-compare"
TRAFFIC = "roofline-traffic"
TRAFFIC_CAPTION = "roofline-traffic-caption"
MEASURED = "roofline-measured"
MEASURED_SHOWN = 10
# A new measurement reaches the table only while this tab is open (as the view does through
# its tab store): a step redraws the pass's kept measurement, and a closed tab asks nothing.
MEASURED_WHILE_OPEN = "roofline-measured-while-open"
FORWARD_WHILE_OPEN = """function (_result, view) {
  return view && view.panel === %s ? Date.now() : window.dash_clientside.no_update;
}""" % repr(NAME)


def layout(_: Services) -> html.Div:
    return html.Div(id=NAME, className="wide-panel chart-panel", children=[
        compare_toggle(TOGGLE),
        chart(GRAPH, GRAPH_CONFIG, {"height": "600px"}),
        html.Div(id=CAPTION, className="chart-caption"),
        html.Div(id=MEASURED, className="chart-caption"),
        dcc.Store(id=MEASURED_WHILE_OPEN),
        html.P("Each point is an op, on the roof at its arithmetic intensity (the cost model "
               "runs every op at its roofline bound); its area is its share of the estimated "
               "time. Click a point to select the node.", className="muted"),
        chart(TRAFFIC, GRAPH_CONFIG, {"height": "300px"}),
        html.Div(id=TRAFFIC_CAPTION, className="chart-caption"),
    ])


def register(app, services: Services) -> None:
    register_compare_toggle(app, TOGGLE)

    @on_view(app, services, {"figure": Output(GRAPH, "figure"),
                             "caption": Output(CAPTION, "children"),
                             "toggle": Output(TOGGLE, "value"),
                             "traffic": Output(TRAFFIC, "figure"),
                             "traffic_caption": Output(TRAFFIC_CAPTION, "children"),
                             "measured": Output(MEASURED, "children")},
             state={"toggle_shown": State(TOGGLE, "value")},
             tab=NAME, message="caption", failed=lambda state: {"toggle": compare_value(state)})
    def render(state, workspace, toggle_shown):
        """The tab's charts and tables for the view, in one answer (a callback more cost
        every opening of the tab a round of the renderer's bookkeeping)."""
        figure, caption = roofline_view(workspace, state)
        traffic = traffic_of(workspace, state.target)
        step = workspace.clamp_step(state.step)
        return {"figure": figure, "caption": caption,
                "toggle": compare_value(state, toggle_shown),
                "traffic": traffic_figure(traffic, step),
                "traffic_caption": fusion_caption(traffic),
                "measured": measured_table(workspace, step)}

    app.clientside_callback(FORWARD_WHILE_OPEN, Output(MEASURED_WHILE_OPEN, "data"),
                            Input(latency.RESULT, "children"), State(ids.VIEW, "data"),
                            prevent_initial_call=True)

    @on_view(app, services, {"measured": Output(MEASURED, "children", allow_duplicate=True)},
             tab=NAME, inputs={"_measured": Input(MEASURED_WHILE_OPEN, "data")},
             view_triggers=False, message="measured", prevent_initial_call=True)
    def render_measured(state, workspace, _measured):
        """The measured table again when the pass is measured while the tab is open."""
        return {"measured": measured_table(workspace, workspace.clamp_step(state.step))}

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(GRAPH, "clickData"), prevent_initial_call=True)
    def pick(click):
        return picked_node(click)

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(TRAFFIC, "clickData"), prevent_initial_call=True)
    def pick_pass(click):
        step = picked_pass(click)
        return no_update if step is None else {"step": step}


def roofline_view(workspace, state: ViewState):
    step = workspace.clamp_step(state.step)
    snapshot = workspace.result.snapshots[step]
    before, after = workspace.graphs_of_step(step)
    after_cost = cost_of(workspace, after, state.target)
    found = op_points(after, after_cost)
    where = f"pass {step + 1} ({snapshot.pass_name})"
    change = None
    # two lines: a pass's name is long, and a plotly title never wraps in the side column
    title = f"Roofline of {after_cost.target.name}:<br>the ops after {where}"
    if state.compare:
        before_cost = cost_of(workspace, before, state.target)
        change = pass_change(before, op_points(before, before_cost), after, found,
                             snapshot.diff, before_cost.total_est_seconds,
                             after_cost.total_est_seconds)
        title = f"Roofline of {after_cost.target.name}:<br>what {where} did"
    figure = roofline_figure(after_cost.target, found, title, state.node, change,
                             subtitle=_change_summary(change) if change else "")
    lines = [assumed_caption(found), left_out_caption(found), *after_cost.notes]
    return figure, [html.Div(line) for line in lines if line]


def measured_table(workspace, step: int):
    """The slowest ops after the pass, measured and predicted (once the pass is measured)."""
    latency = cached_latency(workspace, step)
    if latency is None:
        return html.Div("Measure this pass (under the pass list) to see each op's time in "
                        "onnxruntime beside its prediction on this machine.", className="muted")
    comparison = latency.after
    ops = sorted(comparison.ops, key=lambda op: -op.measured_ms)[:MEASURED_SHOWN]
    rows = [html.Tr([html.Td(("* " if op.profiled.fused_by_onnxruntime else "")
                             + op.profiled.op_type,
                             title=op.profiled.node + "\nkernels: "
                             + "; ".join(op.profiled.kernels)),
                     html.Td(f"{op.measured_ms:.3f}", className="num"),
                     html.Td(f"{op.predicted_ms:.3f}", className="num"),
                     html.Td("-" if op.ratio is None else f"{op.ratio:.2f}"
                             + (" ⚠" if op.miss() else ""), className="num",
                             title=op.miss() or "within 2x of the prediction")])
            for op in ops]
    rho = comparison.spearman
    return html.Div(id="roofline-measured-ops", children=[
        html.Div(f"Measured on {comparison.target.name}, the slowest ops after the pass (ms, "
                 f"medians; * nodes onnxruntime fused itself; ⚠ off by more than 2x: hover "
                 f"for the term that dominates; hover an op for its nodes)"
                 + (f"; rank correlation of all ops {rho:.2f}" if rho is not None else "")),
        html.Table(className="measured-ops", children=[
            html.Thead(html.Tr([html.Th(h) for h in ("op", "measured", "predicted",
                                                      "ratio")])),
            html.Tbody(rows)])])


def _change_summary(change) -> str:
    """What the pass did to the ops and their estimated time, on two lines (the side column
    is narrower than both, and a plotly subtitle never wraps)."""
    if not change.old and not change.new_ids:
        return "it changed no op"
    before, after = change.seconds_before, change.seconds_after
    speed = f" ({before / after:.2f}× faster)" if after > 0 and before != after else ""
    return (f"{len(change.old)} ops removed or changed (hollow) → {len(change.new_ids)} made "
            f"(outlined);<br>estimated {format_seconds(before)} → {format_seconds(after)}"
            f"{speed}")


PANEL = Panel(NAME, TAB, register, layout, tab="Roofline", follows_selection=True)
