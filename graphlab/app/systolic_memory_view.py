"""The systolic panel's memory pictures, plain functions of compiler_core's records: each SRAM's
two halves at the step shown (`memory_steps.memory_step`), the DRAM traffic over the clock with
the array's waits and a cursor at the step (`memory_steps.dram_traffic`), the three dataflows
side by side and the sweep over SRAM sizes and bandwidths (`systolic_choices`)."""

from __future__ import annotations

from compiler_core.hardware.systolic import DATAFLOWS
from compiler_core.hardware.systolic.memory_config import OPERANDS

from ..units import format_bytes
from .chart_dicts import plotly_white

OPERAND_COLOURS = {"ifmap": "#1971c2", "filter": "#e8590c", "ofmap": "#2f9e44"}
BAR_COLOURS = {"ifmap": "#74c0fc", "filter": "#ffa94d", "ofmap": "#8ce99a"}   # text on them
WAITING_COLOUR = "#fa5252"
DATAFLOW_COLOURS = {"os": "#1971c2", "ws": "#9c36b5", "is": "#e8590c"}
HALF_ROLES = {"arriving": "next tile", "draining": "last tile out"}


def memory_title(record: dict) -> str:
    """Where the clock is and whether the array waits, short enough for a projector."""
    clock = f"clock {record['clock']:,}"
    at_least = "" if record["exact"] else "at least "
    waited = (f"waited so far: {at_least}{record['stalled_before']:,} of "
              f"{record['stall_cycles']:,} cycles")
    if record["model"] == "scalesim":
        where = f"{clock} (compute row {record['row']:,})"
        if not record["waiting"]:
            return f"{where}: the array computes<br>{waited}"
        return (f"{where}: <b>the array waits</b><br>{record['stall']:,} cycles, for the "
                f"{record['cause']}<br>{waited}")
    state = (f"<b>the array waits</b> ({record['stall_left']:,} of {record['stall']:,} cycles "
             "left)" if record["waiting"] else "the array computes")
    lines = [f"{clock}: {state}", waited]
    if not record["double_buffered"]:
        lines.append("a tile is bigger than half its SRAM: no prefetch")
    return "<br>".join(lines)


def sram_figure(record: dict) -> dict:
    """Each operand's two SRAM halves (overlap) or its refills and drains (SCALE-Sim), as
    bars filled to what has arrived; a tile bigger than its half fills the bar and says how
    many times over."""
    if record["model"] == "scalesim":
        return _events_figure(record)
    bars = []
    for operand in OPERANDS:
        sram = record["sram"][operand]
        half = sram["half_bytes"]
        in_use, other = sram["in_use"], sram["other"]
        drained = other["bytes"] - other["done"]
        for role, full, filled in (("this tile", in_use["bytes"], in_use["ready"]),
                                   (HALF_ROLES[other["role"]], other["bytes"],
                                    drained if other["role"] == "draining" else other["done"])):
            over = f" · {full / half:.3g}× the half" if full > half else ""
            bars.append((operand, f"{operand} · {role}", 100 * filled / half,
                         100 * full / half,
                         f"{format_bytes(filled)} of {format_bytes(full)}{over}"))
    return _bars_figure(bars, memory_title(record),
                        "% of one SRAM half<br>"
                        f"(ifmap {format_bytes(record['sram']['ifmap']['half_bytes'])}, "
                        f"filter {format_bytes(record['sram']['filter']['half_bytes'])}, "
                        f"ofmap {format_bytes(record['sram']['ofmap']['half_bytes'])})")


def _events_figure(record: dict) -> dict:
    bars = []
    for operand, counts, what in (("ifmap", record["refills"]["ifmap"], "refills"),
                                  ("filter", record["refills"]["filter"], "refills"),
                                  ("ofmap", record["drains"], "drains")):
        total = counts["total"] or 1
        done = counts["arrived"] if "arrived" in counts else counts["done"]
        bars.append((operand, f"{operand} · {what}", 100 * done / total, 100,
                     f"{done:,} of {counts['total']:,}"))
    drains = "" if record["complete"] else " (drains: the first ones kept)"
    return _bars_figure(bars, memory_title(record),
                        f"% of the layer's refills and drains done{drains}")


def _bars_figure(bars: list[tuple], title: str, axis: str) -> dict:
    """bars: (operand, label, filled %, whole %, text). Drawn clipped at 100 %, the text
    inside each bar, left-aligned, on light colours (legible on a projector)."""
    labels = [label for _, label, _, _, _ in bars]
    colours = [BAR_COLOURS[operand] for operand, _, _, _, _ in bars]
    traces = [
        {"type": "bar", "orientation": "h", "y": labels, "x": [min(w, 100) for *_, w, _ in bars],
         "name": "to come", "marker": {"color": colours, "opacity": 0.35,
                                       "pattern": {"shape": "/", "fgcolor": "#495057"}},
         "hoverinfo": "skip"},
        {"type": "bar", "orientation": "h", "y": labels,
         "x": [min(f, 100) for _, _, f, _, _ in bars], "name": "there",
         "marker": {"color": colours}, "hoverinfo": "skip"},
        {"type": "bar", "orientation": "h", "y": labels, "x": [100] * len(bars),
         "name": "half", "marker": {"color": "rgba(0,0,0,0)",
                                    "line": {"color": "#868e96", "width": 1}},
         "text": [text for *_, text in bars], "textposition": "inside",
         "insidetextanchor": "start", "textfont": {"color": "#212529", "size": 14},
         "hovertemplate": "%{y}: %{text}<extra></extra>"}]
    return {"data": traces, "layout": {
        "barmode": "overlay", "template": plotly_white(), "font": {"size": 14},
        "title": {"text": title, "x": 0.01, "font": {"size": 14}}, "showlegend": False,
        "margin": {"l": 130, "r": 10, "t": 78, "b": 50 + 16 * axis.count("<br>")},
        "uirevision": "sram",
        "xaxis": {"title": {"text": axis, "font": {"size": 12}}, "range": [0, 100],
                  "fixedrange": True},
        "yaxis": {"autorange": "reversed", "type": "category", "categoryarray": labels,
                  "fixedrange": True}}}


UNITS = {"bytes": "bytes moved", "words": "words moved"}


def dram_figure(traffic: dict, clock: int) -> dict:
    """What each operand has moved to or from DRAM by each cycle; red bands where the array
    waits; the line is the step shown."""
    unit = traffic["unit"]
    traces = [{"type": "scatter", "mode": "lines", "name": f"{operand} "
               + ("written" if operand == "ofmap" else "read"),
               "x": traffic["clock"][operand], "y": traffic["moved"][operand],
               "line": {"color": OPERAND_COLOURS[operand], "width": 2.5},
               "hovertemplate": f"{operand}: %{{y:,}} {unit} by cycle %{{x:,}}<extra></extra>"}
              for operand in OPERANDS]
    x, y = [], []
    for start, stop in traffic["waiting"]:
        x += [start, start, stop, stop, None]
        y += [0, 1, 1, 0, None]
    traces.append({"type": "scatter", "mode": "lines", "name": "array waiting", "x": x,
                   "y": y, "yaxis": "y2", "fill": "toself", "fillcolor": "rgba(250,82,82,0.25)",
                   "line": {"color": WAITING_COLOUR, "width": 0.5}, "hoverinfo": "skip"})
    if traffic["model"] == "scalesim":
        note = "<br>SCALE-Sim's words (an element each)" + \
            ("" if traffic["complete"] else "; the first drains kept, then the total")
    else:
        note = "" if traffic["complete"] else " (through 400 folds)"
    return {"data": traces, "layout": {
        "template": plotly_white(), "font": {"size": 14}, "uirevision": "dram",
        "title": {"text": f"DRAM traffic over time{note}", "x": 0.01, "font": {"size": 15}},
        "margin": {"l": 80, "r": 20, "t": 70, "b": 50},
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": {"title": {"text": "clock cycle"}},
        "yaxis": {"title": {"text": UNITS[unit]}, "rangemode": "tozero"},
        "yaxis2": {"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True},
        "shapes": [clock_cursor(clock)]}}


def clock_cursor(clock: int) -> dict:
    return {"type": "line", "x0": clock, "x1": clock, "y0": 0, "y1": 1, "yref": "paper",
            "line": {"color": "#c92a2a", "width": 2}}


# ---- the layer under other dataflows and memories ------------------------------------------

def comparison_rows(comparison: dict) -> tuple[list[str], list[list[str]]]:
    """(column heads, rows) of the three dataflows side by side; the best of each row
    starred."""
    rows_of = comparison["dataflows"]
    best = comparison["best"]

    def row(label, figure, fmt):
        return [label] + [fmt(rows_of[d][figure]) + (" ★" if best.get(figure) == d else "")
                          for d in DATAFLOWS]

    rows = [row("cycles", "cycles", lambda v: f"{v:,}"),
            row("waiting", "stall_cycles", lambda v: f"{v:,}"),
            row("DRAM (elements)", "dram", lambda v: f"{v:,}"),
            row("energy", "energy_joules", lambda v: f"{v * 1e6:.3g} µJ"),
            ["memory-bound"] + ["yes" if rows_of[d]["memory_bound"] else "no"
                                for d in DATAFLOWS]]
    return ["each dataflow", *(d.upper() for d in DATAFLOWS)], rows


def sweep_figure(sweep: dict) -> dict:
    """Cycles of each dataflow (solid) and its compute alone (dotted) against every
    operand's SRAM size and against every interface's bandwidth; the gap is the waiting.
    Filled markers: memory-bound points."""
    traces = []
    for index, (key, xs, axis) in enumerate((("by_sram", sweep["sram_kb"], "x"),
                                             ("by_bandwidth", sweep["bandwidth"], "x2"))):
        yaxis = "y" if axis == "x" else "y2"
        for dataflow in DATAFLOWS:
            points = sweep[key][dataflow]
            colour = DATAFLOW_COLOURS[dataflow]
            bound = [stalls * 2 >= cycles + 1 for cycles, stalls in points]
            traces.append({
                "type": "scatter", "mode": "lines+markers", "x": xs,
                "y": [c for c, _ in points], "xaxis": axis, "yaxis": yaxis,
                "name": dataflow.upper(), "legendgroup": dataflow, "showlegend": index == 0,
                "line": {"color": colour, "width": 2.5},
                "marker": {"size": 9, "color": [colour if b else "white" for b in bound],
                           "line": {"color": colour, "width": 2}},
                "customdata": [s for _, s in points],
                "hovertemplate": f"{dataflow.upper()}: %{{y:,}} cycles, %{{customdata:,}} "
                                 "waiting<extra></extra>"})
            traces.append({
                "type": "scatter", "mode": "lines", "x": xs,
                "y": [c - s for c, s in points], "xaxis": axis, "yaxis": yaxis,
                "name": f"{dataflow.upper()} computing", "legendgroup": dataflow,
                "showlegend": False, "line": {"color": colour, "dash": "dot", "width": 1.5},
                "hoverinfo": "skip"})
    memory = sweep["memory"]
    marks = [(_shared(memory["sram_kb"]), "x"), (_shared(memory["bandwidth_words_per_cycle"]),
                                                  "x2")]
    shapes = [{"type": "line", "x0": v, "x1": v, "y0": 0, "y1": 1, "xref": axis,
               "yref": "paper", "line": {"color": "#868e96", "dash": "dash"}}
              for v, axis in marks if v is not None]
    def log_axis(values):
        ticks = values[::2] if len(values) > 5 else values
        return {"type": "log", "tickvals": ticks, "ticktext": [str(v) for v in ticks]}

    return {"data": traces, "layout": {
        "template": plotly_white(), "font": {"size": 14}, "shapes": shapes,
        "title": {"text": "every operand's SRAM, then bandwidth, changed:<br>cycles (solid), "
                          "computing alone (dotted), filled: memory-bound", "x": 0.01,
                  "font": {"size": 14}},
        "margin": {"l": 70, "r": 10, "t": 70, "b": 60},
        "legend": {"orientation": "h", "y": -0.22, "x": 0.5, "xanchor": "center"},
        "xaxis": {**log_axis(sweep["sram_kb"]), "domain": [0, 0.46],
                  "title": {"text": "SRAM kB"}},
        "xaxis2": {**log_axis(sweep["bandwidth"]), "domain": [0.54, 1], "anchor": "y2",
                   "title": {"text": "DRAM words/cycle"}},
        "yaxis": {"type": "log", "title": {"text": "cycles"}, "dtick": "D2",
                  "tickformat": "~s"},
        "yaxis2": {"type": "log", "anchor": "x2", "matches": "y", "dtick": "D2",
                   "tickformat": "~s"}}}


def _shared(values: dict):
    """The value all three operands share (the sweep's own kind of point), else None."""
    distinct = set(values.values())
    return distinct.pop() if len(distinct) == 1 else None
