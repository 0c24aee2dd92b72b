"""What the pipeline bought on the hardware: the roofline before and after it (with the
estimated speed-up on the target) and the memory plan (peak vs naive vs lower bound, and the
offset × time chart of the arena)."""

from __future__ import annotations

import math

from compiler_core.hardware import GraphCost, MemoryPlan

from ..units import format_bytes, format_seconds, format_si
from .charts import Box, Point, Series, memory_chart, roofline_chart
from .markup import Markup, tag
from .story import Story

SLOWEST_SHOWN = 12
LARGEST_SHOWN = 10
MAX_RADIUS = 16.0


def roofline_section(story: Story) -> list[Markup]:
    target, costs = story.target, story.costs
    before, after = costs.before, costs.after
    speedup = costs.speedup
    parts = [
        tag("p", f"Target: {target.display_name} — peak {format_si(target.peak(), 'OPS')}, "
                 f"bandwidth {format_si(target.bandwidth_bytes_per_s, 'B/s')}, ridge "
                 f"{target.ridge_point():.3g} ops/byte. An op left of the ridge waits for "
                 f"memory, right of it for arithmetic; each op's time is max(FLOPs / peak, "
                 f"bytes / bandwidth) and the model's estimate is the sum."),
        tag("p", tag("b", "Estimated speed-up on " + target.name + ": "
                     + ("n/a" if speedup is None else f"{speedup:.2f}×")),
            f" ({format_seconds(before.total_est_seconds)} before the pipeline, "
            f"{format_seconds(after.total_est_seconds)} after).", class_="headline"),
        _totals_table(before, after),
        roofline_chart(target.peak(), target.bandwidth_bytes_per_s,
                       _series(before, after), _rate_text, _rate_text),
        tag("p", "Each circle is an op on the roof, its area proportional to its share of the "
                 "estimated time; hover one for its name. Hollow grey: before the pipeline; "
                 "blue: after it.", class_="caption"),
        tag("h4", "Slowest ops after the pipeline"), _slowest_table(after),
    ]
    notes = [f"before: {n}" for n in before.notes] + [f"after: {n}" for n in after.notes]
    for cost, when in ((before, "before"), (after, "after")):
        if cost.unmodelled_ops:
            notes.append(f"{when}: not priced (counted as 0): " + ", ".join(cost.unmodelled_ops))
    if notes:
        parts.append(tag("ul", [tag("li", n) for n in notes], class_="notes"))
    parts.append(tag("p", "Sources for the target's figures: ", "; ".join(
        f"{s.title} ({s.publication or s.url})" for s in target.sources), ".", class_="muted"))
    return parts


def _totals_table(before: GraphCost, after: GraphCost) -> Markup:
    rows = [("nodes", len(before.ops), len(after.ops), str),
            ("FLOPs", before.total_flops, after.total_flops, lambda v: format_si(v, "FLOP")),
            ("bytes moved", before.total_bytes, after.total_bytes, format_bytes),
            ("estimated time", before.total_est_seconds, after.total_est_seconds,
             format_seconds)]
    return tag("table", tag("thead", tag("tr", tag("th", ""), tag("th", "before"),
                                         tag("th", "after"))),
               tag("tbody", [tag("tr", tag("th", name), tag("td", fmt(a), class_="num"),
                                 tag("td", fmt(b), class_="num"))
                             for name, a, b, fmt in rows]), class_="totals")


def _series(before: GraphCost, after: GraphCost) -> list[Series]:
    total = max(before.total_est_seconds, after.total_est_seconds) or 1.0

    def points(cost: GraphCost) -> list[Point]:
        return [Point(op.intensity, op.attainable_ops_per_s,
                      max(2.0, MAX_RADIUS * math.sqrt(op.est_seconds / total)),
                      f"{op.node} ({op.op_type}): {op.intensity:.3g} ops/B, {op.bound}-bound, "
                      f"{format_seconds(op.est_seconds)}")
                for op in cost.ops
                if op.bound != "none" and math.isfinite(op.intensity) and op.intensity > 0]

    return [Series("before", "before the pipeline", points(before)),
            Series("after", "after the pipeline", points(after))]


def _slowest_table(cost: GraphCost) -> Markup:
    ops = sorted(cost.ops, key=lambda op: -op.est_seconds)[:SLOWEST_SHOWN]
    head = tag("thead", tag("tr", *(tag("th", h) for h in (
        "node", "op", "FLOPs", "bytes", "ops/byte", "bound", "time"))))
    rows = [tag("tr", tag("td", op.node),
                tag("td", op.op_type + (" *" if op.assumed_dims else ""),
                    title="priced with a dim counted as 1: " + ", ".join(op.assumed_dims)
                    if op.assumed_dims else None),
                tag("td", format_si(op.flops, ""), class_="num"),
                tag("td", format_bytes(op.bytes), class_="num"),
                tag("td", "∞" if not math.isfinite(op.intensity) else f"{op.intensity:.3g}",
                    class_="num"),
                tag("td", op.bound), tag("td", format_seconds(op.est_seconds), class_="num"))
            for op in ops]
    return tag("table", head, tag("tbody", rows), class_="ops")


def memory_section(story: Story) -> list[Markup]:
    before, after = story.memory_before, story.memory_after
    parts = [
        tag("p", "Every intermediate tensor gets an offset in one arena for the steps it is "
                 "alive. Judge a plan by three numbers: the arena peak it needs, the naive "
                 "total (every tensor its own buffer) and the lower bound (the most bytes alive "
                 "at one step — no plan can do better)."),
        _plans_table(before, after),
        memory_chart([Box(b.first, b.last, b.offset, b.size,
                          f"{b.tensor}: {format_bytes(b.bytes)} at offset {b.offset:,}, "
                          f"steps {b.first}–{b.last}" + (f", in place of {b.reuses}"
                                                         if b.reuses else ""))
                      for b in after.buffers],
                     len(after.steps), after.live_bytes,
                     _marks(after),
                     format_bytes),
        tag("p", "The arena after the pipeline: one rectangle per tensor (its steps across, "
                 "its bytes up); the dark line is the bytes alive at each step.",
            class_="caption"),
    ]
    if after.buffers:
        largest = sorted(after.buffers, key=lambda b: (-b.size, b.first))[:LARGEST_SHOWN]
        parts += [tag("h4", "Largest tensors after the pipeline"), tag("table", tag(
            "thead", tag("tr", *(tag("th", h) for h in ("tensor", "size", "offset", "steps")))),
            tag("tbody", [tag("tr", tag("td", b.tensor),
                              tag("td", format_bytes(b.size), class_="num"),
                              tag("td", f"{b.offset:,}", class_="num"),
                              tag("td", f"{b.first}–{b.last}", class_="num"))
                          for b in largest]), class_="buffers")]
    parts.append(tag("ul", [tag("li", n) for n in after.notes], class_="notes"))
    return parts


def _marks(plan: MemoryPlan) -> list[tuple[str, int]]:
    if plan.peak_bytes == plan.lower_bound_bytes:
        return [("peak = lower bound", plan.peak_bytes)]
    return [("peak", plan.peak_bytes), ("lower bound", plan.lower_bound_bytes)]


def _plans_table(before: MemoryPlan, after: MemoryPlan) -> Markup:
    def ratio(plan: MemoryPlan) -> str:
        bound = plan.lower_bound_bytes
        return f"{plan.peak_bytes / bound:.3f}×" if bound else "—"

    rows = [("arena peak", format_bytes(before.peak_bytes), format_bytes(after.peak_bytes)),
            ("naive total", format_bytes(before.naive_bytes), format_bytes(after.naive_bytes)),
            ("lower bound", format_bytes(before.lower_bound_bytes),
             format_bytes(after.lower_bound_bytes)),
            ("peak ÷ lower bound", ratio(before), ratio(after)),
            ("tensors in the arena", str(len(before.buffers)), str(len(after.buffers)))]
    return tag("table", tag("thead", tag("tr", tag("th", ""), tag("th", "before"),
                                         tag("th", "after"))),
               tag("tbody", [tag("tr", tag("th", name), tag("td", a, class_="num"),
                                 tag("td", b, class_="num")) for name, a, b in rows]),
               class_="totals")


def _rate_text(value: float) -> str:
    return format_si(value, "")
