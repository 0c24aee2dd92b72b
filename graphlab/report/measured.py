"""Measured on this machine: each pass's measured latency beside its predicted one, and the
slowest ops of the final graph measured and predicted, with the ratio and why a prediction
misses (`compiler_core.profiling`; only with `graphlab report --measured`)."""

from __future__ import annotations

from compiler_core.runtime_check import LEVELS

from ..units import format_bytes
from .markup import Markup, tag
from .story import Story

SLOWEST_SHOWN = 15
# What the articles GraphLab's lessons start from claim, to be checked on this machine.
SEED_LATENCY = "fusion gives 2–5× lower latency"
SEED_TRAFFIC = "attention fusion saves 30–50 % of memory traffic"
ATTENTION_PASS = "fuse_attention"


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
        tag("h4", "The seed claims, on this machine"), _claims(measured, target),
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


def _claims(measured, target) -> Markup:
    """Fusion's latency gain and attention fusion's traffic saving, measured, beside the
    seeds' numbers, with the hardware named."""
    first, last = measured.passes[0], measured.passes[-1]
    items = []
    for level in first.measured_ms:
        before, after = first.best_ms[level], last.best_ms[level]
        items.append(tag("li", f"Latency at {LEVELS[level]}: {before:.3f} → {after:.3f} ms, "
                               f"{before / after:.2f}× (the seeds: {SEED_LATENCY})."))
    attention = next((i for i, p in enumerate(measured.passes)
                      if p.pass_name == ATTENTION_PASS), None)
    if attention:
        level = list(first.measured_ms)[-1]
        before = measured.passes[attention - 1].profiles[level].bytes
        after = measured.passes[attention].profiles[level].bytes
        items.append(tag("li", f"Traffic of {ATTENTION_PASS} at {LEVELS[level]}, as "
                               f"onnxruntime's kernels read and wrote it: "
                               f"{format_bytes(before)} → {format_bytes(after)}, "
                               f"{1 - after / before:.0%} less (the seeds: {SEED_TRAFFIC})."))
    else:
        items.append(tag("li", f"No attention was fused here, so the traffic claim ("
                               f"{SEED_TRAFFIC}) is not tested by this model."))
    return tag("ul", tag("li", f"Hardware: {target.display_name}."), *items)


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
