"""The traffic story as a chart: after each pass of the pipeline, bytes moved, estimated time,
FLOPs and arena peak, one small panel each on a shared pass axis, the selected pass marked.

Each value is drawn relative to the input model's (1 = as loaded), so four quantities in
different units share one scale and "fusion cut the bytes, not the FLOPs" reads at a glance;
the hover gives the absolute figure.  Clicking a pass selects it.
"""

from __future__ import annotations

from compiler_core.compilation.pass_traffic import PassFigures, PipelineTraffic

from ..units import format_bytes, format_seconds, format_si
from .chart_dicts import plotly_white, row_domains

# (attribute, title, how the hover writes it, colour)
QUANTITIES = (
    ("bytes", "bytes moved", format_bytes, "#a6611a"),
    ("est_seconds", "estimated time", format_seconds, "#1c7ed6"),
    ("flops", "FLOPs", lambda v: format_si(v, "FLOP"), "#018571"),
    ("arena_peak_bytes", "arena peak", format_bytes, "#7b8794"),
)
SELECTED = "#1c7ed6"


def traffic_figure(traffic: PipelineTraffic, selected: int) -> dict:
    """``selected`` is the index of the selected pass (its point is x = index + 1).  One panel
    per quantity side by side on a shared y axis, laid out as `make_subplots` would; the figure
    is the dict plotly.js reads (`chart_dicts`)."""
    steps = traffic.steps
    xs = [s.index + 1 for s in steps]
    traces, shapes, titles = [], [], []
    layout: dict = {
        "template": plotly_white(),
        "title": {"text": f"Across the pipeline on {traffic.target.name}<br>(× the input "
                          f"model; dotted: the selected pass)",   # one line overflows the column
                  "x": 0.01, "font": {"size": 15}},
        "height": 300, "margin": {"l": 60, "r": 20, "t": 80, "b": 50}, "font": {"size": 13},
        "clickmode": "event", "hoverlabel": {"font": {"size": 13}}}
    domains = row_domains(len(QUANTITIES))
    for column, ((attr, title, text, colour), domain) in enumerate(zip(QUANTITIES, domains)):
        suffix = str(column + 1) if column else ""
        x, y = f"x{suffix}", f"y{suffix}"
        first = getattr(steps[0], attr) or 1
        traces.append({
            "type": "scatter", "xaxis": x, "yaxis": y,
            "x": xs, "y": [getattr(s, attr) / first for s in steps], "mode": "lines+markers",
            "name": title, "line": {"color": colour, "width": 2, "shape": "hv"},
            "marker": {"size": [9 if s.changed else 4 for s in steps], "color": colour},
            "customdata": [[s.index, _label(s), text(getattr(s, attr))] for s in steps],
            "hovertemplate": "%{customdata[1]}<br>" + title + " %{customdata[2]} "
                             "(×%{y:.2f} of the input)<extra></extra>",
            "showlegend": False})
        shapes.append({"type": "line", "xref": x, "x0": selected + 1, "x1": selected + 1,
                       "yref": f"{y} domain", "y0": 0, "y1": 1,
                       "line": {"color": SELECTED, "width": 2, "dash": "dot"}})
        titles.append({"text": title, "font": {"size": 16}, "showarrow": False,
                       "xref": "paper", "x": sum(domain) / 2, "xanchor": "center",
                       "yref": "paper", "y": 1.0, "yanchor": "bottom"})
        layout[f"xaxis{suffix}"] = {"anchor": y, "domain": domain, "title": {"text": "pass"},
                                    "range": [-0.5, len(steps) - 0.5], "dtick": 5}
        layout[f"yaxis{suffix}"] = {"anchor": x, "domain": [0.0, 1.0], "rangemode": "tozero",
                                    "tickformat": ".1f",
                                    **({"matches": "y", "showticklabels": False} if column
                                       else {"title": {"text": "× the input model"}})}
    layout.update(shapes=shapes, annotations=titles)
    return {"data": traces, "layout": layout}


def _label(step: PassFigures) -> str:
    if step.index < 0:
        return "the input model"
    return f"after pass {step.index + 1} ({step.pass_name})" + (
        "" if step.changed else ": unchanged")


def picked_pass(click: dict | None) -> int | None:
    """The pass index of a clicked point (None: the input model or no point)."""
    points = (click or {}).get("points") or []
    data = points[0].get("customdata") if points else None
    if not data or data[0] < 0:
        return None
    return int(data[0])


def fusion_caption(traffic: PipelineTraffic) -> str:
    """'Fused nodes keep traffic on chip: Attention ×2 354 KiB instead of 3.97 MiB (91% less);
    ...' ('' when the final graph has none)."""
    parts = [f"{op.split('.')[-1]} ×{count} {format_bytes(moved)} instead of "
             f"{format_bytes(unfused)} ({1 - moved / unfused:.0%} less)"
             for op, (count, moved, unfused) in traffic.fused_by_op().items()]
    if not parts:
        return ""
    return ("After the pipeline, fused nodes keep their intermediates on chip — bytes moved "
            "fused instead of op by op: " + "; ".join(parts) + ".")
