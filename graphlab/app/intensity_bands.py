"""The intensity overlay's bands: every op of a pane coloured by its arithmetic intensity
relative to the target's ridge point, so the memory-bound parts of a model show at a glance.

Bands are powers of 4 around the ridge (brown: memory-bound, teal: compute-bound); an op's
ridge is the one of the dtype it computes in.  Ops without arithmetic and ops the cost model
cannot price get bands of their own.  A collapsed group takes the band of its members
together: their FLOPs over the bytes they move (each op's own traffic), at the ridge of the
dtype that does most of its FLOPs.  The bands are element classes with fixed style rules
(`band_stylesheet`), so the overlay needs no per-node style rule.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable

from compiler_core.hardware.cost import GraphCost
from compiler_core.hardware.targets import Target
from compiler_core.ir import Graph

MEMORY_COLOUR = "#a6611a"     # the roofline's memory- and compute-bound points
COMPUTE_COLOUR = "#018571"


@dataclass(frozen=True)
class Band:
    css_class: str
    fill: str
    text_colour: str
    low: float          # intensity / ridge, inclusive
    high: float         # exclusive

    def describe(self, ridge: float) -> str:
        """'0.83–3.3' FLOP/byte at this ridge."""
        if self.low == 0:
            return f"< {_short(self.high * ridge)}"
        if math.isinf(self.high):
            return f"≥ {_short(self.low * ridge)}"
        return f"{_short(self.low * ridge)}–{_short(self.high * ridge)}"


BANDS = (
    Band("ai-0", "#8c510a", "#ffffff", 0, 1 / 16),
    Band("ai-1", "#d8b365", "#1f2933", 1 / 16, 1 / 4),
    Band("ai-2", "#f6e8c3", "#1f2933", 1 / 4, 1),
    Band("ai-3", "#c7eae5", "#1f2933", 1, 4),
    Band("ai-4", "#5ab4ac", "#1f2933", 4, 16),
    Band("ai-5", "#01665e", "#ffffff", 16, math.inf),
)
NO_ARITHMETIC = Band("ai-none", "#ffffff", "#616e7c", 0, 0)
NOT_PRICED = Band("ai-unpriced", "#bcccdc", "#52606d", 0, 0)


def node_bands(graph: Graph, cost: GraphCost, target: Target) -> dict[int, str]:
    """Node id -> band class; `cost` is `graph_cost(graph, target, ...)` (same node order)."""
    bands = {}
    for node, op in zip(graph.nodes, cost.ops):
        if not op.modelled:
            bands[node.id] = NOT_PRICED.css_class
        elif op.flops == 0:
            bands[node.id] = NO_ARITHMETIC.css_class
        else:
            ratio = op.intensity / target.ridge_point(op.dtype)
            bands[node.id] = next(b.css_class for b in BANDS if ratio < b.high)
    return bands


def group_bands(graph: Graph, cost: GraphCost, target: Target,
                groups_of: Callable[[int], Iterable[str]]) -> dict[str, str]:
    """Group id -> band class of its members together (``groups_of``: the groups a node
    sits in, at every level): total FLOPs over total bytes of the members with arithmetic."""
    flops: dict[str, int] = defaultdict(int)
    moved: dict[str, int] = defaultdict(int)
    by_dtype: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    unpriced: set[str] = set()
    seen: set[str] = set()
    for node, op in zip(graph.nodes, cost.ops):
        for group in groups_of(node.id):
            seen.add(group)
            if not op.modelled:
                unpriced.add(group)
            elif op.flops:
                flops[group] += op.flops
                moved[group] += op.bytes
                by_dtype[group][op.dtype] += op.flops
    bands = {}
    for group in seen:
        if flops[group]:
            dtype = max(by_dtype[group].items(), key=lambda item: item[1])[0]
            ratio = flops[group] / max(moved[group], 1) / target.ridge_point(dtype)
            bands[group] = next(b.css_class for b in BANDS if ratio < b.high)
        else:
            bands[group] = (NOT_PRICED if group in unpriced else NO_ARITHMETIC).css_class
    return bands


def paint(elements: list[dict], bands: dict[int, str],
          groups: dict[str, str] | None = None) -> None:
    """Add each drawn node's band class, and each collapsed group's (``groups``); an open
    group's frame and a fused body's frame stay as they are."""
    for element in elements:
        data = element["data"]
        kind = data.get("kind")
        if kind == "node":
            band = bands.get(data.get("node_id"))
        elif kind == "group" and groups and "collapsed" in element.get("classes", ""):
            band = groups.get(data.get("id"))
        else:
            band = None
        if band is not None:
            element["classes"] = f"{element.get('classes', '')} {band}".strip()


def band_stylesheet() -> list[dict]:
    """Fill and text colour per band; the diff marks keep their borders on top."""
    return [{"selector": f".{band.css_class}",
             "style": {"background-color": band.fill, "color": band.text_colour}}
            for band in (*BANDS, NO_ARITHMETIC, NOT_PRICED)]


def legend_entries(ridge: float) -> list[tuple[Band, str]]:
    """(band, label) for the legend under the panes, in FLOP/byte at this ridge."""
    entries = [(band, band.describe(ridge)) for band in BANDS]
    entries[2] = (BANDS[2], entries[2][1] + " memory-bound")
    entries[3] = (BANDS[3], entries[3][1] + " compute-bound")
    return entries + [(NO_ARITHMETIC, "no arithmetic"), (NOT_PRICED, "not priced")]


def _short(value: float) -> str:
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"
