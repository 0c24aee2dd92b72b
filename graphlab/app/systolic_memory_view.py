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
WAITING_COLOUR = "#fa5252"
DATAFLOW_COLOURS = {"os": "#1971c2", "ws": "#9c36b5", "is": "#e8590c"}
HALF_ROLES = {"arriving": "next fold's tile arriving", "draining": "last fold's tile draining"}


def memory_title(record: dict) -> str:
    """Where the clock is and whether the array waits, in words a student reads aloud."""
    clock = f"clock {record['clock']:,}"
    waited = f"{record['stalled_before']:,} of {record['stall_cycles']:,} stall cycles so far"
    if record["model"] == "scalesim":
        if record["waiting"]:
            state = (f"<b>the array waits {record['stall']:,} cycles for the "
                     f"{record['cause']}</b>")
        else:
            state = "the array computes"
        return f"{clock} (compute row {record['row']:,}): {state}<br>{waited}"
    if record["waiting"]:
        state = (f"<b>the array waits for memory: {record['stall_left']:,} of "
                 f"{record['stall']:,} cycles left</b>")
    else:
        state = "the array computes"
    buffering = "" if record["double_buffered"] else \
        " · a tile does not fit half its SRAM: no prefetch"
    return f"{clock}: {state}<br>{waited}{buffering}"


def sram_figure(record: dict) -> dict:
    """Each operand's two SRAM halves (overlap) or its refills and drains (SCALE-Sim), as
    bars filled to what has arrived."""
    if record["model"] == "scalesim":
        return _events_figure(record)
    labels, done, left, texts, colours = [], [], [], [], []
    for operand in OPERANDS:
        sram = record["sram"][operand]
        half = sram["half_bytes"]
        in_use, other = sram["in_use"], sram["other"]
        use_role = "tile being written" if operand == "ofmap" else "tile in use"
        for name, full, filled in ((f"{operand} half 1: {use_role}", in_use["bytes"],
                                    in_use["ready"]),
                                   (f"{operand} half 2: {HALF_ROLES[other['role']]}",
                                    other["bytes"], other["bytes"] - other["done"]
                                    if other["role"] == "draining" else other["done"])):
            labels.append(name)
            done.append(100 * filled / half)
            left.append(100 * (full - filled) / half)
            over = " — more than the half holds" if full > half else ""
            texts.append(f"{format_bytes(filled)} of {format_bytes(full)} "
                         f"(half: {format_bytes(half)}){over}")
            colours.append(OPERAND_COLOURS[operand])
    traces = [
        {"type": "bar", "orientation": "h", "y": labels, "x": done, "name": "in SRAM",
         "marker": {"color": colours}, "text": texts, "textposition": "outside",
         "cliponaxis": False, "hovertemplate": "%{y}: %{text}<extra></extra>"},
        {"type": "bar", "orientation": "h", "y": labels, "x": left, "name": "still to move",
         "marker": {"color": colours, "opacity": 0.25}, "hoverinfo": "skip"}]
    top = max([100.0] + [d + l for d, l in zip(done, left)])
    return _bar_layout(traces, memory_title(record), "share of the SRAM half (%)",
                       [0, top * 1.6], labels)


def _events_figure(record: dict) -> dict:
    labels, done, left, texts, colours = [], [], [], [], []
    for operand, counts, what in (("ifmap", record["refills"]["ifmap"], "refills arrived"),
                                  ("filter", record["refills"]["filter"], "refills arrived"),
                                  ("ofmap", record["drains"], "drains done")):
        total = counts["total"] or 1
        labels.append(f"{operand}: {what}")
        arrived = counts.get("arrived", counts.get("done"))
        done.append(100 * arrived / total)
        left.append(100 * (total - arrived) / total)
        texts.append(f"{arrived:,} of {counts['total']:,}")
        colours.append(OPERAND_COLOURS[operand])
    traces = [
        {"type": "bar", "orientation": "h", "y": labels, "x": done, "name": "done",
         "marker": {"color": colours}, "text": texts, "textposition": "outside",
         "cliponaxis": False, "hovertemplate": "%{y}: %{text}<extra></extra>"},
        {"type": "bar", "orientation": "h", "y": labels, "x": left, "name": "to come",
         "marker": {"color": colours, "opacity": 0.25}, "hoverinfo": "skip"}]
    title = memory_title(record)
    if not record["complete"]:
        title += " · events kept for the first part of the layer only"
    return _bar_layout(traces, title, "share of the layer's refills and drains (%)",
                       [0, 160], labels)


def _bar_layout(traces: list, title: str, axis: str, x_range: list, labels: list) -> dict:
    return {"data": traces, "layout": {
        "barmode": "stack", "template": plotly_white(), "font": {"size": 14},
        "title": {"text": title, "x": 0.01, "font": {"size": 15}}, "showlegend": False,
        "margin": {"l": 290, "r": 20, "t": 70, "b": 50}, "uirevision": "sram",
        "xaxis": {"title": {"text": axis}, "range": x_range, "fixedrange": True},
        "yaxis": {"autorange": "reversed", "type": "category", "categoryarray": labels,
                  "fixedrange": True}}}


def dram_figure(traffic: dict, clock: int) -> dict:
    """Bytes each operand has moved to or from DRAM by each cycle; red bands where the array
    waits; the line is the step shown."""
    traces = [{"type": "scatter", "mode": "lines", "name": f"{operand} "
               + ("written" if operand == "ofmap" else "read"),
               "x": traffic["clock"][operand], "y": traffic["bytes"][operand],
               "line": {"color": OPERAND_COLOURS[operand], "width": 2.5},
               "hovertemplate": f"{operand}: %{{y:,}} bytes by cycle %{{x:,}}<extra></extra>"}
              for operand in OPERANDS]
    x, y = [], []
    for start, stop in traffic["waiting"]:
        x += [start, start, stop, stop, None]
        y += [0, 1, 1, 0, None]
    traces.append({"type": "scatter", "mode": "lines", "name": "array waiting", "x": x,
                   "y": y, "yaxis": "y2", "fill": "toself", "fillcolor": "rgba(250,82,82,0.25)",
                   "line": {"color": WAITING_COLOUR, "width": 0.5}, "hoverinfo": "skip"})
    note = "" if traffic["complete"] else " (sampled folds)"
    return {"data": traces, "layout": {
        "template": plotly_white(), "font": {"size": 14}, "uirevision": "dram",
        "title": {"text": f"DRAM traffic over time{note}", "x": 0.01, "font": {"size": 15}},
        "margin": {"l": 80, "r": 20, "t": 60, "b": 50},
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": {"title": {"text": "clock cycle"}},
        "yaxis": {"title": {"text": "bytes moved"}, "rangemode": "tozero"},
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
            row("cycles waiting for memory", "stall_cycles", lambda v: f"{v:,}"),
            row("DRAM traffic (elements)", "dram", lambda v: f"{v:,}"),
            row("energy", "energy_joules", lambda v: f"{v * 1e6:.3g} µJ"),
            ["memory-bound (waits ≥ half its cycles)"]
            + ["yes" if rows_of[d]["memory_bound"] else "no" for d in DATAFLOWS]]
    return ["this GEMM, each dataflow", *(d.upper() for d in DATAFLOWS)], rows


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
    log_axis = {"type": "log", "dtick": 0.30103, "tickformat": "d"}
    return {"data": traces, "layout": {
        "template": plotly_white(), "font": {"size": 14}, "shapes": shapes,
        "title": {"text": "cycles (solid) and computing alone (dotted); filled: "
                          "memory-bound", "x": 0.01, "font": {"size": 15}},
        "margin": {"l": 80, "r": 20, "t": 60, "b": 60}, "legend": {"orientation": "h",
                                                                   "y": 1.12, "x": 0.6},
        "xaxis": {**log_axis, "domain": [0, 0.46],
                  "title": {"text": "SRAM per operand (kB)"}},
        "xaxis2": {**log_axis, "domain": [0.54, 1], "anchor": "y2",
                   "title": {"text": "DRAM words per cycle per operand"}},
        "yaxis": {"type": "log", "title": {"text": "cycles"}},
        "yaxis2": {"type": "log", "anchor": "x2"}}}


def _shared(values: dict):
    """The value all three operands share (the sweep's own kind of point), else None."""
    distinct = set(values.values())
    return distinct.pop() if len(distinct) == 1 else None
