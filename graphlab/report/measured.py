"""Measured on this machine: each pass's measured latency beside its predicted one, and the
slowest ops of the final graph measured and predicted, with the ratio and why a prediction
misses (`compiler_core.profiling`; only with `graphlab report --measured`)."""

from __future__ import annotations

from compiler_core.profiling.pipeline import SEED_LATENCY, SEED_TRAFFIC, MeasuredPipeline
from compiler_core.runtime_check import LEVELS

from ..units import format_bytes
from .markup import Markup, tag
from .story import Story

SLOWEST_SHOWN = 15


def measured_section(story: Story) -> list[Markup]:
    measured = story.measured
    target = measured.comparison.target
    when = (target.measured or {}).get("when", "")
    comparison = measured.comparison
    rho = comparison.spearman
    parts = [
        tag("p", f"The model as loaded and the graph after every pass that changed it, run in "
                 f"onnxruntime's profiler on {target.display_name} (measured {when}), each "
                 f"as written for onnxruntime (fused nodes as its own operators where it has "
                 f"them, as `graphlab compile --runtime onnxruntime` writes them); "
                 f"predictions priced on the same target: the roofline time plus the measured "
                 f"per-op overhead. Times in ms: a pass's graph by its best of "
                 f"{len(comparison.profile.wall_ms)} runs (hover for the median and spread), an "
                 f"op by its median."),
        tag("h4", "The seed claims, on this machine"),
        tag("ul", *(tag("li", line) for line in claim_lines(measured))),
        tag("h4", "Each pass, measured and predicted"), _passes_table(measured.passes),
        tag("h4", f"The final graph's slowest ops at {LEVELS[comparison.profile.level]}"),
        tag("p", f"Measured {comparison.profile.total_ms:.3f} ms per run, predicted "
                 f"{comparison.predicted_total_ms:.3f} ms"
                 + (f"; rank correlation of the per-op times {rho:.2f}" if rho is not None
                    else "") + ". Rows marked * are nodes onnxruntime fused itself, measured "
                 "and predicted as one group.", class_="muted"),
        _ops_table(comparison),
    ]
    return parts


def claim_lines(measured: MeasuredPipeline) -> list[str]:
    """Fusion's latency gain and attention fusion's traffic saving, measured, beside the
    seeds' numbers, with the hardware named (the report's list, the notebook's text)."""
    lines = [f"Hardware: {measured.target.display_name}."]
    for gain in measured.latency_gains():
        lines.append(f"Latency at {LEVELS[gain.level]}: {gain.before_ms:.3f} → "
                     f"{gain.after_ms:.3f} ms, {gain.ratio:.2f}× (the seeds: {SEED_LATENCY}).")
    traffic = measured.attention_traffic()
    if traffic is None:
        lines.append(f"No attention was fused here, so the traffic claim ({SEED_TRAFFIC}) is "
                     f"not tested by this model.")
    else:
        lines.append(f"Traffic of {traffic.pass_name} at {LEVELS[traffic.level]}, as "
                     f"onnxruntime's kernels read and wrote it: "
                     f"{format_bytes(traffic.before_bytes)} → "
                     f"{format_bytes(traffic.after_bytes)}, {traffic.saved:.0%} less (the "
                     f"seeds: {SEED_TRAFFIC}).")
    return lines


def _passes_table(passes) -> Markup:
    levels = list(passes[0].measured_ms)
    head = tag("thead", tag("tr", tag("th", "pass"), tag("th", "nodes"),
                            *(tag("th", f"measured (best), {LEVELS[level]}") for level in levels),
                            tag("th", "predicted"),
                            tag("th", f"bytes moved, {LEVELS[levels[-1]]}")))
    rows = []
    previous = None
    for entry in passes:
        def change(before: float | None, after: float) -> str:
            return f"{after:.3f}" if before is None else f"{before:.3f} → {after:.3f}"

        rows.append(tag("tr", tag("td", entry.pass_name), tag("td", entry.nodes, class_="num"),
                        *(tag("td", change(previous and previous.best_ms[level],
                                           entry.best_ms[level]), class_="num",
                              title=f"median {entry.measured_ms[level]:.3f}, max "
                                    f"{entry.spread_ms[level][1]:.3f}")
                          for level in levels),
                        tag("td", change(previous and previous.predicted_ms,
                                         entry.predicted_ms), class_="num"),
                        tag("td", format_bytes(entry.profiles[levels[-1]].bytes),
                            class_="num")))
        previous = entry
    return tag("table", head, tag("tbody", rows), class_="ops")


def _ops_table(comparison) -> Markup:
    ops = sorted(comparison.ops, key=lambda op: -op.measured_ms)[:SLOWEST_SHOWN]
    head = tag("thead", tag("tr", *(tag("th", h) for h in (
        "node", "op", "measured", "predicted", "ratio", "why it misses"))))
    rows = [tag("tr", tag("td", op.profiled.node),
                tag("td", ("* " if op.profiled.fused_by_onnxruntime else "")
                    + op.profiled.op_type,
                    title="; ".join(op.profiled.kernels)),
                tag("td", f"{op.measured_ms:.3f}", class_="num"),
                tag("td", f"{op.predicted_ms:.3f}", class_="num"),
                tag("td", "-" if op.ratio is None else f"{op.ratio:.2f}", class_="num"),
                tag("td", op.miss() or ""))
            for op in ops]
    return tag("table", head, tag("tbody", rows), class_="ops")
