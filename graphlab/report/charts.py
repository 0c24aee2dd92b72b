"""Inline SVG charts: they need no script and no network, print well, and keep a report of a
big model to a few hundred kilobytes.  Hovering a mark shows its <title>."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .markup import Markup, tag

WIDTH, HEIGHT = 720, 380
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 14, 46   # plot margins


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    radius: float
    title: str


@dataclass(frozen=True)
class Series:
    css_class: str
    label: str
    points: list[Point]


@dataclass(frozen=True)
class Box:
    """A buffer in the offset×time chart: steps [first, last], bytes [offset, offset + size)."""

    first: int
    last: int
    offset: int
    size: int
    title: str


class _Scale:
    """Maps data values to pixels, linearly or on a log10 scale."""

    def __init__(self, lo: float, hi: float, start: float, end: float, log: bool):
        self.log = log
        self.lo, self.hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        span = (self.hi - self.lo) or 1.0
        return self.start + (v - self.lo) / span * (self.end - self.start)

    def ticks(self, count: int = 6) -> list[float]:
        if self.log:
            return [10.0 ** e for e in range(math.ceil(self.lo), math.floor(self.hi) + 1)]
        step = _nice_step((self.hi - self.lo) / count)
        return [i * step for i in range(math.ceil(self.lo / step), int(self.hi // step) + 1)]


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _frame(x: _Scale, y: _Scale, x_label: str, y_label: str, x_text, y_text) -> list[Markup]:
    """Axes, grid lines, tick labels and axis titles."""
    parts = [tag("rect", x=LEFT, y=TOP, width=WIDTH - LEFT - RIGHT, height=HEIGHT - TOP - BOTTOM,
                 class_="plot-area")]
    for value in x.ticks():
        px = x(value)
        parts += [tag("line", x1=f"{px:.1f}", x2=f"{px:.1f}", y1=TOP, y2=HEIGHT - BOTTOM,
                      class_="grid"),
                  tag("text", x_text(value), x=f"{px:.1f}", y=HEIGHT - BOTTOM + 16,
                      class_="tick", text_anchor="middle")]
    for value in y.ticks():
        py = y(value)
        parts += [tag("line", x1=LEFT, x2=WIDTH - RIGHT, y1=f"{py:.1f}", y2=f"{py:.1f}",
                      class_="grid"),
                  tag("text", y_text(value), x=LEFT - 6, y=f"{py + 4:.1f}", class_="tick",
                      text_anchor="end")]
    parts += [tag("text", x_label, x=(LEFT + WIDTH - RIGHT) / 2, y=HEIGHT - 8,
                  class_="axis-title", text_anchor="middle"),
              tag("text", y_label, x=14, y=(TOP + HEIGHT - BOTTOM) / 2, class_="axis-title",
                  text_anchor="middle", transform=f"rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})")]
    return parts


def _svg(parts, label: str) -> Markup:
    return tag("svg", parts, viewBox=f"0 0 {WIDTH} {HEIGHT}", class_="chart", role="img",
               aria_label=label)


def roofline_chart(peak: float, bandwidth: float, series: list[Series], x_text, y_text
                   ) -> Markup:
    """Log-log roofline: the roof min(peak, bandwidth × I) and each series' ops on it."""
    xs = [p.x for s in series for p in s.points] or [peak / bandwidth]
    ridge = peak / bandwidth
    x_lo = 10.0 ** math.floor(math.log10(min(min(xs), ridge) / 2))
    x_hi = 10.0 ** math.ceil(math.log10(max(max(xs), ridge) * 2))
    x = _Scale(x_lo, x_hi, LEFT, WIDTH - RIGHT, log=True)
    y = _Scale(10.0 ** math.floor(math.log10(bandwidth * x_lo)),
               10.0 ** math.ceil(math.log10(peak * 1.5)), HEIGHT - BOTTOM, TOP, log=True)
    roof = [(x_lo, bandwidth * x_lo), (ridge, peak), (x_hi, peak)]
    parts = _frame(x, y, "arithmetic intensity (ops per byte)", "attainable ops per second",
                   x_text, y_text)
    parts.append(tag("polyline", class_="roof",
                     points=" ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in roof)))
    parts.append(tag("text", f"ridge {ridge:.3g} ops/B", x=f"{x(ridge) + 6:.1f}",
                     y=f"{y(peak) - 6:.1f}", class_="annotation"))
    for s in series:
        parts.append(tag("g", [tag("circle", tag("title", p.title), cx=f"{x(p.x):.1f}",
                                   cy=f"{y(p.y):.1f}", r=f"{p.radius:.1f}")
                               for p in s.points], class_=s.css_class))
    return _svg(parts, "roofline")


def memory_chart(boxes: list[Box], steps: int, live: list[int], marks: list[tuple[str, int]],
                 y_text) -> Markup:
    """Offset × time: one rectangle per buffer, the bytes live at each step as a line, and
    horizontal marks (peak, lower bound)."""
    top = max([b.offset + b.size for b in boxes] + [v for _, v in marks] + live + [1])
    x = _Scale(0, max(steps, 1), LEFT, WIDTH - RIGHT, log=False)
    y = _Scale(0, top * 1.05, HEIGHT - BOTTOM, TOP, log=False)
    parts = _frame(x, y, "step (node in execution order)", "arena offset", _step_text, y_text)
    parts.append(tag("g", [
        tag("rect", tag("title", b.title), x=f"{x(b.first):.1f}", y=f"{y(b.offset + b.size):.1f}",
            width=f"{max(x(b.last + 1) - x(b.first), 0.5):.1f}",
            height=f"{max(y(b.offset) - y(b.offset + b.size), 0.5):.1f}",
            class_=f"buffer tone{i % 6}")
        for i, b in enumerate(boxes)]))
    if live:
        path = []
        for step, value in enumerate(live):
            path += [f"{x(step):.1f},{y(value):.1f}", f"{x(step + 1):.1f},{y(value):.1f}"]
        parts.append(tag("polyline", tag("title", "bytes live at each step"), class_="live",
                         points=" ".join(path)))
    for label, value in marks:
        parts += [tag("line", x1=LEFT, x2=WIDTH - RIGHT, y1=f"{y(value):.1f}",
                      y2=f"{y(value):.1f}", class_="mark"),
                  tag("text", label, x=WIDTH - RIGHT - 4, y=f"{y(value) - 4:.1f}",
                      class_="annotation", text_anchor="end")]
    return _svg(parts, "memory plan")


@dataclass(frozen=True)
class Line:
    css_class: str
    label: str
    values: list[float]     # one per x = 0, 1, 2, ...
    titles: list[str]       # hover text per value


def lines_chart(lines: list[Line], x_label: str, y_label: str, y_text) -> Markup:
    """Step lines over x = 0..n-1 (a value holds until the next), labelled at their right
    end; a mark per value with its title."""
    count = max((len(line.values) for line in lines), default=1)
    top = max([v for line in lines for v in line.values] + [1e-9])
    x = _Scale(0, max(count - 1, 1), LEFT, WIDTH - RIGHT - 110, log=False)
    y = _Scale(0, top * 1.08, HEIGHT - BOTTOM, TOP, log=False)
    parts = _frame(x, y, x_label, y_label, _step_text, y_text)
    for line in lines:
        path = []
        for i, value in enumerate(line.values):
            if i:
                path.append(f"{x(i):.1f},{y(line.values[i - 1]):.1f}")
            path.append(f"{x(i):.1f},{y(value):.1f}")
        marks = [tag("circle", tag("title", title), cx=f"{x(i):.1f}", cy=f"{y(v):.1f}", r=3)
                 for i, (v, title) in enumerate(zip(line.values, line.titles))]
        last = line.values[-1] if line.values else 0
        parts.append(tag("g", tag("polyline", points=" ".join(path)), marks,
                         tag("text", line.label, x=f"{x(count - 1) + 8:.1f}",
                             y=f"{y(last) + 4:.1f}", class_="annotation"),
                         class_=f"line {line.css_class}"))
    return _svg(parts, "figures after each pass")


def _step_text(value: float) -> str:
    return f"{value:.0f}"
