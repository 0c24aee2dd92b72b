"""Pass by pass: FLOPs, bytes moved, estimated time and arena peak after every pass (relative
to the input model, so four units share one chart), the passes that changed them, and what
the final graph's fused nodes keep on chip."""

from __future__ import annotations

from compiler_core.compilation.pass_traffic import PassFigures

from ..units import format_bytes, format_seconds, format_si
from .charts import Line, lines_chart
from .markup import Markup, tag
from .story import Story

# (css class, label, attribute, formatter)
QUANTITIES = (("bytes", "bytes moved", "bytes", format_bytes),
              ("time", "estimated time", "est_seconds", format_seconds),
              ("flops", "FLOPs", "flops", lambda v: format_si(v, "FLOP")),
              ("arena", "arena peak", "arena_peak_bytes", format_bytes))


def traffic_section(story: Story) -> list[Markup]:
    traffic = story.traffic
    steps = traffic.steps
    parts = [
        tag("p", "Fusion leaves the arithmetic alone and cuts the traffic: the intermediates a "
                 "fused node keeps on chip are neither written out nor read back. The chart "
                 f"follows four figures through the pipeline on {traffic.target.name}, each "
                 "relative to the model as loaded (1 = as loaded); x is the pass number, 0 the "
                 "input model. Hover a mark for the figure."),
        lines_chart([_line(steps, *q) for q in QUANTITIES], "pass",
                    "relative to the input model", lambda v: f"{v:.1f}×"),
        tag("h4", "The passes that changed the figures"), _table(steps),
    ]
    fused = traffic.fused_by_op()
    if fused:
        parts += [tag("h4", "What fused nodes keep on chip"),
                  tag("p", "Bytes each kind of fused node moves, against what its body would "
                           "move run op by op (every intermediate written out and read back).",
                      class_="muted"),
                  _fused_table(fused)]
    return parts


def _line(steps: list[PassFigures], css: str, label: str, attr: str, text) -> Line:
    first = getattr(steps[0], attr) or 1
    return Line(css, label, [getattr(s, attr) / first for s in steps],
                [f"{_where(s)}: {label} {text(getattr(s, attr))}" for s in steps])


def _where(step: PassFigures) -> str:
    return "input model" if step.index < 0 else f"after pass {step.index + 1} ({step.pass_name})"


def _table(steps: list[PassFigures]) -> Markup:
    head = tag("thead", tag("tr", *(tag("th", h) for h in (
        "#", "pass", "nodes", *(label for _, label, _, _ in QUANTITIES)))))
    rows = [tag("tr", tag("td", "" if s.index < 0 else s.index + 1, class_="num"),
                tag("td", s.pass_name), tag("td", s.nodes, class_="num"),
                *(tag("td", text(getattr(s, attr)), class_="num")
                  for _, _, attr, text in QUANTITIES))
            for i, s in enumerate(steps) if i == 0 or _differs(steps[i - 1], s)]
    return tag("table", head, tag("tbody", rows), class_="traffic")


def _differs(before: PassFigures, after: PassFigures) -> bool:
    return any(getattr(before, attr) != getattr(after, attr) for _, _, attr, _ in QUANTITIES)


def _fused_table(fused: dict[str, tuple[int, int, int]]) -> Markup:
    head = tag("thead", tag("tr", *(tag("th", h) for h in (
        "fused op", "nodes", "bytes moved fused", "op by op", "kept on chip"))))
    rows = [tag("tr", tag("td", op), tag("td", count, class_="num"),
                tag("td", format_bytes(moved), class_="num"),
                tag("td", format_bytes(unfused), class_="num"),
                tag("td", f"{1 - moved / unfused:.0%}", class_="num"))
            for op, (count, moved, unfused) in fused.items()]
    return tag("table", head, tag("tbody", rows), class_="fused")


