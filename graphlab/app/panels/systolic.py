"""The systolic-array panel: a GEMM of the graph (the selected node's, else the graph's first;
any of them from a dropdown), or a typed GEMM, on an R×C array with its memory (SRAM per
operand, DRAM words per cycle: the target's unless typed); the array at any step of any
fold, stepped by a cycle, a phase or a fold either way, or played at a chosen speed, with
each SRAM's halves and the DRAM traffic at that step; the folds' phases over time; both
timing models' totals side by side; on request, the GEMM under the three dataflows with a
sweep over SRAM sizes and bandwidths, and the whole model's GEMMs summed pass by pass.

Array, dataflow, timing, a typed GEMM and the selected node are in the URL (through view
patches); the step is not — playing would flood the browser history.  The chosen problem is
kept in the page (`PROBLEM`) so a step rebuilds its schedule from a few numbers and never
touches the model.

The GEMM dropdown's value is `"NODE:PART"` (the node's id, which of its GEMMs).  Choosing one
selects its node in the view, like a click in the panes; the value the server itself shows is
kept in `CHOSEN`, so its echo is told apart from a person's choice.  With no node selected
(or one without a GEMM) the graph's first GEMM is shown and nothing is selected.
"""

from __future__ import annotations

import json
from functools import lru_cache

from dash import Input, Output, Patch, State, ctx, dcc, html, no_update

from compiler_core.errors import GraphLabError
from compiler_core.hardware.cost import compute_dtype
from compiler_core.hardware.gemm_shapes import gemm_problems, has_gemm
from compiler_core.hardware.systolic import DATAFLOWS, TIMINGS, Schedule
from compiler_core.hardware.systolic.memory_config import memory_of_target
from compiler_core.hardware.systolic.memory_steps import dram_traffic, memory_step
from compiler_core.compilation.pass_schedules import pass_schedules
from compiler_core.hardware.systolic_choices import compare_dataflows, sweep_memory, sweep_timing
from compiler_core.hardware.targets import get_target

from .. import ids
from ..graph_analyses import sized_of
from ..messages import log
from ..services import Services
from ..systolic_memory_view import clock_cursor, comparison_rows, dram_figure, sram_figure, \
    sweep_figure
from ..systolic_view import DATAFLOW_NAMES, STRIDES, TIMING_NAMES, ArrayProblem, advance, \
    array_problem, array_shape, cursor_shape, describe, heatmap_figure, heatmap_title, \
    memory_text, memory_values, operands_figure, phase_marks, retreat, schedule_of, \
    timeline_figure, totals_rows, typed_memory, typed_problem
from ..view_state import ViewState
from ..workbench import Workspace
from .chart_panel import chart
from .on_view import error_message, on_view
from .panel import TAB, Panel
from .view_fanout import Forward

NAME = "systolic"
GEMM = "systolic-gemm"
ARRAY = "systolic-array"
DATAFLOW = "systolic-dataflow"
TIMING = "systolic-timing"
SRAM = "systolic-sram"
BANDWIDTH = "systolic-bandwidth"
SRAM_FIGURE = "systolic-sram-halves"
DRAM_FIGURE = "systolic-dram"
CHOICES_BUTTON = "systolic-choices-button"
CHOICES = "systolic-choices"
SWEEP = "systolic-sweep"
PASSES_BUTTON = "systolic-passes-button"
PASSES = "systolic-passes"
CHOICES_ASKED = "systolic-choices-asked"   # the problem, once the comparison was asked for
PASSES_ASKED = "systolic-passes-asked"     # the view, once the whole model was asked for
GEMM_SELECT = "systolic-gemm-select"
CHOSEN = "systolic-chosen"
DRAWN = "systolic-drawn"      # the step the figures show: {"problem", "fold", "cycle"}
SLIDERS_MOVED = "systolic-sliders-moved"   # a slider moved off the step drawn (`MOVED`)
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
VIEWER = "systolic-viewer"
# the step buttons: id -> (direction, stride)
STEPS = {"systolic-prev-fold": (-1, "fold"), "systolic-prev-phase": (-1, "phase"),
         "systolic-prev-cycle": (-1, "cycle"), "systolic-next-cycle": (1, "cycle"),
         "systolic-next-phase": (1, "phase"), "systolic-next-fold": (1, "fold")}
STEP_LABELS = {"systolic-prev-fold": "◀ fold", "systolic-prev-phase": "◀ phase",
               "systolic-prev-cycle": "◀ cycle", "systolic-next-cycle": "cycle ▶",
               "systolic-next-phase": "phase ▶", "systolic-next-fold": "fold ▶"}
STEP_TITLES = {"fold": "the start of the {} fold", "phase": "the start of the {} phase",
               "cycle": "the {} cycle"}
NO_GEMM = ("This graph has no MatMul, Gemm or Conv: type a GEMM as M,N,K to put one on the "
           "array.")
LISTED_GEMMS = 400   # dropdown options; a bigger graph's others are reached by a click
_NOTHING_CHOSEN = {"problem": None, "totals": [], "viewer_hidden": True}
TICK_MS = 300
_ROW = {"display": "flex", "flexWrap": "wrap", "gap": "4px", "alignItems": "end"}
_NO_WRAP = {"whiteSpace": "nowrap"}
STATIC = {"displayModeBar": False, "responsive": True}


def layout(_: Services) -> html.Div:
    return html.Div(id=NAME, className="wide-panel systolic-panel", children=[
        dcc.Store(id=PROBLEM, storage_type="memory"),
        dcc.Store(id=CHOSEN, storage_type="memory"),
        dcc.Store(id=DRAWN, storage_type="memory"),
        dcc.Store(id=SLIDERS_MOVED, storage_type="memory"),
        dcc.Store(id=CHOICES_ASKED, storage_type="memory"),
        dcc.Store(id=PASSES_ASKED, storage_type="memory"),
        dcc.Interval(id=TICK, interval=TICK_MS, disabled=True),
        html.Div(className="panel-controls", children=[
            _field("GEMM M,N,K", dcc.Input(id=GEMM, type="text", debounce=True,
                                           placeholder="e.g. 64,64,64",
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
            _field("SRAM kB per operand", dcc.Input(id=SRAM, type="text", debounce=True,
                                                    className="memory-input")),
            _field("DRAM words/cycle per operand", dcc.Input(
                id=BANDWIDTH, type="text", debounce=True, className="memory-input")),
        ]),
        _field("GEMM of the graph", dcc.Dropdown(
            id=GEMM_SELECT, options=[], value=None, clearable=False, className="gemm-select",
            placeholder="no GEMM in this graph")),
        html.Div(id=SOURCE, className="systolic-source"),
        html.Div(id=VIEWER, hidden=True, children=[
            html.Div(id=TOTALS),
            html.Div(className="step-controls", children=[
                html.Div(className="step-buttons", style=_ROW, children=[
                    html.Button(STEP_LABELS[key], id=key, className="button step",
                                style=_NO_WRAP, title="to " + STEP_TITLES[stride].format(
                                    "previous" if direction < 0 else "next"))
                    for key, (direction, stride) in STEPS.items()]),
                html.Div(style=_ROW, children=[
                    html.Button("▶ Play", id=PLAY, className="button primary",
                                style=_NO_WRAP),
                    _field(f"play: per {TICK_MS / 1000:g} s", dcc.Dropdown(
                        id=STRIDE, value="ten", clearable=False, className="stride-select",
                        options=[{"label": t, "value": k} for k, t in STRIDES.items()]))]),
                html.Div(className="sliders", children=[
                    html.Div([html.Span("fold", className="slider-label"),
                              dcc.Slider(id=FOLD, min=1, max=1, step=1, value=1,
                                         tooltip={"placement": "top"})]),
                    html.Div([html.Span("cycle", className="slider-label"),
                              dcc.Slider(id=CYCLE, min=0, max=1, step=1, value=0,
                                         tooltip={"placement": "top"})]),
                ]),
            ]),
            chart(HEATMAP, STATIC, {"height": "460px"}),
            chart(SRAM_FIGURE, STATIC, {"height": "330px"}),
            chart(DRAM_FIGURE, STATIC, {"height": "300px"}),
            chart(OPERANDS, STATIC, {"height": "330px"}),
            chart(TIMELINE, STATIC, {"height": "300px"}),
            html.Div(className="systolic-choices", children=[
                html.Button("Compare dataflows · sweep SRAM and bandwidth",
                            id=CHOICES_BUTTON, className="button"),
                dcc.Loading(html.Div(id=CHOICES), type="dot"),
                chart(SWEEP, STATIC, {"height": "430px", "display": "none"}),
            ]),
            html.Div(className="systolic-passes", children=[
                html.Button("Whole model, pass by pass", id=PASSES_BUTTON,
                            className="button"),
                dcc.Loading(html.Div(id=PASSES), type="dot"),
            ]),
        ]),
    ])


def _field(label: str, control) -> html.Label:
    return html.Label([label, control], className="field")


# Answered in the page (a request each would cost a round trip on every opening of the tab):
# a person chose a GEMM, so the view selects its node and drops a typed GEMM (the server's own
# choice coming back, or another GEMM of the selected node, changes nothing: `choose` shows
# it); and the Play button's label.
REQUEST_GEMM = """function (value, chosen, view) {
  var skip = window.dash_clientside.no_update, picked = /^(\\d+):(\\d+)$/.exec(String(value));
  if (!view || !picked || value === chosen) { return skip; }
  var node = parseInt(picked[1], 10);
  if (node === view.node && !view.gemm) { return skip; }
  return {node: node, gemm: ""};
}"""
# A slider moved: drawn on the server, unless the figures show that step already (the answer
# that moved it drew it: a new problem's first step, a step button, a tick of Play).
MOVED = """function (fold, cycle, problem, drawn) {
  if (!problem || drawn && drawn.fold === (fold || 1) - 1 && drawn.cycle === (cycle || 0)
      && JSON.stringify(drawn.problem) === JSON.stringify(problem)) {
    return window.dash_clientside.no_update;
  }
  return {fold: fold, cycle: cycle};
}"""
PLAY_LABEL = """function (stopped) { return stopped ? "\u25b6 Play" : "\u23f8 Pause"; }"""
# What is drawn on request (the dataflow comparison, the whole model) hears the problem or the
# view only once asked: until then a new problem or view costs no request.  A click asks for
# the problem or the view held; later ones are handed on by `choose` (a new problem) and by
# the page's forward of the view (`ASKED_WITH_THE_VIEW`), not by a callback hearing them,
# which would run on every opening of the tab to find nothing asked.
ONCE_ASKED = """function (clicks, heard) {
  return clicks && heard ? {heard: heard, clicks: clicks} : window.dash_clientside.no_update;
}"""
ASKED_WITH_THE_VIEW = """function (view, states) {
  var clicks = states[0];
  return [view && view.panel === %s ? (%s)(clicks, view) : window.dash_clientside.no_update];
}""" % (json.dumps(NAME), ONCE_ASKED)


def register(app, services: Services) -> None:
    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(GEMM, "value"), Input(ARRAY, "value"), Input(DATAFLOW, "value"),
                  Input(TIMING, "value"), Input(SRAM, "value"), Input(BANDWIDTH, "value"),
                  State(ids.VIEW, "data"), prevent_initial_call=True)
    def request_settings(gemm, array, dataflow, timing, sram, bandwidth, view):
        if not view:
            return no_update
        wanted = {"gemm": (gemm or "").strip(), "array": (array or "").strip(),
                  "dataflow": dataflow, "timing": timing, "sram": (sram or "").strip(),
                  "bandwidth": (bandwidth or "").strip()}
        changed = {k: v for k, v in wanted.items() if v != view.get(k)}
        return changed or no_update   # nothing changed: the panel echoing the view

    app.clientside_callback(REQUEST_GEMM, Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                            Input(GEMM_SELECT, "value"), State(CHOSEN, "data"),
                            State(ids.VIEW, "data"), prevent_initial_call=True)

    @on_view(app, services, {"problem": Output(PROBLEM, "data"),
                             "source": Output(SOURCE, "children"),
                             "options": Output(GEMM_SELECT, "options"),
                             "value": Output(GEMM_SELECT, "value"),
                             "chosen": Output(CHOSEN, "data"),
                             "totals": Output(TOTALS, "children"),
                             "viewer_hidden": Output(VIEWER, "hidden"),
                             "choices_asked": Output(CHOICES_ASKED, "data"),
                             **_AT_START, **_SETTINGS},
             inputs={"choice": Input(GEMM_SELECT, "value")},
             state={"shown": State(PROBLEM, "data"),
                    "choices_clicks": State(CHOICES_BUTTON, "n_clicks"),
                    **{f"{name}_shown": State(output.component_id, output.component_property)
                       for name, output in {**_SETTINGS, **_HEARD_AT_START}.items()}},
             tab=NAME, message="source", failed=lambda _: _NOTHING_CHOSEN)
    def choose(state, workspace, choice, shown, choices_clicks, **controls_shown):
        """The view's settings in the controls; the GEMM to show and its totals; for a new
        problem also the array at its first step, the sliders and the timeline, and the
        dataflow comparison if one was asked for: all in one answer (one round trip opens the
        tab).  What the controls show already is left out: a value set sets off the
        callbacks that hear it, which would only find nothing changed."""
        settings = _unshown(_settings(state), controls_shown)
        picked = parse_choice(choice)
        if ctx.triggered_id == GEMM_SELECT and \
                (state.gemm or picked is None or picked[0] != state.node):
            return settings   # a person chose another node's GEMM: the view selects it first
        gemms = graph_gemms(workspace, state)
        options = [{"label": g.label, "value": g.value} for g in gemms[:LISTED_GEMMS]]
        try:
            chosen = chosen_gemm(gemms, state, picked)
            problem = chosen_problem(workspace, state, chosen)
            schedule = schedule_of(problem)
            heads, rows = totals_rows(problem)
        except Exception as err:  # noqa: BLE001 - said above the GEMMs the user can pick
            return {**settings, **_NOTHING_CHOSEN, "source": error_message(err),
                    "options": options, "value": None, "chosen": None}
        value = None if state.gemm or chosen is None else chosen.value
        if value is not None and not any(o["value"] == value for o in options):
            options.append({"label": chosen.label, "value": value})
        stored = problem.to_store()
        drawn = {} if stored == shown else {
            **_unshown(_first_step(schedule, stored), controls_shown),
            "choices_asked": {"heard": stored, "clicks": choices_clicks} if choices_clicks
            else no_update}
        return {**settings, "problem": no_update if stored == shown else stored,
                "source": html.P([*_note(state, workspace, chosen), describe(problem, schedule)]),
                "options": options, "value": no_update if value == choice else value,
                "chosen": value, "totals": _table(heads, rows), "viewer_hidden": False,
                **drawn}

    app.clientside_callback(MOVED, Output(SLIDERS_MOVED, "data"), Input(FOLD, "value"),
                            Input(CYCLE, "value"), State(PROBLEM, "data"), State(DRAWN, "data"),
                            prevent_initial_call=True)

    @app.callback(*(Output(component, prop, allow_duplicate=True) for component in (FOLD, CYCLE)
                    for prop in ("value", "max", "marks")),
                  Output(TICK, "disabled", allow_duplicate=True),
                  *(Output(figure, "figure", allow_duplicate=True) for figure in FIGURES),
                  Output(DRAWN, "data", allow_duplicate=True),
                  Input(SLIDERS_MOVED, "data"), Input(TICK, "n_intervals"),
                  *(Input(key, "n_clicks") for key in STEPS),
                  State(PROBLEM, "data"), State(FOLD, "value"), State(CYCLE, "value"),
                  State(STRIDE, "value"), State(DRAWN, "data"), prevent_initial_call=True)
    def step(_moved, _ticks, *rest):
        """A step (a slider moved, a tick of Play, a step button): where it lands and that
        step drawn, in one answer."""
        *_clicks, stored, fold_number, cycle, stride, drawn = rest
        schedule = _schedule_of(stored)
        if schedule is None:
            return (no_update,) * 6 + (True,) + (no_update,) * (len(FIGURES) + 1)
        fold, cycle = _clamped(schedule, fold_number, cycle)
        stop, trigger = no_update, ctx.triggered_id
        if trigger == TICK:
            fold, cycle, finished = advance(schedule, fold, cycle, stride)
            stop = True if finished else no_update
        elif trigger in STEPS:
            direction, by = STEPS[trigger]
            move = advance if direction > 0 else retreat
            fold, cycle, _ = move(schedule, fold, cycle, by)
        last = schedule.timeline.fold_length(fold) - 1
        return (fold + 1, schedule.folds, _fold_marks(schedule),
                cycle, last, phase_marks(schedule, fold), stop,
                *_drawn_step(schedule, stored, drawn, fold, cycle))

    @app.callback(Output(TICK, "disabled", allow_duplicate=True), Input(PLAY, "n_clicks"),
                  State(TICK, "disabled"), prevent_initial_call=True)
    def play(_clicks, disabled):
        return not disabled

    app.clientside_callback(PLAY_LABEL, Output(PLAY, "children"), Input(TICK, "disabled"),
                            prevent_initial_call=True)

    app.clientside_callback(ONCE_ASKED, Output(CHOICES_ASKED, "data", allow_duplicate=True),
                            Input(CHOICES_BUTTON, "n_clicks"), State(PROBLEM, "data"),
                            prevent_initial_call=True)

    @app.callback(Output(CHOICES, "children"), Output(SWEEP, "figure"),
                  Output(SWEEP, "style"), Input(CHOICES_ASKED, "data"), State(SWEEP, "style"),
                  prevent_initial_call=True)
    def choices(asked, style):
        """On request (and for every later problem): the GEMM under the three dataflows,
        and swept over SRAM sizes and bandwidths."""
        try:
            problem = ArrayProblem.from_store(asked["heard"])
            heads, rows = comparison_rows(dataflow_comparison(problem))
            sweep = memory_sweep(problem)
        except Exception as err:  # noqa: BLE001 - said in the panel; the page carries on
            return error_message(err), no_update, {**(style or {}), "display": "none"}
        note = html.P(f"Under the {TIMING_NAMES[problem.timing]} timing; the sweep under "
                      f"{TIMING_NAMES[sweep['timing']]}. ★: the best of the row. "
                      "Memory-bound: waiting for at least half its cycles.", className="muted")
        return ([_table(heads, rows), note], sweep_figure(sweep),
                {**(style or {}), "display": "block"})

    app.clientside_callback(ONCE_ASKED, Output(PASSES_ASKED, "data"),
                            Input(PASSES_BUTTON, "n_clicks"), State(ids.tab_view(NAME), "data"),
                            prevent_initial_call=True)

    @on_view(app, services, {"passes": Output(PASSES, "children")},
             inputs={"_asked": Input(PASSES_ASKED, "data")}, view_triggers=False,
             message="passes", prevent_initial_call=True)   # not as the page loads: on request
    def passes(state, workspace, _asked):
        """On request: every GEMM and convolution of the graph after each pass, summed
        under the panel's array, dataflow, timing and memory."""
        rows, cols = array_shape(state.array, state.target)
        options = {"rows": rows, "cols": cols, "dataflow": state.dataflow,
                   "timing": state.timing, "target": state.target,
                   "memory": typed_memory(state.sram, state.bandwidth, state.target)}
        key = ("systolic passes", tuple(sorted((k, str(v)) for k, v in options.items())))
        if key not in workspace.derived:
            workspace.derived[key] = pass_schedules(workspace.result, workspace.sizes.bindings,
                                                    **options)
        return {"passes": _passes_table(workspace.derived[key])}


FIGURES = (HEATMAP, OPERANDS, TIMELINE, SRAM_FIGURE, DRAM_FIGURE)
_SETTINGS = {"gemm": Output(GEMM, "value"), "array": Output(ARRAY, "value"),
             "array_hint": Output(ARRAY, "placeholder"), "dataflow": Output(DATAFLOW, "value"),
             "timing": Output(TIMING, "value"), "sram": Output(SRAM, "value"),
             "sram_hint": Output(SRAM, "placeholder"), "bandwidth": Output(BANDWIDTH, "value"),
             "bandwidth_hint": Output(BANDWIDTH, "placeholder")}
_AT_START = {"fold": Output(FOLD, "value"), "fold_max": Output(FOLD, "max"),
             "fold_marks": Output(FOLD, "marks"), "cycle": Output(CYCLE, "value"),
             "cycle_max": Output(CYCLE, "max"), "cycle_marks": Output(CYCLE, "marks"),
             "stopped": Output(TICK, "disabled"), "heatmap": Output(HEATMAP, "figure"),
             "operands": Output(OPERANDS, "figure"), "timeline": Output(TIMELINE, "figure"),
             "sram_halves": Output(SRAM_FIGURE, "figure"), "dram": Output(DRAM_FIGURE, "figure"),
             "drawn": Output(DRAWN, "data")}
# Of those, what a callback hears (the sliders: `MOVED`; the Play tick: its label), so
# `choose` leaves out what they show already.
_HEARD_AT_START = {name: _AT_START[name] for name in ("fold", "cycle", "stopped")}


def _first_step(schedule: Schedule, stored: dict) -> dict:
    """The outputs `_AT_START` names for a new problem: its first step, drawn whole."""
    step = schedule.step(0, 0)
    memory = memory_step(schedule, 0, 0)
    return {"sram_halves": sram_figure(memory),
            "dram": dram_figure(dram_traffic(schedule), memory["clock"]),
            "fold": 1, "fold_max": schedule.folds, "fold_marks": _fold_marks(schedule),
            "cycle": 0, "cycle_max": schedule.timeline.fold_length(0) - 1,
            "cycle_marks": phase_marks(schedule, 0), "stopped": True,
            "heatmap": heatmap_figure(schedule, step),
            "operands": operands_figure(schedule, step),
            "timeline": timeline_figure(schedule, 0, 0),
            "drawn": {"problem": stored, "fold": 0, "cycle": 0}}


def _drawn_step(schedule: Schedule, stored: dict, drawn: dict | None, fold: int,
                cycle: int) -> tuple:
    """The `FIGURES` at this step and what `DRAWN` then holds; nothing when they show it.
    The array's z and title, the operands, the SRAM halves and the cursors of the timeline
    and the DRAM traffic (the whole timeline when the fold changed)."""
    if _shows(drawn, stored, fold + 1, cycle):
        return (no_update,) * (len(FIGURES) + 1)
    step = schedule.step(fold, cycle)
    heatmap = Patch()   # one z matrix and a title: a step stays small for any layer
    heatmap["data"][0]["z"] = step.pe_state.tolist()
    heatmap["layout"]["title"]["text"] = heatmap_title(schedule, step)
    if not drawn or drawn.get("fold") != fold:
        timeline = timeline_figure(schedule, fold, cycle)
    else:
        timeline = Patch()
        timeline["layout"]["shapes"] = [cursor_shape(schedule, fold, cycle)]
    memory = memory_step(schedule, fold, cycle)
    if not drawn or drawn.get("problem") != stored:
        dram = dram_figure(dram_traffic(schedule), memory["clock"])
    else:
        dram = Patch()
        dram["layout"]["shapes"] = [clock_cursor(memory["clock"])]
    return (heatmap, operands_figure(schedule, step), timeline, sram_figure(memory), dram,
            {"problem": stored, "fold": fold, "cycle": cycle})


def _settings(state: ViewState) -> dict:
    """The view's settings in the controls (the target's array and memory as the
    placeholders), by `_SETTINGS` name."""
    try:
        rows, cols = array_shape("", state.target)
        array_hint = f"{rows}x{cols} ({state.target})"
        memory = memory_of_target(get_target(state.target))
        sram_hint, bandwidth_hint = memory_text(memory.sram_kb), memory_text(memory.bandwidth)
    except GraphLabError:
        array_hint, sram_hint, bandwidth_hint = "e.g. 16x16", "ifmap=64", "ifmap=16"
    return {"gemm": state.gemm, "array": state.array, "array_hint": array_hint,
            "dataflow": state.dataflow, "timing": state.timing, "sram": state.sram,
            "sram_hint": sram_hint, "bandwidth": state.bandwidth,
            "bandwidth_hint": bandwidth_hint}


def _unshown(values: dict, shown: dict) -> dict:
    """``values`` less those their controls already show (``shown``, by name + "_shown"; an
    empty text and none are the same); values without a control listed stay."""
    return {name: value for name, value in values.items()
            if f"{name}_shown" not in shown or (value or "") != (shown[f"{name}_shown"] or "")}


def _fold_marks(schedule: Schedule) -> dict:
    return {1: "1", schedule.folds: str(schedule.folds)}


def _shows(drawn: dict | None, stored: dict | None, fold_number, cycle) -> bool:
    """Do the figures already show this step of this problem (what `choose` just drew)?"""
    return bool(drawn) and drawn.get("problem") == stored and \
        drawn.get("fold") == (fold_number or 1) - 1 and drawn.get("cycle") == (cycle or 0)


def _schedule_of(stored: dict | None) -> Schedule | None:
    """The kept problem's schedule; None without one, or when the page sent something
    unreadable (logged; the panel's source line already says what the user can do)."""
    if not stored:
        return None
    try:
        return schedule_of(ArrayProblem.from_store(stored))
    except Exception:  # noqa: BLE001 - a step must never take the page down
        log.exception("unreadable systolic problem in the page")
        return None


def _clamped(schedule: Schedule, fold_number, cycle) -> tuple[int, int]:
    """(fold index, local cycle) from the sliders, kept inside the schedule."""
    fold = min(max((fold_number or 1) - 1, 0), schedule.folds - 1)
    return fold, min(max(cycle or 0, 0), schedule.timeline.fold_length(fold) - 1)


class GraphGemm:
    """One GEMM of the graph as the dropdown lists it."""

    __slots__ = ("node", "part", "label")

    def __init__(self, node, part: int, label: str):
        self.node, self.part, self.label = node, part, label

    @property
    def value(self) -> str:
        return f"{self.node.id}:{self.part}"


def parse_choice(value) -> tuple[int, int] | None:
    """'12:1' -> (12, 1); anything else -> None."""
    try:
        node, part = str(value).split(":")
        return int(node), int(part)
    except ValueError:
        return None


def graph_gemms(ws: Workspace, state: ViewState) -> list[GraphGemm]:
    """Every GEMM of the graph the selected pass produced, in the graph's order; a node with
    several (a fused attention, a batched MatMul) has one entry for each."""
    before, after = (sized_of(ws, g) for g in ws.graphs_of_step(ws.clamp_step(state.step)))
    nodes = list(after.nodes)
    if state.node is not None and after.node_by_id(state.node) is None \
            and before.node_by_id(state.node) is not None:
        nodes.append(before.node_by_id(state.node))   # selected on the left: the pass removed it
    found = []
    for node in nodes:
        if not has_gemm(node):
            continue
        try:
            problems = gemm_problems(node, ws.sizes.bindings)
        except GraphLabError:
            continue   # said when the node itself is selected
        name = node.name.strip("/")
        for part, p in enumerate(problems):
            which = f" · GEMM {part + 1} of {len(problems)}" if len(problems) > 1 else ""
            found.append(GraphGemm(node, part, f"{node.op_type} {name}{which}: "
                                               f"M={p.M}, N={p.N}, K={p.K}"))
    return found


def chosen_gemm(gemms: list[GraphGemm], state: ViewState,
                picked: tuple[int, int] | None) -> GraphGemm | None:
    """The GEMM to show: none for a typed GEMM; the selected node's (the part picked for it,
    else its first); with no node selected, or one without a GEMM the simulator can take, the
    graph's first (`_note` says why).  A graph without GEMMs is an error."""
    if state.gemm:
        return None
    if state.node is not None:
        own = [g for g in gemms if g.node.id == state.node]
        if own:
            part = picked[1] if picked and picked[0] == state.node else 0
            return own[min(part, len(own) - 1)]
    if not gemms:
        raise GraphLabError(NO_GEMM)
    return gemms[0]


def chosen_problem(ws: Workspace, state: ViewState,
                   chosen: GraphGemm | None) -> ArrayProblem:
    """The problem to simulate: a typed GEMM, else the chosen GEMM of the graph."""
    rows, cols = array_shape(state.array, state.target)
    memory = memory_values(state.sram, state.bandwidth, state.target)
    if state.gemm or chosen is None:
        problem = typed_problem(state.gemm)
        return array_problem(problem, rows, cols, state.dataflow, state.timing, state.target,
                             None, *memory)
    problem = gemm_problems(chosen.node, ws.sizes.bindings)[chosen.part]
    return array_problem(problem, rows, cols, state.dataflow, state.timing, state.target,
                         compute_dtype(chosen.node), *memory)


def _note(state: ViewState, ws: Workspace, chosen: GraphGemm | None) -> list:
    """Why the shown GEMM is not the selected node's, when it is not."""
    if chosen is None or state.node is None or chosen.node.id == state.node:
        return []
    node = _selected_node(ws, state)
    if node is None:
        what = f"node #{state.node} is not in this pass's graphs"
    elif has_gemm(node):
        try:
            gemm_problems(node, ws.sizes.bindings)
            what = f"{node.name} ({node.qualified_op}) cannot go on the array"
        except GraphLabError as err:   # the reason graph_gemms left it out
            what = str(err).rstrip(".")
    else:
        what = (f"{node.name} ({node.qualified_op}) has no matrix multiply or convolution "
                f"to put on the array")
    return [html.Span(f"{what}: showing the graph's first GEMM. ", className="muted")]


def _selected_node(ws: Workspace, state: ViewState):
    if state.node is None:
        return None
    before, after = (sized_of(ws, g) for g in ws.graphs_of_step(ws.clamp_step(state.step)))
    return after.node_by_id(state.node) or before.node_by_id(state.node)


@lru_cache(maxsize=64)
def dataflow_comparison(problem: ArrayProblem) -> dict:
    return compare_dataflows(lambda dataflow: schedule_of(problem, dataflow=dataflow).report())


@lru_cache(maxsize=64)
def memory_sweep(problem: ArrayProblem) -> dict:
    """The sweep around the problem's memory, under the timing it can afford."""
    timing = sweep_timing(schedule_of(problem))
    sweep = sweep_memory(lambda dataflow, memory: schedule_of(problem, timing, dataflow, memory),
                         problem.memory)
    return {**sweep, "timing": timing}


def _passes_table(rows: list[dict]) -> html.Div:
    """The model as loaded and each pass that changed the graph: its GEMMs on the array."""
    heads = ["after", "GEMMs", "cycles", "waiting", "DRAM (elements)", "energy"]
    shown = [r for r in rows if r["changed"]]
    body = []
    for row in shown:
        if not row["gemms"]:
            body.append(html.Tr([html.Td(row["pass"]), html.Td("0"),
                                 *(html.Td("—") for _ in heads[2:])]))
            continue
        body.append(html.Tr([html.Td(row["pass"]), html.Td(f"{row['gemms']}"),
                             html.Td(f"{row['cycles']:,}"), html.Td(f"{row['stall_cycles']:,}"),
                             html.Td(f"{row['dram']:,}"),
                             html.Td(f"{row['energy_joules'] * 1e6:.3g} µJ")]))
    return html.Div([
        html.Table(className="kv summary-table passes-table",
                   children=[html.Tr([html.Th(h) for h in heads]), *body]),
        html.P("Every MatMul, Gemm and Convolution of the graph after each pass that changed "
               "it, run back to back with its memory. Fusing GEMMs that share an input reads "
               "that input from DRAM once.", className="muted")])


def _table(heads: list[str], rows: list[list[str]]) -> html.Table:
    return html.Table(className="kv summary-table", children=[
        html.Tr([html.Th(h) for h in heads]),
        *(html.Tr([html.Td(row[0], className="key"), *(html.Td(v) for v in row[1:])])
          for row in rows)])


PANEL = Panel(NAME, TAB, register, layout, tab="Systolic", follows_selection=True,
              forward=Forward((Output(PASSES_ASKED, "data"),),
                              (State(PASSES_BUTTON, "n_clicks"),), ASKED_WITH_THE_VIEW))
