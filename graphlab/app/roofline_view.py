"""The roofline chart as a plain function of cost records: the target's roof with its ridge,
and one point per op of a graph, coloured memory- or compute-bound.

The cost model runs every op at its roofline bound, so each op sits on the roof at its
arithmetic intensity; a point's area is its share of the estimated time, so the eye goes to
where the time is.  Ops without arithmetic (metadata, copies, gathers: intensity 0) and ops
the cost model cannot price have no place on a log axis; the caption counts them instead.

Comparing a pass: the ops it removed or changed are drawn hollow where they were, the ops it
made are outlined, and an arrow leads from each old op to the op that took its work over, so a
fusion visibly moves work to the right (more FLOPs per byte moved).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from compiler_core.hardware.cost import GraphCost, OpCost
from compiler_core.hardware.targets import Target
from compiler_core.ir import Graph, Node

from ..units import format_seconds, format_si
from .chart_dicts import plotly_white
from .intensity_bands import COMPUTE_COLOUR as COMPUTE_BOUND, MEMORY_COLOUR as MEMORY_BOUND

ROOF = "#323f4b"
SELECTED = "#1c7ed6"        # the panes' selection colour (styles.COLORS)
MAX_ARROWS = 200
FONT = {"size": 15}
ASSUMED_LABEL = "size unknown: a dim counted as 1"


@dataclass(frozen=True)
class OpPoint:
    """One op on the roofline: where it sits and what the hover says."""

    node_id: int
    name: str
    op_type: str
    intensity: float        # FLOP per byte moved
    flops_per_s: float      # what the roof allows at that intensity
    seconds: float
    bound: str
    dtype: str
    assumed: bool = False   # priced with a dim nobody could size (counted as 1): too small


@dataclass
class RooflinePoints:
    """The ops of one graph that have a place on the chart, and why the others do not."""

    points: list[OpPoint]
    left_out: dict[str, Counter] = field(default_factory=dict)   # reason -> op types


@dataclass
class PassChange:
    """What one pass did, in roofline terms."""

    old: list[OpPoint]               # ops of the graph before it that it removed or changed
    new_ids: set[int]                # ops it added or changed
    arrows: list[tuple[OpPoint, OpPoint]]   # old op -> the op that took its work over
    seconds_before: float
    seconds_after: float


def op_points(graph: Graph, cost: GraphCost) -> RooflinePoints:
    """`cost` must be `graph_cost(graph, ...)`: its ops are the graph's nodes, in order."""
    found = RooflinePoints([])
    for node, op in zip(graph.nodes, cost.ops):
        reason = _left_out_reason(op)
        if reason:
            found.left_out.setdefault(reason, Counter())[op.op_type] += 1
            continue
        found.points.append(OpPoint(node.id, op.node, op.op_type, op.intensity,
                                    op.attainable_ops_per_s, op.est_seconds, op.bound, op.dtype,
                                    bool(op.assumed_dims)))
    return found


def _left_out_reason(op: OpCost) -> str:
    if not op.modelled:
        return "cannot be priced"
    if op.flops == 0:
        return "do no arithmetic"
    if op.bytes == 0:
        return "move no bytes"
    return ""


def left_out_caption(found: RooflinePoints) -> str:
    """'Not drawn: 2 ops do no arithmetic (Flatten ×2).' ('' when every op is drawn)."""
    parts = []
    for reason, ops in found.left_out.items():
        count = sum(ops.values())
        listed = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.most_common(6))
        more = ", …" if len(ops) > 6 else ""
        parts.append(f"{count} op{'s' if count != 1 else ''} {reason} ({listed}{more})")
    return ("Not on the chart (no place on a log axis): " + "; ".join(parts) + ".") if parts \
        else ""


def assumed_caption(found: RooflinePoints) -> str:
    """What the crossed points mean ('' when every op is sized)."""
    marked = sum(1 for p in found.points if p.assumed)
    if not marked:
        return ""
    return (f"{marked} op{'s' if marked != 1 else ''} (crossed) {'are' if marked != 1 else 'is'} "
            f"priced with a dim nobody could size, counted as 1: their figures are too small.")


def pass_change(before: Graph, before_points: RooflinePoints, after: Graph,
                after_points: RooflinePoints, diff, seconds_before: float,
                seconds_after: float) -> PassChange:
    """The removed/changed ops of ``before`` and, by provenance, what took each one over."""
    old_ids = set(diff.removed) | set(diff.modified)
    new_ids = set(diff.added) | set(diff.modified)
    old = [p for p in before_points.points if p.node_id in old_ids]
    drawn_after = {p.node_id: p for p in after_points.points}
    arrows = []
    for point in old:
        lineage = _lineage(before.node_by_id(point.node_id))
        for new_id in sorted(new_ids & drawn_after.keys()):
            if new_id == point.node_id or lineage & set(_sources(after.node_by_id(new_id))):
                arrows.append((point, drawn_after[new_id]))
    return PassChange(old, new_ids, arrows[:MAX_ARROWS], seconds_before, seconds_after)


def _sources(node: Node) -> tuple[int, ...]:
    return node.provenance.sources if node.provenance is not None else ()


def _lineage(node: Node) -> set[int]:
    """The node and the original nodes it was made from (provenance names originals)."""
    return {node.id, *_sources(node)}


def roofline_figure(target: Target, found: RooflinePoints, title: str,
                    selected: int | None = None, change: PassChange | None = None,
                    subtitle: str = "") -> dict:
    """The chart as the dict plotly.js reads (`chart_dicts`)."""
    points = found.points
    everything = points + (change.old if change else [])
    dtypes = sorted({target.peak_dtype(p.dtype) for p in everything}) or [target.default_dtype]
    ridges = [target.ridge_point(d) for d in dtypes]
    x_low, x_high = _decades([p.intensity for p in everything] + ridges
                             + [10 * r for r in ridges])  # room for the compute roof
    traces: list[dict] = []
    shapes: list[dict] = []
    annotations: list[dict] = []
    for dtype in dtypes:
        _add_roof(traces, shapes, annotations, target, dtype, x_low, x_high, len(dtypes) > 1)
    faded = change is not None
    longest = max((p.seconds for p in everything), default=0.0) or 1.0
    for bound, colour, label in (("memory", MEMORY_BOUND, "memory-bound op"),
                                 ("compute", COMPUTE_BOUND, "compute-bound op")):
        chosen = [p for p in points if p.bound == bound]
        if change is not None:
            traces.append(_point_trace([p for p in chosen if p.node_id not in change.new_ids],
                                       f"{label}, unchanged", colour, longest, opacity=0.3))
            chosen = [p for p in chosen if p.node_id in change.new_ids]
            label = f"{label}, made by the pass"
        traces.append(_point_trace(chosen, label, colour, longest,
                                   outline=ROOF if faded else "#ffffff"))
    if change is not None:
        traces.append(_point_trace(change.old, "removed or changed by the pass (before)",
                                   "#7b8794", longest, symbol="circle-open"))
        for old, new in change.arrows:   # on log axes, annotations are placed in decades
            annotations.append({
                "x": math.log10(new.intensity), "y": math.log10(new.flops_per_s),
                "ax": math.log10(old.intensity), "ay": math.log10(old.flops_per_s),
                "xref": "x", "yref": "y", "axref": "x", "ayref": "y", "showarrow": True,
                "arrowhead": 3, "arrowsize": 1.4, "arrowwidth": 1.6, "arrowcolor": ROOF,
                "opacity": 0.8, "text": ""})
    assumed = [p for p in points if p.assumed]
    if assumed:
        traces.append({
            "type": "scatter", "x": [p.intensity for p in assumed],
            "y": [p.flops_per_s for p in assumed], "mode": "markers", "name": ASSUMED_LABEL,
            "hoverinfo": "skip",
            "marker": {"symbol": "x-thin-open", "size": 14, "color": ROOF,
                       "line": {"width": 2, "color": ROOF}}})
    chosen = [p for p in everything if p.node_id == selected]
    if chosen:
        traces.append({
            "type": "scatter", "x": [chosen[0].intensity], "y": [chosen[0].flops_per_s],
            "mode": "markers", "name": "selected node", "hoverinfo": "skip",
            "marker": {"symbol": "circle-open", "size": 34, "color": SELECTED,
                       "line": {"width": 4}}})
    peak = max(target.peak(d) for d in dtypes)
    y_low = min([target.bandwidth_bytes_per_s * x_low] + [p.flops_per_s for p in everything])
    layout = {
        "template": plotly_white(),
        "title": {"text": title, "x": 0.01, "font": {"size": 16},
                  "subtitle": {"text": subtitle, "font": {"size": 14}}},
        "font": FONT,
        "margin": {"l": 90, "r": 20, "b": 80,
                   "t": 50 + 20 * title.count("<br>")
                   # a subtitle's lines, clear of the bound labels over the plot
                   + (38 * (subtitle.count("<br>") + 1) if subtitle else 0)},
        "legend": {"yanchor": "bottom", "y": 0.02, "xanchor": "right", "x": 0.99,
                   "bgcolor": "rgba(255,255,255,0.85)", "bordercolor": "#d9e2ec",
                   "borderwidth": 1, "font": {"size": 13}},
        "clickmode": "event", "hoverlabel": {"font": {"size": 14}},
        "xaxis": {"type": "log",   # two lines: one is wider than the side column at 1280 px
                  "title": {"text": "arithmetic intensity<br>(FLOP per byte moved)"},
                  "range": [math.log10(x_low), math.log10(x_high)], "exponentformat": "power",
                  "showgrid": True, "gridcolor": "#e4e7eb"},
        "yaxis": {"type": "log", "title": {"text": "attainable performance (FLOP/s)",
                                           "standoff": 8},
                  "tickformat": "~s", "dtick": "D2",   # 1, 2 and 5 of each decade: legible
                  "range": [math.log10(y_low) - 0.2, math.log10(peak) + 0.45],
                  "showgrid": True, "gridcolor": "#e4e7eb"},
        "shapes": shapes, "annotations": annotations}
    return {"data": traces, "layout": layout}


def _decades(values: list[float]) -> tuple[float, float]:
    """The x range: whole decades around every value, with room on both sides."""
    low = min(values) / 2
    high = max(values) * 1.5
    return 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))


def _add_roof(traces: list[dict], shapes: list[dict], annotations: list[dict], target: Target,
              dtype: str, x_low: float, x_high: float, name_dtype: bool) -> None:
    """The roof of one dtype, its ridge and their labels, added to the figure's lists."""
    peak, bandwidth = target.peak(dtype), target.bandwidth_bytes_per_s
    ridge = peak / bandwidth
    suffix = f" ({dtype})" if name_dtype else ""
    traces.append({
        "type": "scatter", "x": [x_low, ridge, x_high], "y": [bandwidth * x_low, peak, peak],
        "mode": "lines", "name": f"roof{suffix}: min(peak, bandwidth × intensity)",
        "hoverinfo": "skip", "line": {"color": ROOF, "width": 3}})
    traces.append({
        "type": "scatter", "x": [ridge], "y": [peak], "mode": "markers",
        "name": f"ridge point{suffix}", "marker": {"symbol": "diamond", "size": 14, "color": ROOF},
        "hovertemplate": f"ridge: {ridge:.3g} FLOP/byte<br>left of it ops wait for memory, "
                         f"right of it for compute<extra></extra>"})
    shapes.append({"type": "line", "x0": ridge, "x1": ridge, "yref": "paper",
                   "y0": 0, "y1": 1, "line": {"color": ROOF, "width": 1.5, "dash": "dot"}})
    at_ridge = math.log10(ridge)
    # the ridge's label right of it, or left where the right half of a narrow chart cannot
    # hold it (the side panel is some 350 px of plot at 1280 px)
    span = math.log10(x_high) - math.log10(x_low)
    right = (math.log10(x_high) - at_ridge) / span >= 0.5
    peak_left = (at_ridge - math.log10(x_low)) / span >= 0.4
    annotations += [
        {"x": at_ridge, "y": math.log10(peak), "ax": 12 if right else -12, "ay": 44,
         "showarrow": True, "arrowhead": 0, "arrowwidth": 1.5, "arrowcolor": ROOF,
         "text": f"<b>ridge {ridge:.3g} FLOP/byte</b>{suffix}", "font": {"size": 15},
         "bgcolor": "rgba(255,255,255,0.9)", "xanchor": "left" if right else "right",
         "yanchor": "top"},
        {"x": at_ridge, "y": 1, "yref": "paper", "yanchor": "top", "xanchor": "right",
         "xshift": -8, "showarrow": False, "text": "◀ memory-bound",
         "font": {"color": MEMORY_BOUND, "size": 15}},
        {"x": at_ridge, "y": 1, "yref": "paper", "yanchor": "top", "xanchor": "left",
         "xshift": 8, "showarrow": False, "text": "compute-bound ▶",
         "font": {"color": COMPUTE_BOUND, "size": 15}}]
    middle = math.sqrt(x_low * ridge)
    annotations += [
        {"x": math.log10(middle), "y": math.log10(bandwidth * middle), "showarrow": False,
         "xanchor": "left", "yanchor": "top", "xshift": 12,
         "text": f"bandwidth {format_si(bandwidth, 'B/s')}", "font": {"size": 14, "color": ROOF}},
        # on the roof's level left of the ridge, where no op can be (they sit under the
        # slanted roof), when that side has room; else at the right end, above the ops at peak
        {"x": at_ridge if peak_left else math.log10(x_high), "y": math.log10(peak),
         "xanchor": "right", "yanchor": "bottom", "xshift": -16 if peak_left else 0,
         "yshift": 2 if peak_left else 20, "showarrow": False,
         "text": f"peak {format_si(peak, 'FLOP/s')}", "font": {"size": 14, "color": ROOF}}]


def _point_trace(points: list[OpPoint], name: str, colour: str, longest: float,
                 opacity: float = 0.9, outline: str = "#ffffff",
                 symbol: str = "circle") -> dict:
    sizes = [10 + 26 * math.sqrt(p.seconds / longest) for p in points]
    return {
        "type": "scatter", "x": [p.intensity for p in points],
        "y": [p.flops_per_s for p in points], "mode": "markers", "name": name,
        "opacity": opacity,
        "marker": {"color": colour, "size": sizes, "symbol": symbol,
                   "line": {"color": colour if symbol.endswith("open") else outline,
                            "width": 2}},
        "customdata": [[p.node_id, p.name, p.op_type, format_seconds(p.seconds), p.bound]
                       for p in points],
        "hovertemplate": "<b>%{customdata[1]}</b> (%{customdata[2]})<br>"
                         "intensity %{x:.3g} FLOP/byte<br>attainable %{y:.3s}FLOP/s, "
                         "%{customdata[4]}-bound<br>estimated time %{customdata[3]}"
                         "<extra></extra>"}
