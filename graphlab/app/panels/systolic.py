"""The systolic-array panel: the selected MatMul/Gemm/Conv (or a fused op holding one), or a
typed GEMM, on an R×C array; the array at any step of any fold, played or scrubbed; the folds'
phases over time; both timing models' totals side by side.

Array, dataflow, timing and a typed GEMM are in the URL (through view patches); the step is
not — playing would flood the browser history.  The chosen problem is kept in the page
(`PROBLEM`) so a step rebuilds its schedule from a few numbers and never touches the model.
"""

from __future__ import annotations

from dash import ALL, Input, Output, Patch, State, ctx, dcc, html, no_update

from compiler_core.errors import GraphLabError
from compiler_core.hardware.cost import compute_dtype
from compiler_core.hardware.gemm_shapes import gemm_problems, has_gemm
from compiler_core.hardware.systolic import DATAFLOWS, TIMINGS, Schedule

from .. import ids
from ..graph_analyses import sized_of
from ..messages import log
from ..services import Services
from ..systolic_view import DATAFLOW_NAMES, STRIDES, TIMING_NAMES, ArrayProblem, advance, \
    array_problem, array_shape, cursor_shape, describe, heatmap_figure, heatmap_title, \
    operands_figure, phase_marks, timeline_figure, totals_rows, typed_problem
from ..view_state import ViewState
from ..workbench import Workspace
from .on_view import error_message, on_view
from .panel import TAB, Panel

NAME = "systolic"
GEMM = "systolic-gemm"
ARRAY = "systolic-array"
DATAFLOW = "systolic-dataflow"
TIMING = "systolic-timing"
PART = "systolic-part"
PROBLEM = "systolic-problem"
SOURCE = "systolic-source"
TOTALS = "systolic-totals"
FOLD = "systolic-fold"
CYCLE = "systolic-cycle"
PLAY = "systolic-play"
STRIDE = "systolic-stride"
TICK = "systolic-tick"
HEATMAP = "systolic-heatmap"
OPERANDS = "systolic-operands"
TIMELINE = "systolic-timeline"
PICK = "systolic-pick"        # pattern-matching type, index = node id
VIEWER = "systolic-viewer"
HINT = "Select a MatMul, Gemm or Conv (or a fused op holding one) in the graph, or type a GEMM."
LISTED_NODES = 12
_NOTHING_CHOSEN = {"problem": None, "parts": [], "parts_style": {"display": "none"},
                   "totals": [], "viewer_hidden": True}
TICK_MS = 300
STATIC = {"displayModeBar": False, "responsive": True}


def layout(_: Services) -> html.Div:
    return html.Div(id=NAME, className="wide-panel systolic-panel", children=[
        dcc.Store(id=PROBLEM, storage_type="memory"),
        dcc.Interval(id=TICK, interval=TICK_MS, disabled=True),
        html.Div(className="panel-controls", children=[
            _field("GEMM M,N,K", dcc.Input(id=GEMM, type="text", debounce=True,
                                           placeholder="empty: the selected node",
                                           className="gemm-input")),
            _field("Array R×C", dcc.Input(id=ARRAY, type="text", debounce=True,
                                          className="array-input")),
            _field("Dataflow", dcc.RadioItems(
                id=DATAFLOW, value="os", inline=True, className="radio",
                options=[{"label": f" {d.upper()}", "value": d, "title": DATAFLOW_NAMES[d]}
                         for d in DATAFLOWS])),
            _field("Step through with", dcc.RadioItems(
                id=TIMING, value="overlap", inline=True, className="radio",
                options=[{"label": f" {t}", "value": t, "title": TIMING_NAMES[t]}
                         for t in TIMINGS])),
        ]),
        html.Div(id=SOURCE, className="systolic-source"),
        dcc.Dropdown(id=PART, options=[], value=0, clearable=False, className="part-select",
                     style={"display": "none"}),
        html.Div(id=VIEWER, hidden=True, children=[
            html.Div(id=TOTALS),
            html.Div(className="step-controls", children=[
                html.Button("▶ Play", id=PLAY, className="button primary"),
                _field("advance by", dcc.Dropdown(id=STRIDE, value="cycle", clearable=False,
                                                  className="stride-select",
                                                  options=[{"label": t, "value": k}
                                                           for k, t in STRIDES.items()])),
                html.Div(className="sliders", children=[
                    html.Div([html.Span("fold", className="slider-label"),
                              dcc.Slider(id=FOLD, min=1, max=1, step=1, value=1,
                                         tooltip={"placement": "top"})]),
                    html.Div([html.Span("cycle", className="slider-label"),
                              dcc.Slider(id=CYCLE, min=0, max=1, step=1, value=0,
                                         tooltip={"placement": "top"})]),
                ]),
            ]),
            dcc.Graph(id=HEATMAP, config=STATIC, style={"height": "460px"}),
            dcc.Graph(id=OPERANDS, config=STATIC, style={"height": "290px"}),
            dcc.Graph(id=TIMELINE, config=STATIC, style={"height": "300px"}),
        ]),
    ])


def _field(label: str, control) -> html.Label:
    return html.Label([html.Span(label, className="field-label"), control], className="field")


def register(app, services: Services) -> None:
    @app.callback(Output(GEMM, "value"), Output(ARRAY, "value"), Output(ARRAY, "placeholder"),
                  Output(DATAFLOW, "value"), Output(TIMING, "value"),
                  Input(ids.tab_view(NAME), "data"))
    def show_settings(view):
        if not view or view.get("panel") != NAME:
            return (no_update,) * 5
        state = ViewState.from_dict(view)
        try:
            rows, cols = array_shape("", state.target)
            placeholder = f"{rows}x{cols} ({state.target})"
        except GraphLabError:
            placeholder = "e.g. 16x16"
        return state.gemm, state.array, placeholder, state.dataflow, state.timing

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(GEMM, "value"), Input(ARRAY, "value"), Input(DATAFLOW, "value"),
                  Input(TIMING, "value"), State(ids.VIEW, "data"), prevent_initial_call=True)
    def request_settings(gemm, array, dataflow, timing, view):
        if not view:
            return no_update
        wanted = {"gemm": (gemm or "").strip(), "array": (array or "").strip(),
                  "dataflow": dataflow, "timing": timing}
        changed = {k: v for k, v in wanted.items() if v != view.get(k)}
        return changed or no_update   # nothing changed: the panel echoing the view

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input({"type": PICK, "index": ALL}, "n_clicks"), prevent_initial_call=True)
    def pick(_clicks):
        if not ctx.triggered[0]["value"]:
            return no_update   # a freshly drawn button, not a click
        return {"node": ctx.triggered_id["index"], "gemm": ""}

    @on_view(app, services, {"problem": Output(PROBLEM, "data"),
                             "source": Output(SOURCE, "children"),
                             "parts": Output(PART, "options"), "parts_style": Output(PART, "style"),
                             "totals": Output(TOTALS, "children"),
                             "viewer_hidden": Output(VIEWER, "hidden")},
             inputs={"part": Input(PART, "value")}, state={"shown": State(PROBLEM, "data")},
             tab=NAME, message="source", failed=lambda _: _NOTHING_CHOSEN)
    def choose(state, workspace, part, shown):
        if not state.gemm and state.node is None:
            return {**_NOTHING_CHOSEN,
                    "source": [html.P(HINT, className="hint"), *_picks(workspace, state)]}
        try:
            problem, parts = chosen_problem(workspace, state, part or 0)
            schedule = problem.schedule()
            heads, rows = totals_rows(problem)
        except Exception as err:  # noqa: BLE001 - said with the nodes the user can pick
            return {**_NOTHING_CHOSEN, "source": [error_message(err), *_picks(workspace, state)]}
        stored = problem.to_store()
        return {"problem": no_update if stored == shown else stored,
                "source": html.P(describe(problem, schedule)),
                "parts": [{"label": label, "value": i} for i, label in enumerate(parts)],
                "parts_style": {"display": "block" if len(parts) > 1 else "none"},
                "totals": _table(heads, rows), "viewer_hidden": False}

    @app.callback(Output(FOLD, "value"), Output(FOLD, "max"), Output(FOLD, "marks"),
                  Output(CYCLE, "value"), Output(CYCLE, "max"), Output(CYCLE, "marks"),
                  Output(TICK, "disabled", allow_duplicate=True),
                  Input(PROBLEM, "data"), Input(FOLD, "value"), Input(TICK, "n_intervals"),
                  State(CYCLE, "value"), State(STRIDE, "value"), prevent_initial_call=True)
    def position(stored, fold_number, _ticks, cycle, stride):
        schedule = _schedule_of(stored)
        if schedule is None:
            return (no_update,) * 6 + (True,)
        trigger = ctx.triggered_id
        fold, cycle, stop = (0, 0, True) if trigger == PROBLEM else \
            (*_clamped(schedule, fold_number, cycle), no_update)
        if trigger == TICK:
            fold, cycle, finished = advance(schedule, fold, cycle, stride)
            stop = True if finished else no_update
        last = schedule.timeline.fold_length(fold) - 1
        return (fold + 1, schedule.folds, {1: "1", schedule.folds: str(schedule.folds)},
                min(cycle, last), last, phase_marks(schedule, fold), stop)

    @app.callback(Output(TICK, "disabled", allow_duplicate=True), Input(PLAY, "n_clicks"),
                  State(TICK, "disabled"), prevent_initial_call=True)
    def play(_clicks, disabled):
        return not disabled

    @app.callback(Output(PLAY, "children"), Input(TICK, "disabled"))
    def play_label(disabled):
        return "▶ Play" if disabled else "⏸ Pause"

    @app.callback(Output(HEATMAP, "figure"), Output(OPERANDS, "figure"),
                  Output(TIMELINE, "figure"),
                  Input(PROBLEM, "data"), Input(FOLD, "value"), Input(CYCLE, "value"))
    def draw(stored, fold_number, cycle):
        schedule = _schedule_of(stored)
        if schedule is None:
            return no_update, no_update, no_update
        fold, cycle = _clamped(schedule, fold_number, cycle)
        step = schedule.step(fold, cycle)
        changed = ctx.triggered_prop_ids.values()
        if PROBLEM in changed or not ctx.triggered_id:
            return (heatmap_figure(schedule, step), operands_figure(schedule, step),
                    timeline_figure(schedule, fold, cycle))
        heatmap = Patch()   # one z matrix and a title: a step stays small for any layer
        heatmap["data"][0]["z"] = step.pe_state.tolist()
        heatmap["layout"]["title"]["text"] = heatmap_title(schedule, step)
        if FOLD in changed:
            timeline = timeline_figure(schedule, fold, cycle)
        else:
            timeline = Patch()
            timeline["layout"]["shapes"] = [cursor_shape(schedule, fold, cycle)]
        return heatmap, operands_figure(schedule, step), timeline


def _schedule_of(stored: dict | None) -> Schedule | None:
    """The kept problem's schedule; None without one, or when the page sent something
    unreadable (logged; the panel's source line already says what the user can do)."""
    if not stored:
        return None
    try:
        return ArrayProblem.from_store(stored).schedule()
    except Exception:  # noqa: BLE001 - a step must never take the page down
        log.exception("unreadable systolic problem in the page")
        return None


def _clamped(schedule: Schedule, fold_number, cycle) -> tuple[int, int]:
    """(fold index, local cycle) from the sliders, kept inside the schedule."""
    fold = min(max((fold_number or 1) - 1, 0), schedule.folds - 1)
    return fold, min(max(cycle or 0, 0), schedule.timeline.fold_length(fold) - 1)


def chosen_problem(ws: Workspace, state: ViewState, part: int) -> tuple[ArrayProblem, list[str]]:
    """The problem to simulate (a typed GEMM, else the selected node's GEMM number `part`)
    and the labels of the node's GEMMs; a GraphLabError says what to pick instead."""
    rows, cols = array_shape(state.array, state.target)
    if state.gemm:
        problem = typed_problem(state.gemm)
        return array_problem(problem, rows, cols, state.dataflow, state.timing, state.target,
                             None), [problem.source]
    node = _selected_node(ws, state)
    if node is None:
        raise GraphLabError(f"node #{state.node} is not in this pass's graphs")
    if not has_gemm(node):
        raise GraphLabError(f"{node.name} ({node.qualified_op}) has no matrix multiply or "
                            f"convolution to put on the array")
    problems = gemm_problems(node, ws.sizes.bindings)
    problem = problems[min(part, len(problems) - 1)]
    labels = [f"GEMM {i + 1} of {len(problems)}: {p.source} ({p.op_type}) "
              f"M={p.M}, N={p.N}, K={p.K}" for i, p in enumerate(problems)]
    return array_problem(problem, rows, cols, state.dataflow, state.timing, state.target,
                         compute_dtype(node)), labels


def _selected_node(ws: Workspace, state: ViewState):
    if state.node is None:
        return None
    before, after = (sized_of(ws, g) for g in ws.graphs_of_step(ws.clamp_step(state.step)))
    return after.node_by_id(state.node) or before.node_by_id(state.node)


def _picks(ws: Workspace, state: ViewState) -> list:
    """The nodes of the current graph that can go on the array, as buttons that select them."""
    _, after = ws.graphs_of_step(ws.clamp_step(state.step))
    nodes = [n for n in after.nodes if has_gemm(n)]
    if not nodes:
        return [html.Div("This graph has no MatMul, Gemm or Conv.", className="muted")]
    return [html.Div("Nodes with a GEMM in this graph:", className="muted"),
            html.Div(className="node-picks", children=[
                html.Button(f"{n.op_type}  {n.name.strip('/')}", className="button node-pick",
                            id={"type": PICK, "index": n.id})
                for n in nodes[:LISTED_NODES]])]


def _table(heads: list[str], rows: list[list[str]]) -> html.Table:
    return html.Table(className="kv summary-table", children=[
        html.Tr([html.Th(h) for h in heads]),
        *(html.Tr([html.Td(row[0], className="key"), *(html.Td(v) for v in row[1:])])
          for row in rows)])


PANEL = Panel(NAME, TAB, register, layout, tab="Systolic", follows_selection=True)
