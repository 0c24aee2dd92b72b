"""The systolic panel's pictures as plain functions of the simulator's records: the R×C array
at one step as a heatmap, the operand tiles in flight, the fold timeline, both timing models'
totals, and how the play button moves through a fold.

Nothing here walks cycles: a step is `Schedule.step(fold, cycle)` (O(R·C), computed on
demand), phases come from `Timeline.fold_phases`, and a step's payload is one small z matrix,
so a layer with millions of cycles steps as smoothly as a toy one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

from compiler_core.errors import GraphLabError
from compiler_core.hardware.gemm_shapes import GemmProblem
from compiler_core.hardware.node_schedule import schedule_problem
from compiler_core.hardware.systolic import ACTIVE, IDLE, LOADING, PADDING, PRELOAD, TIMINGS, \
    ConvShape, Schedule, Step
from compiler_core.hardware.systolic.mapping import OPERAND_DIMS
from compiler_core.hardware.systolic.memory_config import OPERANDS, MemoryConfig, \
    memory_of_target
from compiler_core.hardware.targets import get_target

from ..user_input import parse_array, parse_integers, parse_operand_values
from ..units import format_seconds
from .chart_dicts import plotly_white

MAX_SIDE = 256          # PEs per side the heatmap draws (the CLI schedules any size)
TIMELINE_FOLDS = 10     # folds the timeline shows around the current one
STATES = ((IDLE, "idle (done this fold)", "#ced4da"), (ACTIVE, "active (a MAC)", "#2b8a3e"),
          (PADDING, "padding (wasted)", "#ff8787"), (PRELOAD, "preloaded", "#9775fa"),
          (LOADING, "loading (data on its way)", "#74c0fc"))   # in state-code order
PHASE_COLOURS = {"stall": "#fa5252", "preload": "#9775fa", "fill": "#74c0fc",
                 "stream": "#2b8a3e", "drain": "#fcc419"}
DATAFLOW_NAMES = {"os": "output-stationary", "ws": "weight-stationary",
                  "is": "input-stationary"}
TIMING_NAMES = {"scalesim": "SCALE-Sim (folds back to back)",
                "overlap": "overlap (double-buffered)"}
STRIDES = {"cycle": "1 cycle", "ten": "10 cycles", "hundred": "100 cycles", "phase": "a phase",
           "fold": "a fold"}
STRIDE_CYCLES = {"cycle": 1, "ten": 10, "hundred": 100}


@dataclass(frozen=True)
class ArrayProblem:
    """One GEMM on one array: everything needed to rebuild its schedule in microseconds, so
    the page can keep it and every step skips the model and the workspace."""

    label: str
    M: int
    N: int
    K: int
    conv: tuple[int, ...] | None   # (H, W, FH, FW, C, N, S) when the exact conv form applies
    rows: int
    cols: int
    dataflow: str
    timing: str
    target: str
    dtype: str
    instances: int = 1
    sram_kb: tuple[int, int, int] | None = None     # per operand; None: the target's
    bandwidth: tuple[int, int, int] | None = None   # DRAM words per cycle per operand

    @property
    def memory(self) -> MemoryConfig:
        stated = memory_of_target(get_target(self.target))
        return MemoryConfig(self.sram_kb or stated.sram_kb,
                            self.bandwidth or stated.bandwidth, stated.word_bytes,
                            "given" if self.sram_kb or self.bandwidth else stated.source)

    def schedule(self, timing: str | None = None, dataflow: str | None = None,
                 memory: MemoryConfig | None = None) -> Schedule:
        conv = ConvShape(*self.conv) if self.conv else None
        problem = GemmProblem(self.label, "", self.M, self.N, self.K, conv=conv)
        return schedule_problem(problem, rows=self.rows, cols=self.cols,
                                dataflow=dataflow or self.dataflow,
                                timing=timing or self.timing, target=get_target(self.target),
                                dtype=self.dtype, memory=memory or self.memory)

    def to_store(self) -> dict:
        """As the page keeps it (JSON: tuples as lists), so what comes back compares equal to
        what was sent."""
        data = asdict(self)
        for key in _TUPLES:
            data[key] = list(data[key]) if data[key] else None
        return data

    @classmethod
    def from_store(cls, data: dict) -> "ArrayProblem":
        return cls(**{**data, **{key: tuple(data[key]) if data.get(key) else None
                                 for key in _TUPLES}})


_TUPLES = ("conv", "sram_kb", "bandwidth")


def typed_memory(sram: str, bandwidth: str, target: str) -> MemoryConfig:
    """The target's memory with what was typed ('ifmap=8,filter=8' ...) in its place."""
    stated = memory_of_target(get_target(target))
    return stated.with_values(parse_operand_values((sram or "").strip() or None, "SRAM kB"),
                              parse_operand_values((bandwidth or "").strip() or None,
                                                   "DRAM words per cycle"))


def memory_values(sram: str, bandwidth: str, target: str
                  ) -> tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]:
    """The SRAM kB and bandwidths typed (any operand left out keeps the target's), or None
    for each box left empty."""
    typed = typed_memory(sram, bandwidth, target)
    return (typed.sram_kb if (sram or "").strip() else None,
            typed.bandwidth if (bandwidth or "").strip() else None)


def memory_text(values: tuple[int, int, int]) -> str:
    """(64, 64, 32) -> 'ifmap=64,filter=64,ofmap=32', as the boxes and the CLI write it."""
    return ",".join(f"{operand}={value}" for operand, value in zip(OPERANDS, values))


@lru_cache(maxsize=64)
def schedule_of(problem: ArrayProblem, timing: str | None = None, dataflow: str | None = None,
                memory: MemoryConfig | None = None) -> Schedule:
    """The problem's schedule, kept: a step, the comparison and the sweep ask again and a
    SCALE-Sim memory replay is then made once."""
    return problem.schedule(timing, dataflow, memory)


def array_shape(text: str, target: str) -> tuple[int, int]:
    """'16x16' -> (16, 16); '' -> the target's array.  Refuses what the heatmap cannot draw."""
    chosen = get_target(target)
    rows, cols = parse_array(text) if text.strip() else (chosen.array_rows, chosen.array_cols)
    if not 1 <= rows <= MAX_SIDE or not 1 <= cols <= MAX_SIDE:
        raise GraphLabError(f"the panel draws arrays of 1 to {MAX_SIDE} PEs per side, not "
                            f"{rows}x{cols}", hint="`graphlab schedule --array` times any size")
    return rows, cols


def typed_problem(text: str) -> GemmProblem:
    """'M,N,K' as typed -> the problem (a clear message for anything else)."""
    M, N, K = parse_integers(text, "M,N,K")
    if min(M, N, K) < 1:
        raise GraphLabError(f"GEMM {text!r} has a zero dimension", hint="M, N and K are >= 1")
    return GemmProblem("typed GEMM", "GEMM", M, N, K)


def array_problem(problem: GemmProblem, rows: int, cols: int, dataflow: str, timing: str,
                  target: str, dtype: str | None, sram_kb=None, bandwidth=None) -> ArrayProblem:
    conv = problem.conv
    return ArrayProblem(problem.source, problem.M, problem.N, problem.K,
                        None if conv is None else (conv.H, conv.W, conv.FH, conv.FW, conv.C,
                                                   conv.N, conv.S),
                        rows, cols, dataflow, timing, target,
                        dtype or get_target(target).default_dtype, problem.instances,
                        sram_kb, bandwidth)


def describe(problem: ArrayProblem, schedule: Schedule) -> str:
    m = schedule.mapping
    gemm = f"({problem.M} × {problem.K}) · ({problem.K} × {problem.N})"
    conv = " (a convolution as its im2col GEMM)" if problem.conv else ""
    times = f", run {problem.instances}× back to back" if problem.instances > 1 else ""
    return (f"{problem.label}: GEMM {gemm}{conv}{times} on a {m.rows}×{m.cols} array, "
            f"{DATAFLOW_NAMES[m.dataflow]}: rows hold {m.row_dim}, columns hold {m.col_dim}, "
            f"{m.stream_dim} streams through; {m.row_folds} × {m.col_folds} = {m.folds} folds. "
            f"SRAM {_per_operand(schedule.memory.sram_kb, ' kB')}; DRAM "
            f"{_per_operand(schedule.memory.bandwidth, ' words/cycle')}.")


def _per_operand(values, unit: str) -> str:
    return ", ".join(f"{operand} {value}{unit}" for operand, value in zip(OPERANDS, values))


# ---- the array at one step ----------------------------------------------------------------

def heatmap_title(schedule: Schedule, step: Step) -> str:
    """Where the step is (fold, the fold's own cycle, the global clock, the phase) and, on a
    second line, how many PEs are in each state (those in none left out)."""
    length = schedule.timeline.fold_length(step.fold)
    counts = ", ".join(f"{step.count(code):,} {name.split(' ')[0]}" for code, name, _ in
                       sorted(STATES, key=lambda s: TITLE_ORDER.index(s[0]))
                       if code == ACTIVE or step.count(code))
    return (f"fold {step.fold + 1} of {schedule.folds}, cycle {step.cycle} of {length - 1} "
            f"(clock {step.global_cycle:,}): <b>{step.phase}</b><br>PEs: {counts}")


TITLE_ORDER = (ACTIVE, LOADING, PRELOAD, IDLE, PADDING)


def heatmap_figure(schedule: Schedule, step: Step) -> dict:
    """The R×C array: one cell per PE, coloured by its state (z is the simulator's pe_state)."""
    m = schedule.mapping
    scale = []
    for index, (_, _, colour) in enumerate(STATES):
        scale += [[index / len(STATES), colour], [(index + 1) / len(STATES), colour]]
    gap = 1 if max(m.rows, m.cols) <= 48 else 0
    return {"data": [{
        "type": "heatmap", "z": step.pe_state.tolist(), "zmin": -0.5,
        "zmax": len(STATES) - 0.5, "colorscale": scale, "xgap": gap, "ygap": gap,
        "hovertemplate": "PE row %{y}, column %{x}<extra></extra>",
        "colorbar": {"tickvals": [code for code, _, _ in STATES],
                     "ticktext": [name for _, name, _ in STATES], "thickness": 18,
                     # outlined: the light "idle" swatch stays visible on a projector
                     "outlinewidth": 1, "outlinecolor": "#868e96",
                     "title": {"text": "PE state"}}}],
        "layout": {
            "title": {"text": heatmap_title(schedule, step), "x": 0.01, "font": {"size": 15}},
            "template": plotly_white(), "font": {"size": 14},
            "margin": {"l": 70, "r": 10, "t": 62, "b": 80}, "uirevision": "array",
            # on two lines: the square array is narrower than the title at 1280x800
            "xaxis": {"title": {"text": f"PE column →<br>holds {m.col_dim} (+ fold offset)"},
                      "constrain": "domain", "showgrid": False, "zeroline": False},
            "yaxis": {"title": {"text": f"PE row ↓ holds {m.row_dim}"},
                      "autorange": "reversed", "scaleanchor": "x", "constrain": "domain",
                      "showgrid": False, "zeroline": False}}}


def operands_figure(schedule: Schedule, step: Step) -> dict:
    """A, B and C drawn to their own scale: the fold's tile of each, and the slice of the
    streamed dimension in flight through the array at this step."""
    m = schedule.mapping
    shapes, annotations, layout = [], [], {}
    for index, (name, (row_dim, col_dim)) in enumerate(OPERAND_DIMS.items(), start=1):
        height, width = m.extent(row_dim), m.extent(col_dim)
        tile = step.tiles[name]
        suffix = index if index > 1 else ""
        x, y = f"x{suffix}", f"y{suffix}"
        shapes.append({"type": "rect", "x0": 0, "x1": width, "y0": 0, "y1": height,
                       "xref": x, "yref": y, "line": {"color": "#52606d", "width": 1.5},
                       "fillcolor": "#f8f9fa"})
        shapes.append({"type": "rect", "x0": tile["cols"][0], "x1": tile["cols"][1],
                       "y0": tile["rows"][0], "y1": tile["rows"][1], "xref": x, "yref": y,
                       "line": {"width": 0}, "fillcolor": "#a5d8ff"})
        # a line for each: three operands share the side column's width
        caption = (f"{col_dim} →<br>tile: {row_dim} {_span(tile['rows'])},<br>"
                   f"{col_dim} {_span(tile['cols'])}")
        band = _in_flight(step, row_dim, col_dim, tile)
        if band is not None:
            (x0, x1), (y0, y1) = band
            shapes.append({"type": "rect", "x0": x0, "x1": max(x1, x0 + 0.02 * width),
                           "y0": y0, "y1": max(y1, y0 + 0.02 * height), "xref": x, "yref": y,
                           "line": {"width": 0}, "fillcolor": "#1971c2"})
            caption += f"<br><b>{step.stream_dim} {_span(step.in_flight)} in flight</b>"
        left = (index - 1) * (OPERAND_WIDTH + OPERAND_GAP)
        domain = [left, left + OPERAND_WIDTH]
        axis = {"showgrid": False, "zeroline": False, "tickformat": "~s", "nticks": 3}
        layout[f"xaxis{suffix}"] = {**axis, "range": [0, width], "domain": domain, "anchor": y,
                                    "title": {"text": caption}}
        layout[f"yaxis{suffix}"] = {**axis, "range": [height, 0], "domain": [0, 1],
                                    "anchor": x, "title": {"text": row_dim}}
        annotations.append({"text": _operand_title(name, m), "x": sum(domain) / 2, "y": 1,
                            "xref": "paper", "yref": "paper", "xanchor": "center",
                            "yanchor": "bottom", "showarrow": False, "font": {"size": 14}})
    layout.update(template=plotly_white(), font={"size": 13}, showlegend=False,
                  margin={"l": 50, "r": 10, "t": 50, "b": 100}, uirevision="operands",
                  shapes=shapes, annotations=annotations)
    return {"data": [], "layout": layout}


OPERAND_GAP = 0.08                       # between the three operands, as a share of the width
OPERAND_WIDTH = (1 - 2 * OPERAND_GAP) / 3


def _span(bounds) -> str:
    """[start, stop) as '16–26' (inclusive, as a student counts)."""
    start, stop = bounds
    return f"{start}–{stop - 1}" if stop - start > 1 else f"{start}"


def _operand_title(name: str, mapping) -> str:
    rows, cols = OPERAND_DIMS[name]
    role = "<br>(stays in the PEs)" if name == mapping.stationary_operand else ""
    return f"{name}: {rows} × {cols}{role}"


def _in_flight(step: Step, row_dim: str, col_dim: str, tile: dict):
    """The (x range, y range) of the streamed slice inside this operand's tile, if any."""
    if step.in_flight is None or step.stream_dim not in (row_dim, col_dim):
        return None
    first, stop = step.in_flight
    if step.stream_dim == row_dim:
        return tuple(tile["cols"]), (first, stop)
    return (first, stop), tuple(tile["rows"])


# ---- the folds over time -------------------------------------------------------------------

def timeline_window(schedule: Schedule, fold: int) -> range:
    first = max(0, min(fold - TIMELINE_FOLDS // 2, schedule.folds - TIMELINE_FOLDS))
    return range(first, min(schedule.folds, first + TIMELINE_FOLDS))


def timeline_figure(schedule: Schedule, fold: int, cycle: int) -> dict:
    """Each fold's phases on the global clock (the folds around the current one); the line
    is the step shown in the array."""
    timeline = schedule.timeline
    folds = timeline_window(schedule, fold)
    traces = []
    for phase, colour in PHASE_COLOURS.items():
        spans = [(f, start, stop) for f in folds for name, start, stop in
                 timeline.fold_phases(f) if name == phase]
        traces.append({
            "type": "bar", "orientation": "h", "name": phase, "marker": {"color": colour},
            "y": [f"fold {f + 1}" for f, _, _ in spans],
            "base": [timeline.fold_begin(f) + start for f, start, _ in spans],
            "x": [stop - start for _, start, stop in spans],
            "hovertemplate": f"{phase}: %{{x}} cycles from cycle %{{base}}<extra></extra>"})
    return {"data": traces, "layout": {
        "barmode": "overlay", "template": plotly_white(), "font": {"size": 14},
        "margin": {"l": 70, "r": 10, "t": 30, "b": 66},
        "legend": {"orientation": "h", "y": 1.12},
        "shapes": [cursor_shape(schedule, fold, cycle)], "uirevision": "timeline",
        "xaxis": {"title": {"text": f"cycle<br>timing model: {TIMING_NAMES[timeline.timing]}"}},
        "yaxis": {"autorange": "reversed", "type": "category",
                  "categoryarray": [f"fold {f + 1}" for f in folds]}}}


def cursor_shape(schedule: Schedule, fold: int, cycle: int) -> dict:
    at = schedule.timeline.fold_begin(fold) + cycle
    return {"type": "line", "x0": at, "x1": at, "y0": 0, "y1": 1, "yref": "paper",
            "line": {"color": "#c92a2a", "width": 2}}


def phase_marks(schedule: Schedule, fold: int) -> dict[int, str]:
    """Slider marks where each phase of the fold starts (local cycles); a phase too short to
    hold its name gets an unlabelled mark."""
    room = schedule.timeline.fold_length(fold) / 10
    marks, labelled = {}, -room
    for phase, start, _ in schedule.timeline.fold_phases(fold):
        marks[start] = phase if start - labelled >= room else ""
        labelled = start if marks[start] else labelled
    return marks


def advance(schedule: Schedule, fold: int, cycle: int, stride: str) -> tuple[int, int, bool]:
    """The next step after (fold, cycle) by `stride` (a number of cycles, the next phase's or
    fold's start); True when the schedule is over."""
    timeline = schedule.timeline
    length = timeline.fold_length(fold)
    if stride == "fold":
        target = length
    elif stride == "phase":
        target = next((start for _, start, _ in timeline.fold_phases(fold) if start > cycle),
                      length)
    else:
        target = cycle + STRIDE_CYCLES.get(stride, 1)
    if target < length:
        return fold, target, False
    if fold + 1 < schedule.folds:
        return fold + 1, 0, False
    return fold, length - 1, True


def retreat(schedule: Schedule, fold: int, cycle: int, stride: str) -> tuple[int, int, bool]:
    """The step before (fold, cycle) by `stride`: that many cycles back, or the start of the
    phase or fold it is in — of the previous one when already at a start.  True at the very
    first step."""
    timeline = schedule.timeline
    if stride in ("fold", "phase") and cycle > 0:
        starts = [0] if stride == "fold" else [s for _, s, _ in timeline.fold_phases(fold)]
        return fold, max(s for s in starts if s < cycle), False
    if cycle > 0:
        return fold, max(0, cycle - STRIDE_CYCLES.get(stride, 1)), False
    if fold == 0:
        return 0, 0, True
    previous = fold - 1
    if stride == "fold":
        return previous, 0, False
    last = timeline.fold_length(previous) - 1
    if stride == "phase":
        return previous, timeline.fold_phases(previous)[-1][1], False
    return previous, max(0, last + 1 - STRIDE_CYCLES.get(stride, 1)), False


# ---- totals --------------------------------------------------------------------------------

def totals_rows(problem: ArrayProblem) -> tuple[list[str], list[list[str]]]:
    """(column heads, rows) of both timing models' totals for the problem, side by side."""
    reports = [schedule_of(problem, timing).report() for timing in TIMINGS]
    instances = problem.instances
    rows = [
        ["cycles (SCALE-Sim's count)"] + [f"{r['cycles']:,}" for r in reports],
        [f"time on {problem.target}"] + [format_seconds(r["seconds"]) for r in reports],
        ["folds"] + [f"{r['folds']:,}" for r in reports],
        ["utilization (MACs ÷ cycles·R·C)"] + [f"{r['utilization']:.1%}" for r in reports],
        ["mapping efficiency (PEs holding data)"]
        + [f"{r['mapping_efficiency']:.1%}" for r in reports],
        ["cycles waiting for memory"] + [f"{r['stall_cycles']:,}" for r in reports],
        ["cycles hidden by overlapping folds"]
        + [f"{r['phases']['overlapped']:,}" for r in reports],
        ["DRAM traffic (elements read + written)"]
        + [f"{sum(r['dram_reads'].values()) + sum(r['dram_writes'].values()):,}"
           for r in reports],
        ["energy"] + [f"{r['energy']['total_joules'] * 1e6:.3g} µJ" for r in reports],
    ]
    if instances > 1:
        rows.append([f"× {instances} instances: cycles"]
                    + [f"{instances * (r['cycles'] + 1) - 1:,}" for r in reports])
    return ["this GEMM, whole run", *(TIMING_NAMES[t] for t in TIMINGS)], rows
