"""The memory plan as a chart: time (execution steps) across, arena offset up, one rectangle
per intermediate tensor over the steps it is live — the picture planners are judged by.

The staircase is the bytes live at each step; its highest step is the lower bound no plan can
beat, so the gap between it and the arena's peak is what the packing wastes.  Hovering a
rectangle names the tensor and the node that made it; clicking selects that node.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler_core.hardware.memory import MemoryPlan
from compiler_core.ir import Graph

from ..units import format_bytes
from .chart_dicts import plotly_white

PALETTE = ("#74c0fc", "#ffd43b", "#b2f2bb", "#eebefa", "#ffc078", "#99e9f2", "#d0bfff",
           "#ffa8a8", "#c0eb75", "#e9ecef")
PEAK = "#c92a2a"
LIVE = "#1f2933"
SELECTED = "#1c7ed6"       # the panes' selection colour (styles.COLORS)
UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "bytes"))


@dataclass(frozen=True)
class PlanSummary:
    """The numbers a plan is judged by (one column of the before/after table)."""

    peak: int
    lower_bound: int
    naive: int
    tensors: int
    kept_in_fused_ops: int

    @classmethod
    def of(cls, plan: MemoryPlan) -> "PlanSummary":
        return cls(plan.peak_bytes, plan.lower_bound_bytes, plan.naive_bytes,
                   len(plan.buffers), sum(f["bytes"] for f in plan.fused_intermediates))


SUMMARY_ROWS = (
    ("peak", "arena peak (this plan)", True),
    ("lower_bound", "lower bound (most bytes live at one step)", True),
    ("naive", "naive (every tensor its own buffer)", True),
    ("tensors", "tensors in the arena", False),
    ("kept_in_fused_ops", "kept inside fused ops (never in the arena)", True),
)


def summary_rows(before: PlanSummary, after: PlanSummary) -> list[tuple[str, str, str, str]]:
    """(what, before, after, change) for the before/after table, formatted."""
    rows = []
    for key, label, is_bytes in SUMMARY_ROWS:
        old, new = getattr(before, key), getattr(after, key)
        show = format_bytes if is_bytes else str
        change = "same" if new == old else (
            f"{'+' if new > old else '−'}{show(abs(new - old))}"
            + (f" ({(new - old) / old:+.0%})" if old else ""))
        rows.append((label, show(old), show(new), change))
    return rows


def memory_figure(plan: MemoryPlan, graph: Graph, title: str, selected: int | None = None,
                  top_bytes: int | None = None) -> dict:
    """`plan` must be `plan_memory(graph, ...)`: its steps are the graph's nodes, in order.
    Plans to be compared share `top_bytes` (the larger peak), so their heights compare.
    The figure is the dict plotly.js reads (`chart_dicts`)."""
    top = max(top_bytes or plan.peak_bytes, 1)
    scale, unit = next((s, u) for s, u in UNITS if top >= 4 * s or s == 1)
    nodes = graph.nodes
    buffers = plan.buffers
    producers = [nodes[b.first] for b in buffers]
    tensors = {
        "type": "bar", "orientation": "h", "name": "tensor (live steps × reserved bytes)",
        "base": [b.first - 0.5 for b in buffers], "x": [b.last - b.first + 1 for b in buffers],
        "y": [(b.offset + b.size / 2) / scale for b in buffers],
        "width": [b.size / scale for b in buffers],
        "marker": {"color": [PALETTE[i % len(PALETTE)] for i in range(len(buffers))],
                   "line": {"color": [SELECTED if p.id == selected else "#52606d"
                                      for p in producers],
                            "width": [4 if p.id == selected else 1 for p in producers]}},
        "customdata": [[p.id, b.tensor, p.name, format_bytes(b.bytes), format_bytes(b.offset),
                        f"{b.first}–{b.last}", _reuse_note(b.reuses)]
                       for b, p in zip(buffers, producers)],
        "hovertemplate": "<b>%{customdata[1]}</b><br>made by %{customdata[2]}<br>"
                         "%{customdata[3]} at offset %{customdata[4]}<br>"
                         "live over steps %{customdata[5]}%{customdata[6]}<extra></extra>"}
    steps_x, live_y = _staircase(plan.live_bytes, scale)
    live = {"type": "scatter", "x": steps_x, "y": live_y, "mode": "lines",
            "name": "bytes live at each step (its top = lower bound)",
            "line": {"color": LIVE, "width": 2}, "hoverinfo": "skip"}
    peak = plan.peak_bytes / scale
    layout = {
        "template": plotly_white(), "title": {"text": title, "x": 0.01, "font": {"size": 17}},
        "font": {"size": 15}, "bargap": 0, "showlegend": True, "clickmode": "event",
        "margin": {"l": 80, "r": 20, "t": 50, "b": 110}, "hoverlabel": {"font": {"size": 14}},
        # Under the axis title, at the foot of the chart whatever its height: the arena's
        # peak is at the top of the plot.
        "legend": {"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0.01,
                   "xanchor": "left", "x": 0, "font": {"size": 13}},
        "xaxis": {"title": {"text": "execution step (one node per step)"},
                  "range": [-0.7, max(len(nodes), 1) - 0.3], "showgrid": False,
                  "zeroline": False},
        "yaxis": {"title": {"text": f"arena offset ({unit})"}, "rangemode": "tozero",
                  "range": [0, top / scale * 1.15], "showgrid": True, "gridcolor": "#e4e7eb"},
        # the arena's peak: a dashed line across the plot, named at its top left
        "shapes": [{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y",
                    "y0": peak, "y1": peak, "line": {"color": PEAK, "width": 2, "dash": "dash"}}],
        "annotations": [{"text": f"arena peak {format_bytes(plan.peak_bytes)}",
                         "font": {"color": PEAK, "size": 15}, "showarrow": False,
                         "xref": "x domain", "x": 0, "xanchor": "left", "yref": "y", "y": peak,
                         "yanchor": "bottom"}]}
    return {"data": [tensors, live], "layout": layout}


def _reuse_note(reuses: str | None) -> str:
    return f"<br>in place: takes over {reuses}'s buffer" if reuses else ""


def _staircase(live: list[int], scale: float) -> tuple[list[float], list[float]]:
    """Step k's live bytes drawn flat over [k - 0.5, k + 0.5]."""
    xs, ys = [], []
    for step, value in enumerate(live):
        xs += [step - 0.5, step + 0.5]
        ys += [value / scale, value / scale]
    return xs, ys
